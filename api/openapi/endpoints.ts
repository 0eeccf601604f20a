/**
 * The OpenAPI paths of the route rows (api/rows/endpoint.ts), generated: each row's method,
 * path, summary, permission, parameters, body, answer and problems become one operation, so the
 * document cannot drift from what the routes check. Only shared components and examples are
 * written by hand (components.ts, problem-examples.ts).
 */
import type { TObject, TSchema } from 'typebox';
import type { Answer, Endpoint, MediaDoc, ProblemText } from '../rows/endpoint.ts';
import { oauthErrorResponse, plainSchema, problemResponse, type Schema } from './components.ts';
import { LEGACY_COMMON } from '../routes/shared/operations.ts';
import { BatchOf } from '../services/crypto/bodies.ts';
import type { ProtocolRow } from '../rows/protocol.ts';

/** The part of the route table the document reads: where each mount's rows are served. */
export interface RowArea {
  prefix: string;
  mounts: readonly {
    path: string;
    endpoints?: readonly Endpoint[];
    protocol?: readonly ProtocolRow[];
  }[];
}

/** The meaning of a problem status every row may answer, unless the row words it itself. */
const PROBLEM_TEXT: Readonly<Record<number, string>> = {
  400: 'invalid input (validation-failed naming the field, malformed-json)',
  401: 'missing, invalid or expired bearer token, or the wrong audience',
  403: 'the role lacks the permission, or the path names another tenant',
  404: 'no such record in this tenant',
  406: 'not-acceptable: Accept (or X-Response-Content-Type) admits none of the result types',
  409: 'conflict with the current state',
  413: 'body too large',
  415: 'wrong media type (application/json expected)',
  422: 'refused by the effective policy or the key usage',
  429: "the client's budget for this endpoint is spent (Retry-After)",
};

/** The selection header of a row that negotiates its answer's media type (api/http/streaming.ts). */
const selectHeader = (types: readonly string[]): Schema => ({
  name: 'X-Response-Content-Type',
  in: 'header',
  required: false,
  description:
    "Selects the response content type among the endpoint's response types. The default, application/problem+json, constrains nothing (the input decides the result type; errors are problems). Another value asserts the result type: when the input converts to another type the answer is 406 before any output; application/json labels a JWS object as JSON. Accept is honoured the same way: an Accept admitting none of the endpoint's types nor application/problem+json is 406 before the body is read.",
  schema: { enum: ['application/problem+json', ...types], default: 'application/problem+json' },
});

/** Express path → OpenAPI path: `/:id` → `/{id}`, a wildcard `/*name` → `/{name}`. */
const openApiPath = (path: string) => path.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');

/** The row's full path: the area's prefix, the mount and the row's own path ('/' is the mount). */
const fullPath = (prefix: string, mount: string, path: string) =>
  openApiPath(path === '/' ? `${prefix}${mount}` || '/' : `${prefix}${mount}${path}`);

function parameters(where: 'path' | 'query', schema: TObject | undefined): Schema[] {
  if (!schema) return [];
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(schema.properties as Record<string, TSchema>).map(([name, s]) => {
    const { description, examples, ...rest } = plainSchema(s) as Schema & { examples?: unknown[] };
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      schema: rest,
      ...(description === undefined ? {} : { description }),
      ...(examples?.[0] === undefined ? {} : { example: examples[0] }),
    };
  });
}

/** An OAuth row's refused input: its reader's and its schema's refusals are all 400 invalid_request. */
const OAUTH_INPUT: ProblemText = {
  text: 'a field missing or malformed, naming it, or a body that is not the documented media',
  errors: ['invalid_request'],
};

/** The problem statuses a row may answer: its own, and those its shape implies. */
function problemStatuses(row: Endpoint): Record<number, ProblemText> {
  // A legacy role missing is 401, never 403.
  const legacy = 'legacyRole' in row.access;
  const implied: number[] = 'open' in row.access ? [] : legacy ? [401] : [401, 403];
  if (row.body || row.query) implied.push(400);
  // An OAuth row refuses a body too large or of another media with 400 invalid_request.
  if (row.body && row.errors !== 'oauth') implied.push(413, 415);
  if (row.budget) implied.push(429);
  if (row.negotiate) implied.push(406);
  const out: Record<number, ProblemText> = {};
  for (const status of implied)
    out[status] = row.errors === 'oauth' && status === 400 ? OAUTH_INPUT : PROBLEM_TEXT[status];
  if (legacy) out[401] = LEGACY_COMMON[401];
  return { ...out, ...row.problems };
}

/**
 * A success answer: its description, the headers it documents and, unless it has no body, its
 * schema (JSON, or the media the handler writes) and example.
 */
function response({ schema, media, content, description, headers }: Answer): Schema {
  const answerHeaders = headers
    ? {
        headers: Object.fromEntries(
          Object.entries(headers).map(([name, text]) => [
            name,
            { description: text, schema: { type: 'string' } },
          ]),
        ),
      }
    : {};
  if (content) return { description, ...answerHeaders, content: mediaContent(content) };
  if (schema === undefined && media === undefined) return { description, ...answerHeaders };
  return {
    description,
    ...answerHeaders,
    content: {
      [media ?? 'application/json']: {
        schema: schema ? plainSchema(schema) : { type: 'string', format: 'binary' },
        ...(schema ? exampleOf(schema) : {}),
      },
    },
  };
}

/** The content of a body a handler reads or writes itself: per media type, its schema (bytes when none), example, encodings. */
const mediaContent = (media: Readonly<Record<string, MediaDoc>>): Schema =>
  Object.fromEntries(
    Object.entries(media).map(([type, { schema, example, encoding }]) => [
      type,
      {
        schema: schema ? plainSchema(schema) : { type: 'string', format: 'binary' },
        ...(encoding ? { encoding } : {}),
        ...(example === undefined ? (schema ? exampleOf(schema) : {}) : { example }),
      },
    ]),
  );

function operation(row: Endpoint): Schema {
  const rule = row.access;
  const access =
    'legacyRole' in rule
      ? `Requires the legacy role \`${rule.legacyRole}\`.`
      : 'anyOf' in rule
        ? `Requires ${rule.anyOf.map((p) => `\`${p}\``).join(' or ')}.`
        : 'allOf' in rule
          ? `Requires ${rule.allOf.map((p) => `\`${p}\``).join(' and ')}.`
          : `Open: ${rule.open}.`;
  const problems = Object.fromEntries(
    Object.entries(problemStatuses(row)).map(([status, text]) => {
      const said = text ?? PROBLEM_TEXT[Number(status)] ?? 'refused';
      if (row.errors !== 'oauth')
        return [status, problemResponse(typeof said === 'string' ? said : said.text)];
      return [
        status,
        typeof said === 'string'
          ? oauthErrorResponse(said)
          : oauthErrorResponse(said.text, said.errors, said.headers),
      ];
    }),
  );
  const params = [
    ...parameters('path', row.params),
    ...parameters('query', row.query),
    ...(row.negotiate?.select ? [selectHeader(row.negotiate.types)] : []),
  ];
  return {
    tags: [row.tag],
    operationId: row.operationId,
    summary: row.summary,
    description: [access, row.description].filter(Boolean).join(' '),
    ...(row.security ? { security: row.security } : 'open' in rule ? { security: [] } : {}),
    ...(params.length ? { parameters: params } : {}),
    ...(row.body
      ? {
          requestBody: {
            required: !row.bodyOptional,
            content: {
              [row.bodyMedia === 'form' ? 'application/x-www-form-urlencoded' : 'application/json']:
                { schema: plainSchema(row.body), ...exampleOf(row.body) },
            },
          },
        }
      : row.request
        ? {
            requestBody: {
              required: true,
              ...(row.request.description ? { description: row.request.description } : {}),
              content: mediaContent(row.request.media),
            },
          }
        : {}),
    responses: {
      ...Object.fromEntries(
        [row.answer, ...(row.otherAnswers ?? [])].map((a) => [a.status, response(a)]),
      ),
      ...problems,
    },
    ...(row.expensive
      ? {
          'x-keyward-expensive': {
            kinds: row.expensive.kinds,
            runsIn: row.expensive.runsIn ?? 'api',
          },
        }
      : {}),
    ...row.extensions,
  };
}

/** The `{results}` answer of a batch: per item, the item's answer with status 200, or its problem. */
const resultsOf = (item: Schema): Schema => ({
  type: 'object',
  required: ['results'],
  properties: {
    results: {
      type: 'array',
      items: {
        oneOf: [
          {
            allOf: [
              item,
              {
                type: 'object',
                required: ['status'],
                properties: { status: { const: 200 } },
                additionalProperties: false,
              },
            ],
          },
          {
            type: 'object',
            required: ['status', 'error'],
            properties: {
              status: { type: 'integer' },
              error: { $ref: '#/components/schemas/Problem' },
            },
            additionalProperties: false,
          },
        ],
      },
    },
  },
  additionalProperties: false,
});

/**
 * A runtime operation row (`batch`): the single and the batch request, derived from the item
 * schema, the single and the batch answer, derived from the answer schema, an example each, its
 * problems (the row's, those every operation shares included).
 */
function batchOperation(row: Endpoint): Schema {
  const item = plainSchema(row.body!);
  const answer = plainSchema(row.answer.schema!);
  const rule = row.access;
  const permission =
    'legacyRole' in rule
      ? `the legacy role \`${rule.legacyRole}\``
      : 'allOf' in rule
        ? rule.allOf.map((p) => `\`${p}\``).join(' and ')
        : 'anyOf' in rule
          ? rule.anyOf.map((p) => `\`${p}\``).join(' or ')
          : 'no token';
  return {
    tags: [row.tag],
    operationId: row.operationId,
    summary: row.summary,
    ...row.extensions,
    description: `Requires ${permission}. ${row.description} A batch \`{items}\` answers \`{results}\` in order.`,
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { oneOf: [item, plainSchema(BatchOf(row.body as TObject))] },
          example: row.examples?.request,
        },
      },
    },
    responses: {
      200: {
        description: row.answer.description,
        content: {
          'application/json': {
            schema: { oneOf: [answer, resultsOf(answer)] },
            example: row.examples?.answer,
          },
        },
      },
      ...Object.fromEntries(
        Object.entries(row.problems ?? {}).map(([code, text]) => [
          code,
          problemResponse(typeof text === 'string' ? text : text.text),
        ]),
      ),
    },
  };
}

const exampleOf = (schema: TSchema) => {
  const example = (schema as { examples?: unknown[] }).examples?.[0];
  return example === undefined ? {} : { example };
};

/** The paths object of every row of `areas`. */
export function endpointPaths(areas: readonly RowArea[]): Record<string, Record<string, Schema>> {
  const paths: Record<string, Record<string, Schema>> = {};
  for (const area of areas)
    for (const mount of area.mounts)
      for (const row of mount.endpoints ?? []) {
        const path = fullPath(area.prefix, mount.path, row.path);
        (paths[path] ??= {})[row.method] = row.batch ? batchOperation(row) : operation(row);
      }
  for (const area of areas)
    for (const mount of area.mounts)
      for (const p of mount.protocol ?? [])
        (paths[fullPath(area.prefix, mount.path, p.path)] ??= {})[p.method] = { ...p.operation };
  return paths;
}
