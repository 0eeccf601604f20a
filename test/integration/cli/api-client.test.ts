/**
 * The CLI's typed client against the OpenAPI document ("checked against the OpenAPI
 * document, so the CLI and the document cannot drift"): every operation the client calls must be
 * in openApiDocument() with the same method, path template and body media type, and carry the
 * document's operationId as its name where the document gives one.
 */
import { apiDocument as openApiDocument } from '../../../api/routes/index.ts';
import {
  AWAITING_OPENAPI,
  operations,
  resolvePath,
  type AnyOperation,
  type OperationName,
} from '../../../bin/lib/api-client.ts';

type DocOperation = { operationId?: string; requestBody?: { content?: Record<string, unknown> } };
const doc = openApiDocument('https://keyward.example') as {
  paths: Record<string, Record<string, DocOperation>>;
};
const rows = Object.entries(operations) as Array<[OperationName, AnyOperation]>;
const documented = (op: AnyOperation) => doc.paths[op.path]?.[op.method.toLowerCase()];
const MEDIA = {
  json: 'application/json',
  form: 'application/x-www-form-urlencoded',
  multipart: 'multipart/form-data',
  binary: 'application/octet-stream',
} as const;

describe('the CLI client and the OpenAPI document cannot drift', () => {
  it('when each client operation is looked up, then the document has its method and path template (pending ones excepted)', () => {
    const missing = rows
      .filter(([name, op]) => !AWAITING_OPENAPI.has(name) && !documented(op))
      .map(([name, op]) => `${name}: ${op.method} ${op.path}`);
    expect(missing).toEqual([]);
  });

  it('when an operation awaiting its OpenAPI entry gets one, then it must leave AWAITING_OPENAPI', () => {
    const nowDocumented = rows
      .filter(([name, op]) => AWAITING_OPENAPI.has(name) && documented(op))
      .map(([name]) => name);
    expect(nowDocumented).toEqual([]);
  });

  it('when the document names an operation, then the client function has that operationId as its name', () => {
    const misnamed = rows
      .map(([name, op]) => [name, documented(op)?.operationId] as const)
      .filter(([name, id]) => id !== undefined && id !== name);
    expect(misnamed).toEqual([]);
  });

  it('when an operation sends a body, then the document accepts it in that media type', () => {
    const wrong = rows
      .filter(([, op]) => documented(op)?.requestBody)
      .filter(
        ([, op]) => !Object.hasOwn(documented(op)!.requestBody!.content ?? {}, MEDIA[op.kind]),
      )
      .map(([name, op]) => `${name}: ${MEDIA[op.kind]}`);
    expect(wrong).toEqual([]);
  });

  it('when a path is filled in, then each parameter is percent-encoded and a missing one is refused before any request', () => {
    expect(resolvePath(operations.rotateKey, { tenantId: 't', kid: 'a/b?c' })).toBe(
      '/api/v3/admin/tenants/t/keys/a%2Fb%3Fc/rotate',
    );
    expect(
      resolvePath(operations.listKeys, {
        tenantId: 't',
        query: { state: 'archived', limit: undefined },
      }),
    ).toBe('/api/v3/admin/tenants/t/keys?state=archived');
    expect(() => resolvePath(operations.getKey, { tenantId: 't' })).toThrow(
      'the path parameter kid is missing',
    );
  });
});
