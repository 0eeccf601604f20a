/**
 * Conversions on the conversion threads (CONVERT_THREADS, api/threads/conversions.ts): several
 * at once give outputs the jose library opens, every bad input answers the same problem as on the
 * event loop, a client that leaves frees its thread, and a thread that throws or dies answers a
 * problem (or cuts an answer already begun) without taking the process down.
 */
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { createPool } from '../../../api/threads/pool.ts';
import { conversionRunner } from '../../../api/threads/conversions.ts';
import {
  CONVERT,
  OpenSslDir,
  convert,
  formBody,
  importKey,
  makeActor,
  makeKey,
  openJwe,
  publicOf,
  startTestApp,
  verifyDetached,
} from './helpers.ts';
import type { Actor, Answer, Jws, TestApp, TestKey } from './helpers.ts';
import { withBadPadding } from '../../support/damage.ts';
import { sleep } from '../../support/time.ts';
import { cms } from '../../../support/fixtures/cms.ts';

const MiB = 1024 * 1024;

let threaded: TestApp;
let onLoop: TestApp;
let ssl: OpenSslDir;
let rsa: TestKey;
const actors = new Map<TestApp, Actor>();

beforeAll(async () => {
  // One thread: a conversion that did not free its thread would leave the next one waiting.
  threaded = await startTestApp({ CONVERT_THREADS: '1', CONVERT_THREAD_FROM: '1' });
  onLoop = await startTestApp({ CONVERT_THREADS: '0' });
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'threads-rsa', 'rsa-2048');
  for (const app of [threaded, onLoop]) {
    const actor = await makeActor(app);
    // One key per certificate and usage: the first is narrowed to encrypt, the second signs.
    await importKey(app, actor, ssl, rsa, 'encrypt');
    await importKey(app, actor, ssl, { ...rsa, kid: 'threads-rsa-signer' }, 'sign');
    actors.set(app, actor);
  }
  // A hang guard, not a timing bound: two apps, an RSA key and four imports took over 60 s at a
  // load average of 20 on 2 cores (a helper's run), and passed alone right after.
}, 180_000);

afterAll(async () => {
  ssl.cleanup();
  await threaded.stop();
  await onLoop.stop();
});

const enveloped = (name: string, args: string[] = []) =>
  cms.encrypt(ssl, name, {
    to: { recip: rsa },
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
    extra: args,
  });
const signed = (name: string, args: string[] = ['-nodetach']) =>
  cms.sign(ssl, name, { by: rsa, binary: true, outform: 'DER', extra: args });

/** The tenant a problem names: each of the two services has a tenant of its own. */
const withoutTenant = (body: Record<string, unknown>) =>
  typeof body.detail === 'string'
    ? { ...body, detail: body.detail.replace(/in tenant [0-9a-f-]{36}/, 'in tenant <tenant>') }
    : body;

/** The parts of a problem answer that must not depend on where the conversion ran. */
const problemOf = (a: Answer) => ({
  status: a.status,
  contentType: a.headers.get('content-type'),
  body: a.status === 200 ? null : withoutTenant({ ...a.json(), instance: undefined }),
});

describe('conversions on the conversion threads', () => {
  it('when four conversions run at once on one thread, then each answer opens with jose to its own content', async () => {
    expect(threaded.ctx.conversions.pool).not.toBeNull();
    const contents = [0, 1, 2, 3].map((i) => {
      const data = randomBytes(3 * MiB + i * 1000);
      ssl.write(`multi-${i}.bin`, data);
      return data;
    });
    const files = contents.map((_, i) =>
      i === 3 ? signed(`multi-${i}.bin`, ['-nodetach', '-stream']) : enveloped(`multi-${i}.bin`),
    );
    const user = actors.get(threaded)!.user;
    const answers = await Promise.all(files.map((f) => convert(threaded, user, f)));
    for (const [i, a] of answers.entries()) {
      expect(a.status).toBe(200);
      if (i === 3) {
        await verifyDetached(a.json<Jws>(), contents[i], publicOf(rsa));
      } else {
        const jwe = await openJwe(a, rsa.privateKey);
        expect(jwe.closed).toBe(true);
        expect(jwe.plaintext.equals(contents[i])).toBe(true);
      }
    }
  }, 60_000);

  it('when bad inputs are converted, then the threads answer the very problems the event loop answers', async () => {
    const data = randomBytes(20_000);
    ssl.write('bad.bin', data);
    const good = enveloped('bad.bin');
    const flipped = withBadPadding(good);
    const sig = signed('bad.bin');
    const stranger = makeKey(ssl, 'stranger', 'rsa-2048');
    const cases: Array<[string, Buffer, Record<string, unknown>?, Buffer?]> = [
      ['random bytes', randomBytes(3000)],
      ['a truncated SignedData', sig.subarray(0, sig.length - 3000)],
      ['a certificate', ssl.run(['x509', '-in', rsa.certFile, '-outform', 'DER'])],
      ['a JSON file', Buffer.from('{"not":"cms"}')],
      [
        'a key not imported',
        cms.encrypt(ssl, 'bad.bin', { to: { recip: stranger }, binary: true, outform: 'DER' }),
      ],
      ['a content whose padding is broken', flipped],
      ['an unknown signerKid', sig, { signerKid: 'nope' }],
      ['a bad contentEncryption', good, { contentEncryption: 'A1GCM' }],
      ['a content part with an EnvelopedData', good, {}, data],
      ['detached content that was not signed', signed('bad.bin', []), {}, randomBytes(100)],
    ];
    for (const [what, file, metadata, content] of cases) {
      const [a, b] = await Promise.all(
        [threaded, onLoop].map((app) =>
          convert(app, actors.get(app)!.user, file, metadata, content),
        ),
      );
      expect({ what, ...problemOf(a) }).toEqual({ what, ...problemOf(b) });
      expect(a.status).toBeGreaterThanOrEqual(400);
    }
  }, 60_000);
});

/** Starts a convert upload of `file` with node:http, writing it with backpressure. */
function upload(
  app: TestApp,
  file: Buffer,
): { req: ReturnType<typeof request>; written: () => number; sending: Promise<void> } {
  const { body, contentType } = formBody([
    ['metadata', '{}'],
    ['file', file],
  ]);
  const u = new URL(`${app.url}${CONVERT}`);
  const req = request({
    host: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'POST',
    headers: {
      authorization: `Bearer ${actors.get(app)!.user}`,
      'content-type': contentType,
      'content-length': String(body.length),
    },
  });
  req.on('error', () => {});
  let written = 0;
  const sending = (async () => {
    for (let p = 0; p < body.length && !req.destroyed; p += MiB) {
      const piece = body.subarray(p, p + MiB);
      written += piece.length;
      // once() rejects on 'error', which a destroyed request emits: the loop then just ends.
      if (!req.write(piece))
        await Promise.race([once(req, 'drain'), once(req, 'close')]).catch(() => {});
    }
    if (!req.destroyed) req.end();
  })();
  return { req, written: () => written, sending };
}

describe('a client that leaves', () => {
  let big: Buffer;
  let plain: Buffer;
  beforeAll(() => {
    plain = randomBytes(48 * MiB);
    ssl.write('big.bin', plain);
    big = enveloped('big.bin', ['-stream']);
  });

  /** The one thread converts again: a leaked task would keep it and this would time out. */
  async function stillConverts(): Promise<void> {
    ssl.write('after.bin', randomBytes(5000));
    const a = await convert(threaded, actors.get(threaded)!.user, enveloped('after.bin'));
    expect(a.status).toBe(200);
    expect(threaded.ctx.conversions.pool!.threads()).toBeLessThanOrEqual(1);
    expect(threaded.ctx.conversions.pool!.queueSize()).toBe(0);
  }

  it('when the client goes away in the middle of the upload, then its thread is freed and the next conversions complete', async () => {
    const up = upload(threaded, big);
    while (up.written() < 8 * MiB) await sleep(10);
    up.req.destroy();
    await up.sending;
    await stillConverts();
    await stillConverts();
    const lines = threaded
      .logText()
      .split('\n')
      .filter((l) => l.includes('"op":"migration.convert"') && l.includes('"aborted":true'));
    expect(lines.length).toBeGreaterThan(0);
  }, 60_000);

  it('when the client stops reading the answer and goes away, then its thread is freed and the next conversions complete', async () => {
    const up = upload(threaded, big);
    const [res] = (await once(up.req, 'response')) as [IncomingMessage];
    expect(res.statusCode).toBe(200);
    let got = 0;
    res.on('data', (c: Buffer) => {
      got += c.length;
      if (got > 4 * MiB) res.destroy();
    });
    await once(res, 'close');
    up.req.destroy();
    await up.sending;
    await stillConverts();
  }, 60_000);
});

describe('a conversion thread that fails', () => {
  let saved: TestApp['ctx']['conversions'];
  beforeAll(() => {
    saved = threaded.ctx.conversions;
    const failing = createPool({
      threads: 1,
      maxQueue: 8,
      label: 'conversion pool',
      filename: new URL('../../fixtures/failing-convert-task.ts', import.meta.url).href,
    });
    threaded.ctx.conversions = conversionRunner(failing, 1);
  });
  afterAll(async () => {
    await threaded.ctx.conversions.pool!.close();
    threaded.ctx.conversions = saved;
  });

  const file = () => {
    ssl.write('fail.bin', randomBytes(1000));
    return enveloped('fail.bin');
  };

  it.each(['throw', 'exit'])(
    'when the thread fails with %s before the answer, then 500 internal-error problem and the process keeps serving',
    async (mode) => {
      const a = await convert(threaded, actors.get(threaded)!.user, file(), {
        recipientKid: mode,
      });
      expect(a.status).toBe(500);
      expect(a.headers.get('content-type')).toContain('application/problem+json');
      expect(a.json().type).toMatch(/\/problems\/internal-error$/);
      expect((await fetch(`${threaded.url}/healthz`)).status).toBe(200);
    },
  );

  it('when the thread dies in the middle of the answer, then the answer is cut and the process keeps serving', async () => {
    const a = await convert(threaded, actors.get(threaded)!.user, file(), {
      recipientKid: 'exit-mid-body',
    });
    expect(a.status).toBe(200);
    expect(a.cut).toBe(true);
    expect((await fetch(`${threaded.url}/healthz`)).status).toBe(200);
  });
});
