/**
 * Slow and greedy clients (an unauthenticated client held 200 stalled token
 * bodies open for good, and 640 of them left /healthz unanswerable). With small limits (idle 1 s,
 * small bodies 2 s, headers 1 s, 5 connections per address, 20 in all): stalled and trickling
 * bodies answer 408 and close, on the runtime lane and on Express; stalled headers close; a slow
 * upload that keeps sending is not cut; connections over a cap answer 503 with Retry-After while
 * another address is served and /healthz answers. Every wait below is a hang guard, not a timing
 * assertion: the assertions are on what came back.
 */
import { connect, type Socket } from 'node:net';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { makeTenant, workloadToken } from '../../../support/auth.ts';
import { sleep } from '../../support/time.ts';

/** Longest any single exchange may take before the test calls it hung. */
const HANG_MS = 10_000;

let app: TestApp;
let core: string;
let port: number;
const sockets = new Set<Socket>();

beforeAll(async () => {
  app = await startTestApp({
    BODY_IDLE_TIMEOUT_MS: '1000',
    SMALL_BODY_TIMEOUT_MS: '2000',
    HEADERS_TIMEOUT_MS: '1000',
    MAX_CONNECTIONS_PER_ADDRESS: '5',
    MAX_CONNECTIONS: '20',
    CONNECTION_RESERVE: '8',
  });
  port = Number(new URL(app.url).port);
  const t = await makeTenant(app, ['migration.uploads.write', 'crypto.encrypt']);
  core = await workloadToken(app, t);
}, 60_000);

afterEach(async () => {
  const closed = [...sockets].map(
    (s) => new Promise((resolve) => (s.destroyed ? resolve(null) : s.once('close', resolve))),
  );
  for (const s of sockets) s.destroy();
  sockets.clear();
  await Promise.all(closed);
  // The server counts a connection out when it sees the close: give it a turn to.
  await sleep(200);
});

afterAll(async () => {
  await app.stop();
});

/** A connection to the API from `localAddress` (127.0.0.x), destroyed after each test. */
async function open(localAddress = '127.0.0.1'): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  sockets.add(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve).once('error', reject);
  });
  return socket;
}

interface Seen {
  status: number;
  headers: Map<string, string>;
  body: string;
  /** The server closed the connection (rather than the hang guard giving up). */
  closed: boolean;
}

/** What the server sends on `socket` until it closes it, or until one whole answer when `one`. */
function answer(socket: Socket, one = false): Promise<Seen> {
  return new Promise((resolve) => {
    let raw = '';
    const seen = (closed: boolean): Seen => {
      const end = raw.indexOf('\r\n\r\n');
      const head = end === -1 ? raw : raw.slice(0, end);
      const headers = new Map<string, string>();
      for (const line of head.split('\r\n').slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0)
          headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
      }
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      return { status, headers, body: end === -1 ? '' : raw.slice(end + 4), closed };
    };
    const done = (closed: boolean) => {
      clearTimeout(guard);
      socket.off('data', onData);
      resolve(seen(closed));
    };
    const guard = setTimeout(() => done(false), HANG_MS);
    const onData = (c: Buffer) => {
      raw += c.toString('latin1');
      const s = seen(false);
      const length = Number(s.headers.get('content-length'));
      if (one && s.status && Number.isInteger(length) && Buffer.byteLength(s.body) >= length)
        done(false);
    };
    socket.on('data', onData);
    socket.once('close', () => done(true));
    socket.on('error', () => undefined);
  });
}

const head = (method: string, target: string, headers: Record<string, string>) =>
  `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': '1000' };

/** A kept-alive connection that has had one answer: it holds a slot and nothing else. */
async function held(localAddress: string): Promise<Socket> {
  const socket = await open(localAddress);
  const a = answer(socket, true);
  socket.write(head('GET', '/healthz', {}));
  expect((await a).status).toBe(200);
  return socket;
}

describe('bodies that stall', () => {
  it.each([
    ['the runtime lane', '/api/v3/auth/token'],
    ['Express', '/api/v3/auth/token?via=express'],
  ])(
    'when a token request on %s sends 11 of its 1000 bytes and stops, then 408 in the OAuth shape and the connection closes',
    async (_stack, target) => {
      const socket = await open();
      const a = answer(socket);
      socket.write(head('POST', target, FORM) + 'grant_type=');
      const seen = await a;
      expect(seen).toMatchObject({ status: 408, closed: true });
      expect(seen.headers.get('connection')).toBe('close');
      expect(JSON.parse(seen.body)).toMatchObject({ error: 'invalid_request' });
    },
  );

  it('when a JSON body on the runtime lane stalls, then 408 request-timeout as a problem and the connection closes', async () => {
    const socket = await open();
    const a = answer(socket);
    socket.write(
      head('POST', '/api/v3/crypto/encrypt', {
        Authorization: `Bearer ${core}`,
        'Content-Type': 'application/json',
        'Content-Length': '500',
      }) + '{"kid":',
    );
    const seen = await a;
    expect(seen).toMatchObject({ status: 408, closed: true });
    expect(seen.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(seen.body).type).toMatch(/\/problems\/request-timeout$/);
  });

  it('when a token body trickles a byte at a time, each within the idle time, then the small-body deadline answers 408', async () => {
    const socket = await open();
    const a = answer(socket);
    socket.write(head('POST', '/api/v3/auth/token', FORM));
    const drip = setInterval(() => socket.writable && socket.write('a'), 300);
    const seen = await a;
    clearInterval(drip);
    expect(seen).toMatchObject({ status: 408, closed: true });
  });

  it('when an unauthenticated body on Express is refused (401) and then stalls, then the connection still closes', async () => {
    const socket = await open();
    const a = answer(socket);
    socket.write(
      head('POST', '/api/v3/crypto/encrypt?via=express', {
        'Content-Type': 'application/json',
        'Content-Length': '500',
      }) + '{"kid":',
    );
    expect(await a).toMatchObject({ status: 401, closed: true });
  });

  it('when the headers never end, then the connection closes', async () => {
    const socket = await open();
    const a = answer(socket);
    socket.write('POST /api/v3/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const seen = await a;
    expect(seen.closed).toBe(true);
    expect([0, 408]).toContain(seen.status);
  });

  it('when an upload keeps sending small chunks for longer than the small-body deadline, then it is stored whole', async () => {
    const chunks = 12;
    const socket = await open();
    const a = answer(socket, true);
    socket.write(
      head('PUT', '/api/v3/migration/uploads/slow-but-steady.bin', {
        Authorization: `Bearer ${core}`,
        'Content-Type': 'application/octet-stream',
        'Content-Length': String(chunks * 100),
      }),
    );
    // 12 chunks 300 ms apart: about 3.6 s in all, past the 2 s deadline, never 1 s idle.
    for (let i = 0; i < chunks; i += 1) {
      await sleep(300);
      socket.write(Buffer.alloc(100, i));
    }
    const seen = await a;
    expect(seen.status).toBe(201);
    expect(JSON.parse(seen.body)).toMatchObject({ size: chunks * 100 });
  });
});

describe('connection caps', () => {
  it('when one address holds its 5 connections, then its next request answers 503 with Retry-After (in the OAuth shape on the Auth API and the legacy login), another address is served, and /healthz still answers', async () => {
    for (let i = 0; i < 5; i += 1) await held('127.0.0.2');

    const over = await open('127.0.0.2');
    const refused = answer(over);
    over.write(head('POST', '/api/v3/crypto/encrypt', { 'Content-Length': '0' }));
    const r = await refused;
    expect(r).toMatchObject({ status: 503, closed: true });
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(JSON.parse(r.body).type).toMatch(/\/problems\/too-many-connections$/);

    const oauth = await open('127.0.0.2');
    const refusedToken = answer(oauth);
    oauth.write(head('POST', '/api/v3/auth/token', { ...FORM, 'Content-Length': '0' }));
    const t = await refusedToken;
    expect(t.status).toBe(503);
    expect(JSON.parse(t.body)).toMatchObject({ error: 'temporarily_unavailable' });

    // The legacy login answers in the OAuth shape too, as its rows and its unknown paths do.
    const login = await open('127.0.0.2');
    const refusedLogin = answer(login);
    login.write(
      head('POST', '/api/authenticate/app', {
        'Content-Type': 'application/json',
        'Content-Length': '0',
      }),
    );
    const l = await refusedLogin;
    expect(l.status).toBe(503);
    expect(JSON.parse(l.body)).toMatchObject({ error: 'temporarily_unavailable' });
    expect(l.headers.get('cache-control')).toBe('no-store');

    const probe = await open('127.0.0.2');
    const health = answer(probe);
    probe.write(head('GET', '/healthz', {}));
    expect(await health).toMatchObject({ status: 200, closed: true });

    const other = await open('127.0.0.3');
    const served = answer(other, true);
    other.write(head('POST', '/api/v3/auth/token', { ...FORM, 'Content-Length': '0' }));
    expect((await served).status).toBe(400);

    expect(app.logText()).toMatch(/connections refused over the caps/);
  });

  it('when all addresses together hold 20 connections, then a new address answers 503 but /healthz and /readyz still answer', async () => {
    for (const address of ['127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'])
      for (let i = 0; i < 5; i += 1) await held(address);

    const fresh = await open('127.0.0.8');
    const refused = answer(fresh);
    fresh.write(head('GET', '/api/v3/crypto/keys', {}));
    const r = await refused;
    expect(r).toMatchObject({ status: 503, closed: true });
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/);

    for (const path of ['/healthz', '/readyz']) {
      const probe = await open('127.0.0.8');
      const health = answer(probe);
      probe.write(head('GET', path, {}));
      expect(await health).toMatchObject({ status: 200, closed: true });
    }
  });
});
