/**
 * Examples of the problem responses, made by the service's own renderer from the problem
 * catalogue (shared/errors): each problem+json response shows the first catalogued slug its
 * description names with that status, else the general problem of the status, so a title or a
 * status in the document cannot differ from what the service answers.
 */
import { PROBLEMS, problem, problemDocument, type ProblemCode } from '../../shared/errors/index.ts';

type Json = Record<string, unknown>;

const CODE_BY_SLUG = new Map<string, ProblemCode>(
  Object.entries(PROBLEMS).map(([code, spec]) => [spec.slug, code as ProblemCode]),
);

/** The problem of a status when the description names none (the edge's own refusals). */
const BY_STATUS: Record<number, ProblemCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  503: 'unavailable',
};

/** The catalogued slugs a description names, in order. */
export const slugsNamed = (text: string): string[] =>
  (text.match(/\b[a-z0-9]+(?:-[a-z0-9]+)+\b/g) ?? []).filter((t) => CODE_BY_SLUG.has(t));

/** The example problem of a response: its status, the description's first slug of that status. */
function example(
  status: number,
  description: string,
  path: string,
  baseUrl: string,
): Json | undefined {
  const named = slugsNamed(description)
    .map((slug) => CODE_BY_SLUG.get(slug)!)
    .find((code) => PROBLEMS[code].status === status);
  const code = named ?? (Object.hasOwn(BY_STATUS, status) ? BY_STATUS[status] : undefined);
  if (code === undefined) return undefined;
  // The text after "slug:" reads as a detail; otherwise the description itself.
  const after = description.split(`${PROBLEMS[code].slug}: `)[1];
  const detail = (after ?? description).split(/[;(]/, 1)[0].trim();
  return problemDocument(problem(code, detail), baseUrl, { instance: path });
}

/** The paths with an example on every problem response that has none; the input is not changed. */
export function withProblemExamples(
  paths: Record<string, Record<string, unknown>>,
  baseUrl: string,
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(paths).map(([path, ops]) => [
      path,
      Object.fromEntries(
        Object.entries(ops).map(([method, op]) => {
          const responses = (op as { responses?: Record<string, Json> }).responses;
          if (!responses) return [method, op];
          const filled = Object.fromEntries(
            Object.entries(responses).map(([status, res]) => {
              const content = res.content as Record<string, Json> | undefined;
              const media = content?.['application/problem+json'];
              if (!media || media.example !== undefined) return [status, res];
              const ex = example(Number(status), String(res.description ?? ''), path, baseUrl);
              return [
                status,
                ex
                  ? {
                      ...res,
                      content: {
                        ...content,
                        'application/problem+json': { ...media, example: ex },
                      },
                    }
                  : res,
              ];
            }),
          );
          return [method, { ...(op as Json), responses: filled }];
        }),
      ),
    ]),
  );
}
