/**
 * Every operation of the OpenAPI document, called on a running app with the request its
 * document shows (the documented example body, path parameters naming the test tenant and its
 * key), and its live answer held to the document by an independent validator: Ajv's JSON
 * Schema 2020-12 (OpenAPI 3.1's dialect), not the TypeBox checkers the service itself uses.
 * The status must be one the operation documents, and a JSON body must fit the schema documented
 * for that status and media type. The operations come from the document, and the document from
 * the route table, so a new endpoint is called here without anyone adding it.
 */
import { randomUUID } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { apiDocument as openApiDocument } from '../../../api/routes/index.ts';
import { callersOfEveryApi, type ApiCallers } from './route-table.ts';

type Json = Record<string, any>;

/** A hang guard, not a timing assertion: an answer that never comes fails with its operation named. */
const HANG_MS = 60_000;
/** Reads first, changes next, deletions last, so a deletion cannot empty what a read would show. */
const ORDER = ['get', 'head', 'post', 'put', 'patch', 'delete'];

/** A JSON pointer's token (RFC 6901). */
const pointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const mediaOf = (type: string | null) => (type ?? '').split(';')[0].trim().toLowerCase();
const isJson = (media: string) => media === 'application/json' || media.endsWith('+json');

describe(`every documented operation answers as its document says (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let callers: ApiCallers;
  beforeAll(async () => {
    app = await startTestApp();
    callers = await callersOfEveryApi(app, 'doc-key');
  });
  afterAll(async () => {
    await app.stop();
  });

  /** A value for a parameter: the test tenant, its key, the documented example, or a plausible one. */
  function parameterValue(p: Json): string {
    if (/tenant/i.test(p.name)) return callers.tenant.tenantId;
    if (p.name === 'kid') return 'doc-key';
    const s = p.schema ?? {};
    const v = p.example ?? s.examples?.[0] ?? s.enum?.[0] ?? s.default;
    if (v !== undefined) return String(v);
    if (p.name === 'name') return 'documented/in.p7m';
    if (s.type === 'integer' || s.type === 'number') return String(s.minimum ?? 1);
    if (s.type === 'boolean') return 'false';
    return s.format === 'uuid' || p.in === 'path' ? randomUUID() : 'documented';
  }

  /** The documented example body, naming the test tenant's key where it names a key. */
  function exampleBody(content: Json, media: string): unknown {
    const entry = content[media];
    const example = entry.example ?? entry.schema?.examples?.[0];
    const named = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(named)
        : v && typeof v === 'object'
          ? Object.fromEntries(
              Object.entries(v).map(([k, x]) => [k, k === 'kid' ? 'doc-key' : named(x)]),
            )
          : v;
    return named(example);
  }

  it('when each operation is called with its documented request, then its status is documented and its JSON body fits the documented schema', async () => {
    const doc = openApiDocument(app.config.publicBaseUrl) as Json;
    const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema(doc, 'doc');
    const operations = Object.entries(doc.paths as Json)
      .flatMap(([path, item]) =>
        Object.entries(item as Json)
          .filter(([method]) => ORDER.includes(method))
          .map(([method, op]) => ({ path, method, op: op as Json })),
      )
      .sort((a, b) => ORDER.indexOf(a.method) - ORDER.indexOf(b.method));
    const findings: string[] = [];
    const successes: string[] = [];
    for (const { path, method, op } of operations) {
      const name = `${method.toUpperCase()} ${path}`;
      const params = [...(doc.paths[path].parameters ?? []), ...(op.parameters ?? [])] as Json[];
      let url = path;
      const query = new URLSearchParams();
      for (const p of params) {
        if (p.in === 'path')
          url = url.replace(`{${p.name}}`, encodeURIComponent(parameterValue(p)));
        else if (p.in === 'query' && p.required) query.set(p.name, parameterValue(p));
      }
      url = url.replace(/\{(\w+)\}/g, (_m, n: string) => parameterValue({ name: n, in: 'path' }));
      const headers: Record<string, string> = {};
      const open = Array.isArray(op.security) && op.security.length === 0;
      if (!open) headers.authorization = `Bearer ${callers.tokenFor(path)}`;
      let body: string | undefined;
      const content = op.requestBody?.content as Json | undefined;
      if (content) {
        const media = Object.keys(content)[0];
        const example = exampleBody(content, media);
        headers['content-type'] = media;
        if (isJson(media)) body = JSON.stringify(example ?? {});
        else if (media === 'application/x-www-form-urlencoded')
          body = new URLSearchParams((example ?? {}) as Record<string, string>).toString();
        else body = typeof example === 'string' ? example : 'documented';
      }
      const qs = query.toString();
      let res: Response;
      try {
        res = await fetch(`${app.url}${url}${qs ? `?${qs}` : ''}`, {
          method: method.toUpperCase(),
          headers,
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(HANG_MS),
        });
      } catch (err) {
        findings.push(`${name}: no answer (${(err as Error).message})`);
        continue;
      }
      const text = await res.text();
      const status = String(res.status);
      const response = op.responses[status] ?? op.responses.default;
      if (!response) {
        findings.push(
          `${name}: answered ${status}, documented ${Object.keys(op.responses).join(', ')} (${text.slice(0, 160)})`,
        );
        continue;
      }
      if (res.status < 400) successes.push(name);
      const media = mediaOf(res.headers.get('content-type'));
      if (!text && !response.content) continue;
      const documented = response.content?.[media];
      if (!documented) {
        findings.push(
          `${name}: ${status} answered as ${media || 'no media type'}, documented ${Object.keys(response.content ?? {}).join(', ') || 'no body'}`,
        );
        continue;
      }
      if (!isJson(media) || !documented.schema) continue;
      const where = `doc#/paths/${pointer(path)}/${method}/responses/${op.responses[status] ? status : 'default'}/content/${pointer(media)}/schema`;
      const validate = ajv.compile({ $ref: where });
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        findings.push(`${name}: ${status} ${media} body is not JSON`);
        continue;
      }
      if (!validate(parsed))
        findings.push(
          `${name}: ${status} body does not fit its schema: ${ajv.errorsText(validate.errors).slice(0, 300)}`,
        );
    }
    console.log(
      `documented answers: ${operations.length} operations called, ${successes.length} answered success, ${findings.length} findings`,
    );
    expect(findings).toEqual([]);
    expect(operations.length).toBeGreaterThan(100);
  });
});
