import { randomBytes } from 'node:crypto';
import {
  ANALYZE,
  CONVERT,
  OpenSslDir,
  convert,
  importKey,
  makeActor,
  makeKey,
  postParts,
  postRaw,
  startTestApp,
} from './helpers.ts';
import type { Actor, Answer, TestApp, TestKey } from './helpers.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let rsa: TestKey;
let data: Buffer;

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'bad-rsa', 'rsa-2048');
  actor = await makeActor(app);
  // One certificate, imported once per usage: the CMS signer resolves to the sign key, the
  // recipient to the encrypt key.
  await importKey(app, actor, ssl, rsa, 'encrypt');
  await importKey(app, actor, ssl, { ...rsa, kid: 'bad-rsa-signer' }, 'sign');
  data = randomBytes(20_000);
  ssl.write('data.bin', data);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

const signed = (args: string[] = ['-nodetach']) =>
  cms.sign(ssl, 'data.bin', { by: rsa, binary: true, outform: 'DER', extra: args });
const enveloped = (args: string[] = []) =>
  cms.encrypt(ssl, 'data.bin', {
    to: { recip: rsa },
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
    extra: args,
  });

function expectProblem(r: Answer, status: number, slug: string): void {
  expect(r.status).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.json()).toMatchObject({
    status,
    type: expect.stringMatching(new RegExp(`/problems/${slug}$`)),
    instance: expect.stringMatching(/^\/api\//),
  });
}

describe('bad CMS inputs over HTTP, to analyze and convert alike', () => {
  const cases: Array<{ name: string; input: () => Buffer; status: number; slug: string }> = [
    { name: 'random bytes', input: () => randomBytes(3000), status: 400, slug: 'cms-malformed' },
    {
      name: 'a SignedData truncated in its middle',
      input: () => signed().subarray(0, 9000),
      status: 400,
      slug: 'cms-truncated',
    },
    {
      name: 'a certificate instead of CMS',
      input: () => rsa.certificate,
      status: 400,
      slug: 'cms-malformed',
    },
    {
      name: 'a length of 2^62 bytes',
      input: () => Buffer.from('308840000000000000000102', 'hex'),
      status: 400,
      slug: 'cms-(malformed|truncated)',
    },
    {
      name: 'five hundred nested indefinite lengths',
      input: () => Buffer.concat([Buffer.from('3080'.repeat(500), 'hex'), Buffer.alloc(1000)]),
      status: 400,
      slug: 'cms-malformed',
    },
  ];
  for (const c of cases) {
    it(`when the file is ${c.name}, then ${c.status} with its own slug from both endpoints`, async () => {
      const input = c.input();
      expectProblem(
        await postRaw(app, ANALYZE, actor.user, input, 'application/pkcs7-mime'),
        c.status,
        c.slug,
      );
      expectProblem(await convert(app, actor.user, input), c.status, c.slug);
    });
  }

  it('when the file is empty, then 400 (validation-failed for convert, cms-malformed for analyze)', async () => {
    expectProblem(await convert(app, actor.user, Buffer.alloc(0)), 400, 'validation-failed');
    expectProblem(
      await postRaw(app, ANALYZE, actor.user, Buffer.alloc(0), 'application/pkcs7-mime'),
      400,
      'cms-malformed',
    );
  });

  it('when the key of the file is not imported, then 404 cms-key-not-imported', async () => {
    const stranger = makeKey(ssl, 'stranger', 'rsa-2048');
    const file = cms.encrypt(ssl, 'data.bin', {
      to: { recip: stranger },
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    const r = await convert(app, actor.user, file);
    expectProblem(r, 404, 'cms-key-not-imported');
    // The problem names the tenant searched, so a conversion run in the wrong tenant says so.
    expect((r.json() as { detail: string }).detail).toBe(
      `the recipient key is not imported in tenant ${actor.tenant.tenantId}`,
    );
  });

  it('when the detached content is not what was signed, then 422 cms-signature-invalid and no JWS', async () => {
    const other = Buffer.from(data);
    other[100] ^= 1;
    expectProblem(
      await convert(app, actor.user, signed([]), {}, other),
      422,
      'cms-signature-invalid',
    );
  });

  it('when a small EnvelopedData has a flipped last block, then the padding check fails before the answer: 400 decryption-failed, the same answer as every other decryption failure (the engine answered 422 cms-decryption-failed)', async () => {
    const file = enveloped();
    file[file.length - 20] ^= 0x55;
    expectProblem(await convert(app, actor.user, file), 400, 'decryption-failed');
  });

  it('when a large EnvelopedData is truncated, then the answer begins and is cut without its closing delimiter', async () => {
    ssl.write('big.bin', randomBytes(3 * 1024 * 1024));
    const file = cms.encrypt(ssl, 'big.bin', {
      to: { recip: rsa },
      cipher: 'aes-256-cbc',
      binary: true,
      stream: true,
      outform: 'DER',
    });
    const r = await convert(app, actor.user, file.subarray(0, file.length - 70_000));
    expect(r.status).toBe(200);
    expect(r.cut).toBe(true);
    expect(r.body.toString('latin1')).not.toMatch(/----service-[0-9a-f-]{36}--/);
  });
});

describe('bad requests to convert', () => {
  it('when Accept is text/html, then 406 problem+json before the body is read', async () => {
    const r = await convert(app, actor.user, signed(), {}, undefined, {
      accept: 'text/html',
      'x-request-id': 'accept-text-html',
    });
    expectProblem(r, 406, 'not-acceptable');
    // No conversion ran: the request left no conversion line in the log.
    expect(
      app
        .logText()
        .split('\n')
        .filter((l) => l.includes('"reqId":"accept-text-html"') && l.includes('"op":')),
    ).toEqual([]);
    expectProblem(
      await postRaw(app, ANALYZE, actor.user, signed(), 'application/pkcs7-mime', {
        accept: 'text/html',
      }),
      406,
      'not-acceptable',
    );
    for (const accept of ['*/*', 'application/*', 'application/problem+json']) {
      expect((await convert(app, actor.user, signed(), {}, undefined, { accept })).status).toBe(
        200,
      );
    }
    expect(
      (await convert(app, actor.user, enveloped(), {}, undefined, { accept: 'multipart/*' }))
        .status,
    ).toBe(200);
    // An explicit Accept that admits only the other result type is refused once the type is known.
    expectProblem(
      await convert(app, actor.user, enveloped(), {}, undefined, {
        accept: 'application/octet-stream',
      }),
      406,
      'not-acceptable',
    );
    // A SignedData can be answered as multipart/mixed (its content, then the
    // JWS), so an Accept of multipart/* gets that rather than 406.
    const both = await convert(app, actor.user, signed(), {}, undefined, { accept: 'multipart/*' });
    expect(both.status).toBe(200);
    expect(both.headers.get('content-type')).toMatch(/^multipart\/mixed; boundary=/);
  });

  it('when the metadata part does not come first, then 400 cms-bad-metadata', async () => {
    const r = await postParts(app, CONVERT, actor.user, [
      ['file', { data: signed() }],
      ['metadata', '{}'],
    ]);
    expectProblem(r, 400, 'cms-bad-metadata');
  });

  it('when the metadata is not a JSON object, then 400 cms-bad-metadata', async () => {
    for (const m of ['[1]', 'null', '"x"', '{']) {
      expectProblem(
        await postParts(app, CONVERT, actor.user, [
          ['metadata', m],
          ['file', { data: signed() }],
        ]),
        400,
        'cms-bad-metadata',
      );
    }
  });

  it('when the file part is missing, then 400 validation-failed', async () => {
    expectProblem(
      await postParts(app, CONVERT, actor.user, [['metadata', '{}']]),
      400,
      'validation-failed',
    );
  });

  it('when a content part comes with an attached SignedData or an EnvelopedData, or an extra part follows, then 400', async () => {
    expectProblem(await convert(app, actor.user, signed(), {}, data), 400, 'cms-bad-metadata');
    expectProblem(await convert(app, actor.user, enveloped(), {}, data), 400, 'cms-bad-metadata');
    const r = await postParts(app, CONVERT, actor.user, [
      ['metadata', '{}'],
      ['file', { data: signed() }],
      ['extra', 'x'],
    ]);
    expectProblem(r, 400, 'validation-failed');
  });

  it('when the body is not multipart/form-data, then 415; and analyze refuses text/plain with 415', async () => {
    expectProblem(
      await postRaw(app, CONVERT, actor.user, signed(), 'application/pkcs7-mime'),
      415,
      'unsupported-media-type',
    );
    expectProblem(
      await postRaw(app, ANALYZE, actor.user, signed(), 'text/plain'),
      415,
      'unsupported-media-type',
    );
  });

  it('when the metadata names an unknown signerKid or a bad contentEncryption, then 404 and 400', async () => {
    expectProblem(
      await convert(app, actor.user, signed(), { signerKid: 'nope' }),
      404,
      'cms-key-not-imported',
    );
    expectProblem(
      await convert(app, actor.user, enveloped(), { contentEncryption: 'A1GCM' }),
      400,
      'cms-bad-metadata',
    );
  });

  it('after all of these, the service still answers /healthz and a good conversion', async () => {
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    expect((await convert(app, actor.user, signed())).status).toBe(200);
  });
});
