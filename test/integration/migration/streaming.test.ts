import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import {
  CONVERT,
  OpenSslDir,
  convert,
  importKey,
  makeActor,
  makeKey,
  openJwe,
  startTestApp,
} from './helpers.ts';
import type { Actor, TestApp, TestKey } from './helpers.ts';
import { sleep } from '../../support/time.ts';
import { cms } from '../../../support/fixtures/cms.ts';

const MiB = 1024 * 1024;

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let rsa: TestKey;
let envelope: Buffer;

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'stream-rsa', 'rsa-2048');
  actor = await makeActor(app);
  await importKey(app, actor, ssl, rsa);
  ssl.write('big.bin', randomBytes(96 * MiB));
  envelope = cms.encrypt(ssl, 'big.bin', {
    to: { recip: rsa },
    cipher: 'aes-256-cbc',
    binary: true,
    stream: true,
    outform: 'DER',
  });
}, 120_000);

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

/** A convert request whose file part the test writes itself, honouring backpressure. */
function startUpload(): {
  req: ClientRequest;
  written: () => number;
  send: () => Promise<void>;
  response: Promise<IncomingMessage>;
} {
  const boundary = 'streaming-test-boundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const u = new URL(`${app.url}${CONVERT}`);
  const req = request({
    host: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'POST',
    headers: {
      authorization: `Bearer ${actor.user}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + envelope.length + tail.length),
    },
  });
  let written = 0;
  const response = once(req, 'response').then(([res]) => res as IncomingMessage);
  req.on('error', () => {});
  return {
    req,
    written: () => written,
    response,
    async send() {
      req.write(head);
      for (let p = 0; p < envelope.length; p += MiB) {
        const piece = envelope.subarray(p, p + MiB);
        written += piece.length;
        if (!req.write(piece)) await Promise.race([once(req, 'drain'), once(req, 'close')]);
        if (req.destroyed) return;
      }
      req.end(tail);
    },
  };
}

describe('streaming with backpressure', () => {
  it('when the client does not read the answer, then the server stops reading the upload, and resumes when the client reads again', async () => {
    const up = startUpload();
    const sending = up.send();
    const res = await up.response;
    expect(res.statusCode).toBe(200);
    res.pause();
    // Let every buffer on the way fill up: socket buffers both ways, busboy, the engine.
    let before = -1;
    while (before !== up.written()) {
      before = up.written();
      await sleep(500);
    }
    console.log(
      `paused: ${(up.written() / MiB).toFixed(1)} MiB of ${(envelope.length / MiB).toFixed(1)} MiB sent`,
    );
    expect(up.written()).toBeLessThan(envelope.length / 2);
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.resume();
    await Promise.all([sending, once(res, 'end')]);
    expect(up.written()).toBe(envelope.length);
    const body = Buffer.concat(chunks);
    const jwe = await openJwe(
      {
        status: 200,
        headers: new Headers({ 'content-type': String(res.headers['content-type']) }),
        body,
        cut: false,
        json: () => ({}) as never,
      },
      rsa.privateKey,
    );
    expect(jwe.closed).toBe(true);
    expect(jwe.plaintext.length).toBe(96 * MiB);
  }, 120_000);

  it('when the client goes away in the middle of the upload, then the conversion stops, is logged as failed, and the service keeps answering', async () => {
    const up = startUpload();
    const sending = up.send();
    await up.response;
    while (up.written() < 8 * MiB) await sleep(20);
    up.req.destroy();
    await sending;
    await sleep(300);
    const failed = app
      .logText()
      .split('\n')
      .filter((l) => l.includes('"op":"migration.convert"') && l.includes('"outcome":"failure"'));
    expect(failed.length).toBeGreaterThan(0);
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    ssl.write('small.bin', randomBytes(1000));
    const ok = await convert(
      app,
      actor.user,
      cms.encrypt(ssl, 'small.bin', {
        to: { recip: rsa },
        cipher: 'aes-256-cbc',
        binary: true,
        outform: 'DER',
      }),
    );
    expect(ok.status).toBe(200);
  }, 60_000);
});
