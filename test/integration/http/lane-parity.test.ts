/**
 * The runtime lane and Express answer alike. For every route the route table marks `lane`, the
 * same hostile requests go to the lane's exact path and to the variants only Express serves (a
 * trailing slash, a query string); each must answer the same status and problem slug. Routes
 * come from the table, so a new lane route is covered without touching this file.
 */
import { request } from 'node:http';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { api, makeTenant, userToken, workloadToken } from '../../../support/auth.ts';
import { laneRoutes } from '../../../api/routes/index.ts';

/** The lane's bearer-checked runtime operations (the OAuth endpoints have their own suite below). */
const runtimeLanes = () => laneRoutes().filter((r) => r.kind === 'runtime');
const oauthLanes = () => laneRoutes().filter((r) => r.kind === 'oauth');

interface Answer {
  status: number;
  slug: string | null;
  contentType?: string;
  challenge?: string;
}

interface Hostile {
  name: string;
  headers?: Record<string, string>;
  /** Omitted: no body and no Content-Length. */
  body?: string | Buffer;
  /** Send the body chunked, with no Content-Length. */
  chunked?: boolean;
  token?: 'good' | 'none' | 'bad' | 'unprivileged';
}

const JSON_TYPE = { 'content-type': 'application/json' };

/** One request over node:http: the status and the slug of a problem answer (with `full`, its Content-Type and challenge too). */
function send(
  app: TestApp,
  path: string,
  h: Hostile,
  tokens: Record<string, string>,
  full = false,
): Promise<Answer> {
  const headers: Record<string, string> = { ...h.headers };
  const token = h.token ?? 'good';
  if (token !== 'none') headers.authorization = `Bearer ${tokens[token]}`;
  if (h.body !== undefined && !h.chunked)
    headers['content-length'] = String(Buffer.byteLength(h.body));
  if (h.chunked) headers['transfer-encoding'] = 'chunked';
  return new Promise((resolve, reject) => {
    const req = request(`${app.url}${path}`, { method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const type = /problem\+json/.test(String(res.headers['content-type']))
          ? (JSON.parse(text) as { type: string }).type
          : null;
        const slug = type ? type.slice(type.lastIndexOf('/') + 1) : null;
        resolve({
          status: res.statusCode ?? 0,
          slug,
          ...(full
            ? {
                contentType: String(res.headers['content-type']),
                challenge: String(res.headers['www-authenticate'] ?? ''),
              }
            : {}),
        });
      });
    });
    req.on('error', reject);
    req.end(h.body);
  });
}

describe(`the runtime lane and Express answer alike (${TEST_ENGINE})`, () => {
  let app: TestApp;
  const tokens: Record<string, string> = {};
  const kid = '0b5e1c2a-6f4d-4c1e-9a7b-3d2f1e0c9b8a';
  const hostile = (limit: number): Hostile[] => [
    { name: 'no body' },
    { name: 'an empty chunked JSON body', headers: JSON_TYPE, body: '', chunked: true },
    { name: 'a wrong content type', headers: { 'content-type': 'text/plain' }, body: '{}' },
    { name: 'no content type', body: '{}' },
    {
      name: 'a charset other than UTF-8',
      headers: { 'content-type': 'application/json; charset=latin1' },
      body: '{}',
    },
    { name: 'a content coding', headers: { ...JSON_TYPE, 'content-encoding': 'gzip' }, body: '{}' },
    { name: 'malformed JSON', headers: JSON_TYPE, body: '{"kid": ' },
    { name: 'a bare JSON value', headers: JSON_TYPE, body: '42' },
    { name: 'a JSON array', headers: JSON_TYPE, body: '[]' },
    {
      name: 'a body over the cap',
      headers: JSON_TYPE,
      body: JSON.stringify({ kid, data: 'A'.repeat(limit) }),
    },
    {
      name: 'a chunked body over the cap',
      headers: JSON_TYPE,
      body: JSON.stringify({ kid, data: 'A'.repeat(limit) }),
      chunked: true,
    },
    { name: 'NUL in a member', headers: JSON_TYPE, body: JSON.stringify({ kid: 'a\u0000b' }) },
    { name: 'an empty object', headers: JSON_TYPE, body: '{}' },
    {
      name: 'an upper-case UUID kid',
      headers: JSON_TYPE,
      body: JSON.stringify({ kid: kid.toUpperCase(), data: 'aGVsbG8=', plaintext: 'aGVsbG8=' }),
    },
    {
      name: 'an unknown kid',
      headers: JSON_TYPE,
      body: JSON.stringify({ kid: 'no-such-key', data: 'aGVsbG8=' }),
    },
    { name: 'an empty batch', headers: JSON_TYPE, body: JSON.stringify({ items: [] }) },
    { name: 'no token', headers: JSON_TYPE, body: '{}', token: 'none' },
    { name: 'a bad token', headers: JSON_TYPE, body: '{}', token: 'bad' },
    {
      name: 'a token without the permission',
      headers: JSON_TYPE,
      body: '{}',
      token: 'unprivileged',
    },
  ];

  beforeAll(async () => {
    app = await startTestApp();
    const permissions = [
      ...new Set(
        runtimeLanes().flatMap(({ row }) =>
          'allOf' in row.access ? row.access.allOf : 'anyOf' in row.access ? row.access.anyOf : [],
        ),
      ),
    ];
    const t = await makeTenant(app, [...permissions, 'admin.keys.create']);
    tokens.good = await workloadToken(app, t);
    tokens.bad = `${tokens.good.slice(0, -4)}AAAA`;
    tokens.unprivileged = await workloadToken(app, await makeTenant(app, ['crypto.keys.read']));
    const created = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${t.tenantId}/keys`,
      await userToken(app, t),
      { kid, type: 'aes-256' },
    );
    expect(created.status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await app.stop();
  });

  it('when the table is read, then the lane serves the Core API runtime operations', () => {
    expect(laneRoutes().map((r) => r.path)).toEqual(
      expect.arrayContaining([
        '/api/v3/crypto/encrypt',
        '/api/v3/crypto/decrypt',
        '/api/v3/crypto/verify-mac',
      ]),
    );
  });

  it('when a lane path gets no body, then 400 validation-failed on both stacks (the lane said 415, Express with a trailing slash 400)', async () => {
    const encrypt = '/api/v3/crypto/encrypt';
    for (const path of [encrypt, `${encrypt}/`])
      expect(await send(app, path, { name: 'no body' }, tokens)).toEqual({
        status: 400,
        slug: 'validation-failed',
      });
  });

  it.each([
    // Express read an empty chunked body as {}, the lane as malformed JSON: zero bytes are no body, whatever the framing.
    [
      'an empty chunked JSON body',
      { headers: JSON_TYPE, body: '', chunked: true },
      400,
      'validation-failed',
    ],
    // Express (body-parser, strict) said malformed-json, the lane validation-failed: it is JSON, just not an object.
    ['a bare JSON value', { headers: JSON_TYPE, body: '42' }, 400, 'validation-failed'],
    // Express inflated gzip, the lane parsed the compressed bytes as JSON (400): one answer, no content coding.
    [
      'a gzip content coding',
      { headers: { ...JSON_TYPE, 'content-encoding': 'gzip' }, body: '{}' },
      415,
      'unsupported-media-type',
    ],
    // Express refused a charset other than UTF-8, the lane ignored it: JSON is UTF-8 (RFC 8259 8.1).
    [
      'a latin1 charset',
      { headers: { 'content-type': 'application/json; charset=latin1' }, body: '{}' },
      415,
      'unsupported-media-type',
    ],
  ] as const)(
    "when a lane path gets %s, then both stacks answer the one reader's refusal",
    async (name, h, status, slug) => {
      for (const path of ['/api/v3/crypto/encrypt', '/api/v3/crypto/encrypt/'])
        expect(await send(app, path, { name, ...h }, tokens)).toEqual({ status, slug });
    },
  );

  it('when every lane route gets every hostile request on the lane and on Express, then status, problem slug, Content-Type and challenge agree', async () => {
    const limit = app.config.jsonLimitBytes;
    const differences: string[] = [];
    let compared = 0;
    for (const { path } of runtimeLanes()) {
      for (const h of hostile(limit)) {
        const lane = await send(app, path, h, tokens, true);
        for (const variant of [`${path}/`, `${path}?via=express`]) {
          const express = await send(app, variant, h, tokens, true);
          compared += 1;
          if (JSON.stringify(lane) !== JSON.stringify(express))
            differences.push(
              `${path} ${h.name}: lane ${JSON.stringify(lane)}, ${variant} ${JSON.stringify(express)}`,
            );
        }
        if (Number(lane.status) >= 500)
          differences.push(`${path} ${h.name}: lane answered ${lane.status}`);
      }
    }
    expect(differences).toEqual([]);
    expect(compared).toBeGreaterThanOrEqual(runtimeLanes().length * 2 * 19);
  }, 120_000);

  it('when the table is read, then the lane serves token issuance', () => {
    expect(oauthLanes().map((r) => r.path)).toEqual(['/api/v3/auth/token']);
  });

  it('when every OAuth lane route gets every hostile form on the lane and on Express, then status, OAuth error, Content-Type, Cache-Control and challenge agree', async () => {
    const t = await makeTenant(app, ['crypto.encrypt']);
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const good = {
      grant_type: 'client_credentials',
      client_id: t.clientId,
      client_secret: t.clientSecret,
    };
    const basic = (id: string, secret: string) =>
      `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
    const cases: Array<{
      name: string;
      headers?: Record<string, string>;
      body?: string;
      chunked?: boolean;
    }> = [
      { name: 'good credentials', headers: FORM, body: form(good) },
      {
        name: 'good credentials, upper-case client id',
        headers: FORM,
        body: form({ ...good, client_id: t.clientId.toUpperCase() }),
      },
      {
        name: 'good credentials over Basic',
        headers: { ...FORM, authorization: basic(t.clientId, t.clientSecret) },
        body: form({ grant_type: 'client_credentials' }),
      },
      { name: 'no body', headers: FORM },
      { name: 'no content type', body: form(good) },
      { name: 'JSON', headers: JSON_TYPE, body: JSON.stringify(good) },
      {
        name: 'a body over 16 KiB',
        headers: FORM,
        body: form({ ...good, pad: 'A'.repeat(17_000) }),
      },
      {
        name: 'a chunked body over 16 KiB',
        headers: FORM,
        body: form({ ...good, pad: 'A'.repeat(17_000) }),
        chunked: true,
      },
      {
        name: 'a repeated parameter',
        headers: FORM,
        body: `${form(good)}&client_id=${t.clientId}`,
      },
      {
        name: 'too many parameters',
        headers: FORM,
        body: Array.from({ length: 60 }, (_, i) => `p${i}=1`).join('&'),
      },
      {
        name: 'NUL in a parameter',
        headers: FORM,
        body: form({ ...good, client_secret: 'a\u0000b' }),
      },
      {
        name: 'a lone surrogate',
        headers: FORM,
        body: `${form({ grant_type: 'client_credentials', client_id: t.clientId })}&client_secret=%ED%A0%80`,
      },
      {
        name: 'no grant type',
        headers: FORM,
        body: form({ client_id: t.clientId, client_secret: t.clientSecret }),
      },
      {
        name: 'an unknown grant type',
        headers: FORM,
        body: form({ ...good, grant_type: 'constructor' }),
      },
      { name: 'an unknown client', headers: FORM, body: form({ ...good, client_id: kid }) },
      {
        name: 'a client id that is no UUID',
        headers: FORM,
        body: form({ ...good, client_id: '__proto__' }),
      },
      { name: 'a wrong secret', headers: FORM, body: form({ ...good, client_secret: 'wrong' }) },
      {
        name: 'a wrong secret over Basic',
        headers: { ...FORM, authorization: basic(t.clientId, 'wrong') },
        body: form({ grant_type: 'client_credentials' }),
      },
      {
        name: 'Basic and form credentials both',
        headers: { ...FORM, authorization: basic(t.clientId, t.clientSecret) },
        body: form(good),
      },
      {
        name: 'a malformed Basic header',
        headers: { ...FORM, authorization: 'Basic %%%' },
        body: form({ grant_type: 'client_credentials' }),
      },
      {
        name: 'no secret',
        headers: FORM,
        body: form({ grant_type: 'client_credentials', client_id: t.clientId }),
      },
    ];
    const differences: string[] = [];
    let compared = 0;
    for (const { path } of oauthLanes()) {
      for (const c of cases) {
        const lane = await sendForm(app, path, c);
        if (Number(lane.status) >= 500)
          differences.push(`${path} ${c.name}: lane answered ${lane.status}`);
        for (const variant of [`${path}/`, `${path}?via=express`]) {
          const express = await sendForm(app, variant, c);
          compared += 1;
          if (JSON.stringify(lane) !== JSON.stringify(express))
            differences.push(
              `${path} ${c.name}: lane ${JSON.stringify(lane)}, ${variant} ${JSON.stringify(express)}`,
            );
        }
      }
    }
    expect(differences).toEqual([]);
    expect(compared).toBe(oauthLanes().length * 2 * cases.length);
  }, 120_000);
});

/** One form POST over node:http: status, the OAuth error (or the success members), Content-Type, Cache-Control and challenge. */
function sendForm(
  app: TestApp,
  path: string,
  h: { headers?: Record<string, string>; body?: string; chunked?: boolean },
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { ...h.headers };
  if (h.body !== undefined && !h.chunked)
    headers['content-length'] = String(Buffer.byteLength(h.body));
  if (h.chunked) headers['transfer-encoding'] = 'chunked';
  return new Promise((resolve, reject) => {
    const req = request(`${app.url}${path}`, { method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        resolve({
          status: res.statusCode,
          answer: res.statusCode === 200 ? Object.keys(body).sort() : body.error,
          contentType: res.headers['content-type'],
          cacheControl: res.headers['cache-control'],
          challenge: res.headers['www-authenticate'] ?? '',
        });
      });
    });
    req.on('error', reject);
    req.end(h.body);
  });
}
