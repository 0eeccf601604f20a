/**
 * The real error and body middleware (api/middleware) on a small app of their own, so they are
 * tested apart from any route: the same order as api/app.ts, request context first, 404 and the
 * error handler last.
 */
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { createLogger } from '../../../shared/logger.ts';
import { requestContext } from '../../../api/middleware/request-context.ts';
import { jsonBody } from '../../../api/http/json-body.ts';
import { errorHandler, notFound } from '../../../api/middleware/errors.ts';
import { problem, problemDocument } from '../../../shared/errors/index.ts';

const BASE = 'https://keyward.example';
const LIMIT = 1024;

/** A pino logger whose lines land in memory. */
function capturedLogger(level = 'info') {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return {
    logger: createLogger(level, sink),
    text: () => lines.join(''),
    records: () =>
      lines
        .join('')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

describe('error responses and logging (real middleware)', () => {
  const log = capturedLogger();
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const app = express();
    app.use(requestContext(app, log.logger));
    app.post('/echo', ...jsonBody(LIMIT), (req, res) => {
      res.json({ received: req.body });
    });
    app.get('/boom', () => {
      throw new Error('secret internals');
    });
    app.get('/boom-async', async () => {
      await Promise.resolve();
      throw new Error('secret async internals');
    });
    app.get('/limited', () => {
      throw problem('rate_limited', 'slow down', {
        details: { limit: 10 },
        headers: { 'Retry-After': '7' },
      });
    });
    app.get('/storage', () => {
      throw problem('storage_unavailable', 'bucket gone', { details: { bucket: 'secret-bucket' } });
    });
    app.get('/http-405', () => {
      throw Object.assign(new Error('Method Not Allowed'), { status: 405, expose: true });
    });
    app.use(notFound);
    app.use(errorHandler(BASE));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  });

  const postJson = (body: string, contentType = 'application/json') =>
    fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': contentType }, body });

  async function expectProblem(res: Response, status: number, slug: string, instance: string) {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = await res.json();
    expect(body).toEqual({
      type: `${BASE}/problems/${slug}`,
      title: expect.any(String),
      status,
      detail: expect.any(String),
      instance,
    });
    return body as { detail: string };
  }

  it('when valid JSON is posted, then the route receives it parsed', async () => {
    const res = await postJson(JSON.stringify({ kid: 'k1', data: 'aGk=' }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: { kid: 'k1', data: 'aGk=' } });
  });

  it('when a +json media type is posted, then it is accepted as JSON', async () => {
    const res = await postJson('{"a":1}', 'application/merge-patch+json');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: { a: 1 } });
  });

  it('when the JSON is malformed, then 400 malformed-json problem', async () => {
    const body = await expectProblem(
      await postJson('{"kid": "k1",'),
      400,
      'malformed-json',
      '/echo',
    );
    expect(body.detail).toBe('the request body is not valid JSON');
  });

  it('when the content type is not JSON, then 415 unsupported-media-type problem', async () => {
    const body = await expectProblem(
      await postJson('kid=k1', 'application/x-www-form-urlencoded'),
      415,
      'unsupported-media-type',
      '/echo',
    );
    expect(body.detail).toContain('application/x-www-form-urlencoded');
  });

  it('when a body comes without any content type, then 415', async () => {
    const res = await fetch(`${url}/echo`, { method: 'POST', body: Buffer.from('{"a":1}') });
    await expectProblem(res, 415, 'unsupported-media-type', '/echo');
  });

  it('when the JSON charset is unsupported, then 415', async () => {
    await expectProblem(
      await postJson('{"a":1}', 'application/json; charset=latin1'),
      415,
      'unsupported-media-type',
      '/echo',
    );
  });

  it('when the body is larger than the limit, then 413 payload-too-large problem', async () => {
    const big = JSON.stringify({ data: 'x'.repeat(LIMIT * 2) });
    await expectProblem(await postJson(big), 413, 'payload-too-large', '/echo');
  });

  it('when a body larger than the limit is streamed without Content-Length, then 413 as well', async () => {
    const chunk = new TextEncoder().encode(`"${'x'.repeat(LIMIT)}`);
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"data":'));
        c.enqueue(chunk);
        c.enqueue(chunk);
        c.enqueue(new TextEncoder().encode('"}'));
        c.close();
      },
    });
    const res = await fetch(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await expectProblem(res, 413, 'payload-too-large', '/echo');
  });

  it.each([
    ['/boom', 'secret internals'],
    ['/boom-async', 'secret async internals'],
  ])(
    'when %s fails unexpectedly, then 500 internal-error without the message or stack, and the log has both under the request id',
    async (path, message) => {
      const res = await fetch(`${url}${path}?q=1`, {
        headers: { 'x-request-id': `req-${path.slice(1)}` },
      });
      expect(res.headers.get('x-request-id')).toBe(`req-${path.slice(1)}`);
      const text = await res.clone().text();
      const body = await expectProblem(res, 500, 'internal-error', path);
      expect(body.detail).toBe(
        'an unexpected error occurred; the request id identifies it in the logs',
      );
      expect(text).not.toContain('secret');
      expect(text).not.toMatch(/\bat .*:\d+:\d+/);
      expect(text).not.toContain('Error:');
      const logged = log
        .records()
        .find((r) => r.reqId === `req-${path.slice(1)}` && r.level === 50);
      expect(logged).toMatchObject({ msg: 'request failed', err: message, code: 'internal' });
      expect(logged.stack).toContain(message);
    },
  );

  it('when a catalogued error carries details and headers, then they are in the answer, rendered by the one shared renderer', async () => {
    const res = await fetch(`${url}/limited`);
    expect(res.headers.get('retry-after')).toBe('7');
    const body = await res.json();
    expect(body).toEqual({
      type: `${BASE}/problems/rate-limited`,
      title: 'Too Many Requests',
      status: 429,
      detail: 'slow down',
      instance: '/limited',
      limit: 10,
    });
    expect(body).toEqual(
      problemDocument(problem('rate_limited', 'slow down', { details: { limit: 10 } }), BASE, {
        instance: '/limited',
      }),
    );
  });

  it('when a 5xx error carries details, then neither its message nor its details leave', async () => {
    const text = await (await fetch(`${url}/storage`)).text();
    expect(JSON.parse(text)).toMatchObject({
      status: 503,
      type: `${BASE}/problems/storage-unavailable`,
    });
    expect(text).not.toContain('secret-bucket');
    expect(text).not.toContain('bucket gone');
  });

  it("when an http-errors style failure of another 4xx status arrives, then the catalogue's code for that status answers (it was bad-request with the status swapped in)", async () => {
    await expectProblem(await fetch(`${url}/http-405`), 405, 'method-not-allowed', '/http-405');
  });

  it('when no route matches, then 404 not-found problem with the path as instance, without the query', async () => {
    await expectProblem(await fetch(`${url}/nothing?token=abc`), 404, 'not-found', '/nothing');
  });

  it('when a request is handled, then its log lines carry the reqId echoed in X-Request-Id', async () => {
    const res = await postJson('{');
    const reqId = res.headers.get('x-request-id');
    expect(reqId).toMatch(/^[0-9a-f-]{36}$/);
    const lines = log.records().filter((r) => r.reqId === reqId);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, code: 'malformed_json', status: 400 });
  });

  it('when a client sends an unsafe request id, then a fresh one replaces it', async () => {
    const res = await fetch(`${url}/nothing`, {
      headers: { 'x-request-id': 'bad id\twith "quotes"' },
    });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('log redaction', () => {
  it('when secrets are logged at the top level and one or two levels down, then none of their values reach the output', () => {
    const { logger, text } = capturedLogger('trace');
    const secrets = {
      password: 'pw-SECRET-1',
      client_secret: 'cs-SECRET-2',
      token: 'tok-SECRET-3',
      authorization: 'Bearer SECRET-4',
      privateKey: '-----BEGIN PRIVATE KEY-----SECRET-5',
      refresh_token: 'rt-SECRET-6',
      clientSecret: 'cs-SECRET-7',
      masterKey: 'mk-SECRET-8',
    };
    logger.info({ password: secrets.password, client_secret: secrets.client_secret }, 'top level');
    logger.info(
      {
        body: {
          token: secrets.token,
          refresh_token: secrets.refresh_token,
          clientSecret: secrets.clientSecret,
        },
      },
      'one level down',
    );
    logger.info(
      {
        req: {
          method: 'POST',
          headers: { authorization: secrets.authorization, 'content-type': 'application/json' },
        },
      },
      'request headers',
    );
    logger.info(
      { req: { headers: { Authorization: secrets.authorization } } },
      'capitalised header',
    );
    logger.warn(
      { key: { jwk: { kty: 'RSA', privateKey: secrets.privateKey } } },
      'two levels down',
    );
    logger
      .child({ reqId: 'r1' })
      .error({ masterKey: secrets.masterKey, password: secrets.password }, 'child logger');
    const out = text();
    for (const value of Object.values(secrets)) expect(out).not.toContain(value);
    expect(out).not.toContain('SECRET');
    expect(out.match(/\[redacted\]/g)?.length).toBeGreaterThanOrEqual(10);
    // Non-secret fields next to them survive.
    expect(out).toContain('"content-type":"application/json"');
    expect(out).toContain('"method":"POST"');
    expect(out).toContain('"kty":"RSA"');
    expect(out).toContain('"reqId":"r1"');
  });
});
