/**
 * The access log: one line per request on the runtime lane and on Express, with method, route
 * template, status, duration, bytes, request id, tenant and actor, and never a secret; a client
 * that leaves mid-upload is an info line saying what had passed, not an error; a server failure
 * is logged once, with its request id.
 */
import { connect } from 'node:net';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  api,
  makeTenant,
  postForm,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { sleep } from '../../support/time.ts';

const PERMISSIONS = [
  'crypto.encrypt',
  'admin.keys.create',
  'admin.keys.read',
  'migration.convert',
  'crypto.decrypt',
  'migration.uploads.write',
];
const data = Buffer.from('attack at dawn').toString('base64');

interface Line {
  level: number;
  msg: string;
  reqId?: string;
  [field: string]: unknown;
}

describe(`the access log (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let core: string;
  let admin: string;
  const lines = (): Line[] =>
    app
      .logText()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
  const linesOf = (reqId: string) => lines().filter((l) => l.reqId === reqId);
  /** Waits until the request's access line is written (it is written when the response closes). */
  const accessLine = async (reqId: string): Promise<Line> => {
    for (;;) {
      const found = linesOf(reqId).filter((l) => typeof l.route === 'string');
      if (found.length > 0) return found[0];
      await sleep(20);
    }
  };
  const send = (path: string, method: string, token: string, reqId: string, json?: unknown) =>
    fetch(`${app.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'x-request-id': reqId,
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: json === undefined ? undefined : JSON.stringify(json),
    });

  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, PERMISSIONS);
    core = await workloadToken(app, t);
    admin = await userToken(app, t);
    const created = await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/keys`, admin, {
      kid: 'aes',
      type: 'aes-256',
    });
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when the lane and Express answer, then each request has one access line with its fields', async () => {
    const lane = await send('/api/v3/crypto/encrypt', 'POST', core, 'acc-lane', {
      kid: 'aes',
      data,
    });
    expect(lane.status).toBe(200);
    await lane.text();
    const express = await send(
      `/api/v3/admin/tenants/${t.tenantId}/keys/aes`,
      'GET',
      admin,
      'acc-express',
    );
    expect(express.status).toBe(200);
    await express.text();

    const laneLine = await accessLine('acc-lane');
    expect(laneLine).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'POST',
      route: '/api/v3/crypto/encrypt',
      status: 200,
      tenantId: t.tenantId,
      actor: expect.stringMatching(/^workload:/),
    });
    const expressLine = await accessLine('acc-express');
    expect(expressLine).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'GET',
      route: '/api/v3/admin/tenants/:tenantId/keys/:kid',
      status: 200,
      tenantId: t.tenantId,
      actor: expect.stringMatching(/^user:/),
    });
    for (const line of [laneLine, expressLine]) {
      expect(line.ms).toEqual(expect.any(Number));
      expect(line.bytesIn as number).toBeGreaterThanOrEqual(0);
      expect(line.bytesOut as number).toBeGreaterThan(0);
    }
    expect(laneLine.bytesIn as number).toBeGreaterThan(0);
    expect(linesOf('acc-lane').filter((l) => l.msg === 'request')).toHaveLength(1);
    expect(linesOf('acc-express').filter((l) => l.msg === 'request')).toHaveLength(1);
  });

  it('when the lane serves the Vault mount, then each access line names the operation, not the mount', async () => {
    const cases = [
      { reqId: 'acc-vault-op', path: '/v1/transit/encrypt/aes', route: '/v1/transit/encrypt/:kid' },
      { reqId: 'acc-vault-none', path: '/v1/transit/no-such-operation', route: '/v1' },
    ];
    for (const { reqId, path, route } of cases) {
      const res = await fetch(`${app.url}${path}`, {
        method: 'POST',
        headers: {
          'x-vault-token': core,
          'x-request-id': reqId,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ plaintext: data }),
      });
      await res.text();
      expect((await accessLine(reqId)).route).toBe(route);
    }
  });

  it('when a bearer token, a client secret and a password are sent, then none of them is in the log', async () => {
    const basic = Buffer.from(`${t.clientId}:${t.clientSecret}`).toString('base64');
    const viaBasic = await postForm(
      app,
      '/api/v3/auth/token',
      { grant_type: 'client_credentials' },
      { authorization: `Basic ${basic}` },
    );
    expect(viaBasic.status).toBe(200);
    const bearer = viaBasic.body.access_token as string;
    const user = await userToken(app, t);
    const wrong = await postForm(app, '/api/v3/auth/token', {
      grant_type: 'password',
      username: t.userEmail,
      password: `${t.userPassword} but wrong`,
      tenant_id: t.tenantId,
    });
    expect(wrong.status).toBe(400);
    await (
      await send('/api/v3/crypto/encrypt', 'POST', bearer, 'sec-1', { kid: 'aes', data })
    ).text();
    await (
      await send('/api/v3/crypto/encrypt', 'POST', bearer, 'sec-2', { kid: 'x', data })
    ).text();
    await (await send(`/api/v3/admin/tenants/${t.tenantId}/keys`, 'GET', user, 'sec-3')).text();
    await accessLine('sec-3');

    const log = app.logText();
    expect(log).toContain('"route":"/api/v3/auth/token"');
    for (const secret of [
      bearer,
      bearer.split('.')[2],
      user.split('.')[2],
      t.clientSecret,
      basic,
      t.userPassword,
    ])
      expect(log.includes(secret)).toBe(false);
  });

  it('when a client disconnects mid-upload, then an info line says so with the bytes that had passed, and nothing is logged as an error', async () => {
    const boundary = 'b0undary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.p7m"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    );
    // A JSON body under the cap (JSON_LIMIT_BYTES, 64 KiB), uploads of any size.
    const cases = [
      {
        reqId: 'abort-lane',
        request: 'POST /api/v3/crypto/encrypt',
        route: '/api/v3/crypto/encrypt',
        type: 'application/json',
        length: 60_000,
      },
      {
        reqId: 'abort-convert',
        request: 'POST /api/v3/migration/stream/convert-pkcs7-to-jose',
        route: '/api/v3/migration/stream/convert-pkcs7-to-jose',
        type: `multipart/form-data; boundary=${boundary}`,
        length: 10_000_000,
      },
      {
        reqId: 'abort-upload',
        request: 'PUT /api/v3/migration/uploads/in/big.p7m',
        route: '/api/v3/migration/uploads/*name',
        type: 'application/octet-stream',
        length: 10_000_000,
      },
    ];
    for (const { reqId, request, route, type, length } of cases) {
      const socket = connect(Number(new URL(app.url).port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      // Expect: 100-continue: the interim answer says the server has begun the request.
      const continued = new Promise((resolve) => socket.once('data', resolve));
      socket.write(
        `${request} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${core}\r\n` +
          `X-Request-Id: ${reqId}\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n` +
          'Expect: 100-continue\r\n\r\n',
      );
      expect(String(await continued)).toMatch(/^HTTP\/1.1 100 Continue/);
      if (type.startsWith('multipart')) socket.write(head);
      if (type === 'application/json') socket.write('{"kid":"aes","data":"');
      socket.write(Buffer.alloc(20_000, 0x41));
      // Some of the body is read before the client goes (the assertions hold either way).
      await sleep(100);
      socket.destroy();
      const line = await accessLine(reqId);
      expect(line).toMatchObject({
        level: 30,
        msg: 'request aborted by the client',
        route,
        status: 499,
        aborted: true,
        tenantId: t.tenantId,
      });
      expect(line.bytesIn as number).toBeGreaterThan(0);
    }
    // Give a late failure log the time to appear before asserting it never did.
    await sleep(300);
    for (const { reqId } of cases) {
      expect(linesOf(reqId).filter((l) => l.level >= 40)).toEqual([]);
      expect(linesOf(reqId).filter((l) => 'stack' in l)).toEqual([]);
    }
  });

  it('when the server fails a request, then the error is logged once with its request id and the access line says 500', async () => {
    const get = app.ctx.keys.get;
    app.ctx.keys.get = async () => {
      throw new Error('key store exploded');
    };
    try {
      const res = await send('/api/v3/crypto/encrypt', 'POST', core, 'fail-1', {
        kid: 'aes',
        data,
      });
      expect(res.status).toBe(500);
      expect(await res.text()).not.toContain('exploded');
    } finally {
      app.ctx.keys.get = get;
    }
    expect(await accessLine('fail-1')).toMatchObject({ status: 500, msg: 'request' });
    const errors = linesOf('fail-1').filter((l) => l.level >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ err: 'key store exploded', stack: expect.any(String) });
  });
});
