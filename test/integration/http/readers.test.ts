/**
 * The readers of untrusted bytes over real sockets: the regressions of the hardening issue
 * (a truncated multipart keystore killed the process, refused uploads lost their answer, hostile
 * cursors came out as 500 or 503), then a few seconds of mutated and truncated bodies and
 * mid-body disconnects against each HTTP reader (multipart, urlencoded form, JSON on Express and
 * on the runtime lane). Every answer must be a 4xx problem (an OAuth error on /api/v3/auth),
 * nothing may be logged as a 500, and /healthz must answer after. FUZZ_SEED replays a run.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import {
  adminToken,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { prng } from '../../../support/prng.ts';
import { rawRequest, type RawAnswer } from '../../support/raw-http.ts';
import { mutateBytes } from '../../support/mutate.ts';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** Time given to each HTTP reader's mutation loop. */
const MS_PER_READER = Number(process.env.FUZZ_MS_PER_READER ?? 1500);

let app: TestApp;
let t: TestTenant;
let human: string;
let core: string;
let platform: string;

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'info' });
  t = await makeTenant(app, [
    'admin.keys.import',
    'migration.uploads.write',
    'migration.jobs.read',
    'crypto.keys.read',
    'crypto.encrypt',
    'crypto.sign',
  ]);
  human = await userToken(app, t);
  core = await workloadToken(app, t);
  platform = await adminToken(app);
}, 60_000);

afterAll(async () => {
  await app.stop();
});

/** Log lines at error level (pino 50) or above: a 500 or an unhandled failure. */
const errorLines = () =>
  app
    .logText()
    .split('\n')
    .filter((l) => /"level":(50|60)/.test(l));

const isProblem = (a: RawAnswer, status?: number) =>
  (status === undefined ? a.status >= 400 && a.status < 500 : a.status === status) &&
  String(a.headers.get('content-type')).startsWith('application/problem+json');

async function healthy(): Promise<boolean> {
  return (await fetch(`${app.url}/healthz`)).status === 200;
}

const IMPORT = () => `/api/v3/admin/tenants/${t.tenantId}/keys/import-keystore`;
const TRUNCATED_FORM =
  '--XB\r\nContent-Disposition: form-data; name="keystore"; filename="a.p12"\r\n\r\nAAAA';

describe('regressions of the hardening issue', () => {
  it('when a multipart keystore file part never reaches its closing boundary, then 400 problem and the process still answers', async () => {
    for (const [target, token] of [
      [IMPORT(), human],
      ['/api/migration/pkcs12', core],
    ] as const) {
      const a = await rawRequest(app.url, {
        method: 'POST',
        target,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'multipart/form-data; boundary=XB',
        },
        body: TRUNCATED_FORM,
      });
      expect({ target, status: a.status, problem: isProblem(a, 400) }).toEqual({
        target,
        status: 400,
        problem: true,
      });
      expect(JSON.parse(a.body).detail).toMatch(/malformed multipart body/);
    }
    expect(await healthy()).toBe(true);
  });

  it('when a multipart body ends inside a part whose headers run into the next boundary, then 400 problem instead of no answer (busboy stalled; found by the fuzzer, seed 182718901)', async () => {
    const body =
      '--XB\r\nContent-Disposition: form-data; name="kid"\r\n\r\nfuzz\r\n--XB\r\nContent-Disposition: form-data; name="keystore"; filename="k.pem"\r\nContent-Type: application/x-pem-fiz\r\n' +
      '--XB\r\nContent-Disposition: form-data; name="keystore"; filename="k.pem"\r\nContent-Type: application/x-pem-file\r\n\r\n-----BEGIN PRIVATE KEY-----\r\nMC4CAQAwBQYDK2VwBCIEIK1f0uU7e0V6R3cC7f2b1cWkq3zVtX3Y5n0b0Q1bZ7mE\r\n-----END PRIVATE KEY-----\r\n--XB--\r\n';
    const a = await rawRequest(app.url, {
      method: 'POST',
      target: IMPORT(),
      headers: {
        authorization: `Bearer ${human}`,
        'content-type': 'multipart/form-data; boundary=XB',
      },
      body,
      deadlineMs: 5000,
    });
    expect({ hung: a.hung, problem: isProblem(a, 400) }).toEqual({ hung: false, problem: true });
  });

  it('when a multipart keystore part is over the size cap, then 413 problem is written before the connection closes', async () => {
    const big = Buffer.concat([
      Buffer.from(
        '--XB\r\nContent-Disposition: form-data; name="keystore"; filename="a.p12"\r\n\r\n',
      ),
      Buffer.alloc(1024 * 1024 + 10, 0x41),
      Buffer.from('\r\n--XB--\r\n'),
    ]);
    const a = await rawRequest(app.url, {
      method: 'POST',
      target: IMPORT(),
      headers: {
        authorization: `Bearer ${human}`,
        'content-type': 'multipart/form-data; boundary=XB',
      },
      body: big,
    });
    expect(isProblem(a, 413)).toBe(true);
  });

  it.each([
    ['a/../x', /'\.' or '\.\.' segment/],
    ['.', /'\.' or '\.\.' segment/],
    ['a//b', /empty segment/],
    ['a%00b', /control character|NUL/],
    ['x'.repeat(1100), /longer than 1024 bytes/],
  ])(
    'when an upload is named %j, then the 400 problem is written before the connection is closed',
    async (name, reason) => {
      const a = await rawRequest(app.url, {
        method: 'PUT',
        target: `/api/v3/migration/uploads/${name}`,
        headers: { authorization: `Bearer ${core}`, 'content-type': 'application/octet-stream' },
        body: 'some bytes',
      });
      expect({ status: a.status, reset: a.reset, problem: isProblem(a) }).toEqual({
        status: 400,
        reset: false,
        problem: true,
      });
      expect(JSON.parse(a.body).detail).toMatch(reason);
    },
  );

  it('when a refused upload is still sending its body, then the client reads the 400 and is asked to close', async () => {
    const a = await rawRequest(app.url, {
      method: 'PUT',
      target: '/api/v3/migration/uploads/a/../x',
      headers: { authorization: `Bearer ${core}` },
      body: Buffer.alloc(64 * 1024, 1),
      contentLength: 10 * 1024 * 1024,
    });
    expect({ status: a.status, connection: a.headers.get('connection') }).toEqual({
      status: 400,
      connection: 'close',
    });
  });

  it('when the revoked-token list gets a cursor holding NUL or longer than any jti, then 400 problem, never 500', async () => {
    for (const cursor of ['a%00b', '%01', 'j'.repeat(129)]) {
      const a = await rawRequest(app.url, {
        method: 'GET',
        target: `/api/v3/admin/platform/tokens/revoked?cursor=${cursor}`,
        headers: { authorization: `Bearer ${platform}` },
      });
      expect({ cursor, status: a.status, problem: isProblem(a) }).toEqual({
        cursor,
        status: 400,
        problem: true,
      });
    }
  });

  it('when a bare jti to force-revoke holds a control character, then 400 problem, never 500', async () => {
    const res = await fetch(`${app.url}/api/v3/admin/platform/tokens/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${platform}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jti: 'a\u0001b' }),
    });
    expect(res.status).toBe(400);
  });

  it('when a job-children cursor holds a huge or non-decimal offset, then 400 before the queue is asked (it was 503 queue-unavailable)', async () => {
    const id = `bt-${'0'.repeat(40)}`;
    for (const offset of ['1e300', '99999999999999999999', '0x10', '-1', '1.5', ' 1']) {
      const cursor = Buffer.from(offset).toString('base64url');
      const a = await rawRequest(app.url, {
        method: 'GET',
        target: `/api/v3/migration/jobs/${id}/children?cursor=${cursor}`,
        headers: { authorization: `Bearer ${core}` },
      });
      expect({ offset, status: a.status, problem: isProblem(a) }).toEqual({
        offset,
        status: 400,
        problem: true,
      });
    }
  });

  it('never logged anything as a 500 above', () => {
    expect(errorLines()).toEqual([]);
  });
});

/** Inserts worth trying in form, JSON and multipart bodies (test/support/mutate.ts does the rest). */
const INSERTS = [
  Buffer.from('\r\n'),
  Buffer.from('%'),
  Buffer.from('&&=='),
  Buffer.from('{"a":'),
  Buffer.from('\u0000'),
  Buffer.from('\uFEFF'),
  Buffer.alloc(70_000, 0x61),
];

interface Reader {
  name: string;
  target: () => string;
  token: () => string;
  contentType: string;
  seed: () => Buffer;
  /** Statuses a well-formed body may get besides the 4xx refusals. */
  ok: number[];
  /** The refusal's shape: a problem, or an OAuth error on /api/v3/auth. */
  oauth?: boolean;
}

const READERS: Reader[] = [
  {
    name: 'multipart keystore import',
    target: IMPORT,
    token: () => human,
    contentType: 'multipart/form-data; boundary=XB',
    ok: [201],
    seed: () =>
      Buffer.from(
        '--XB\r\nContent-Disposition: form-data; name="kid"\r\n\r\nfuzz\r\n--XB\r\nContent-Disposition: form-data; name="keystore"; filename="k.pem"\r\nContent-Type: application/x-pem-file\r\n\r\n' +
          '-----BEGIN PRIVATE KEY-----\r\nMC4CAQAwBQYDK2VwBCIEIK1f0uU7e0V6R3cC7f2b1cWkq3zVtX3Y5n0b0Q1bZ7mE\r\n-----END PRIVATE KEY-----\r\n--XB--\r\n',
      ),
  },
  {
    name: 'urlencoded token form',
    target: () => '/api/v3/auth/token',
    token: () => '',
    contentType: 'application/x-www-form-urlencoded',
    ok: [200],
    oauth: true,
    seed: () =>
      Buffer.from(
        new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: t.clientId,
          client_secret: t.clientSecret,
          scope: 'crypto.encrypt',
        }).toString(),
      ),
  },
  {
    name: 'JSON on Express',
    target: () => '/api/v3/admin/platform/tokens/revoke',
    token: () => platform,
    contentType: 'application/json',
    ok: [200],
    seed: () => Buffer.from(JSON.stringify({ jti: 'fuzz-jti', reason: 'fuzzing the JSON reader' })),
  },
  {
    name: 'JSON on the runtime lane',
    target: () => '/api/v3/crypto/encrypt',
    token: () => core,
    contentType: 'application/json',
    ok: [200],
    seed: () =>
      Buffer.from(
        JSON.stringify({ kid: 'no-such-key', plaintext: Buffer.from('hello').toString('base64') }),
      ),
  },
];

describe(`fuzzing the HTTP readers over real sockets for ${MS_PER_READER} ms each (FUZZ_SEED=${SEED})`, () => {
  it.each(READERS.map((r) => [r.name, r] as const))(
    'when the %s gets mutated, truncated and abandoned bodies, then 4xx refusals in its shape, nothing logged as a 500, and /healthz answers',
    async (_name, reader) => {
      const rand = prng(SEED);
      const int = (n: number) => Math.floor(rand() * n);
      const failures: string[] = [];
      const tally: Record<string, number> = {};
      const stopAt = Date.now() + MS_PER_READER;
      async function one(): Promise<void> {
        const { data, how } = mutateBytes(rand, reader.seed(), { inserts: INSERTS });
        const style = int(10);
        // 0: the declared length is larger and the client goes away; 1: it goes away mid-body.
        const cut =
          style === 0
            ? { contentLength: data.length + 1 + int(1000), abortAfterMs: 20 }
            : style === 1
              ? {
                  body: data.subarray(0, int(data.length)),
                  contentLength: data.length,
                  abortAfterMs: 0,
                }
              : {};
        const contentType =
          int(12) === 0
            ? [
                'text/plain',
                'application/json; charset=utf-16',
                'multipart/form-data',
                'application/x-www-form-urlencoded; charset=latin1',
              ][int(4)]
            : reader.contentType;
        const headers: Record<string, string> = {
          'content-type': contentType,
          ...(reader.token() ? { authorization: `Bearer ${reader.token()}` } : {}),
        };
        const a = await rawRequest(app.url, {
          method: 'POST',
          target: reader.target(),
          headers,
          body: data,
          ...cut,
        });
        const label = `${how}${style < 2 ? ` (client gone, style ${style})` : ''}, ${contentType}`;
        const key = style < 2 ? 'client gone' : a.hung ? 'hung' : String(a.status);
        tally[key] = (tally[key] ?? 0) + 1;
        if (style < 2) return;
        let shaped = false;
        try {
          const body = JSON.parse(a.body);
          shaped = reader.oauth
            ? typeof body.error === 'string'
            : String(a.headers.get('content-type')).startsWith('application/problem+json') &&
              body.status === a.status;
        } catch {
          shaped = false;
        }
        const refused = a.status >= 400 && a.status < 500 && shaped;
        if (!refused && !reader.ok.includes(a.status))
          failures.push(`${label} → ${key} ${a.body.slice(0, 200)}`);
      }
      while (Date.now() < stopAt && failures.length < 5) await Promise.all([one(), one()]);
      console.log(`${reader.name} fuzz, seed ${SEED}: ${JSON.stringify(tally)}`);
      expect(failures).toEqual([]);
      // The run is bounded in time, not count: on a loaded machine a few requests is all it gets.
      expect(Object.values(tally).reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
      expect(await healthy()).toBe(true);
      expect(errorLines()).toEqual([]);
    },
    MS_PER_READER + 30_000,
  );
});

describe('refusals come before the body', () => {
  it('when a JSON body announces more than the cap and stops sending, then 413 arrives at once with Connection: close (it waited for the whole body)', async () => {
    const a = await rawRequest(app.url, {
      method: 'POST',
      target: '/api/v3/admin/platform/tokens/revoke',
      headers: { authorization: `Bearer ${platform}`, 'content-type': 'application/json' },
      body: '{"jti":"',
      contentLength: 50 * 1024 * 1024,
      deadlineMs: 3000,
    });
    expect({
      status: a.status,
      hung: a.hung,
      connection: a.headers.get('connection'),
      problem: isProblem(a, 413),
    }).toEqual({ status: 413, hung: false, connection: 'close', problem: true });
  });

  it('when a token request announces more than 16 KiB, then the OAuth error arrives at once with Connection: close', async () => {
    const a = await rawRequest(app.url, {
      method: 'POST',
      target: '/api/v3/auth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=',
      contentLength: 50 * 1024 * 1024,
      deadlineMs: 3000,
    });
    expect({
      status: a.status,
      connection: a.headers.get('connection'),
      error: JSON.parse(a.body || '{}').error,
    }).toEqual({ status: 400, connection: 'close', error: 'invalid_request' });
  });

  it.each([
    [
      'files',
      (i: number) =>
        `--XB\r\nContent-Disposition: form-data; name="f${i}"; filename="f${i}"\r\n\r\nx\r\n`,
      /more than 4 files/,
    ],
    [
      'fields',
      (i: number) => `--XB\r\nContent-Disposition: form-data; name="v${i}"\r\n\r\nx\r\n`,
      /more than 20 fields/,
    ],
    ['parts without a disposition', () => '--XB\r\nX-Other: 1\r\n\r\nx\r\n', /more than 24 parts/],
  ])(
    'when a keystore form has more %s than its caps and goes on, then 400 before the end of the body (busboy skipped them and read on)',
    async (_what, part, reason) => {
      const body = Array.from({ length: 30 }, (_, i) => part(i)).join('');
      const a = await rawRequest(app.url, {
        method: 'POST',
        target: IMPORT(),
        headers: {
          authorization: `Bearer ${human}`,
          'content-type': 'multipart/form-data; boundary=XB',
        },
        body,
        contentLength: 50 * 1024 * 1024,
        deadlineMs: 3000,
      });
      expect({ status: a.status, hung: a.hung, connection: a.headers.get('connection') }).toEqual({
        status: 400,
        hung: false,
        connection: 'close',
      });
      expect(JSON.parse(a.body).detail).toMatch(reason);
    },
  );

  it('when a keystore field is over 64 KiB, then 413 instead of a silently cut value', async () => {
    const body = `--XB\r\nContent-Disposition: form-data; name="keystore"\r\n\r\n${'A'.repeat(70_000)}\r\n--XB--\r\n`;
    const a = await rawRequest(app.url, {
      method: 'POST',
      target: IMPORT(),
      headers: {
        authorization: `Bearer ${human}`,
        'content-type': 'multipart/form-data; boundary=XB',
      },
      body,
    });
    expect(isProblem(a, 413)).toBe(true);
  });
});
