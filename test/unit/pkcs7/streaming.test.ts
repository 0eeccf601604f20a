import { randomBytes } from 'node:crypto';
import { convertPkcs7ToJose, EDDSA_CAP } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  buildEd25519SignedData,
  chunked,
  makeKey,
  resolverFor,
  syntheticEnveloped,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';

const MiB = 1024 * 1024;
let ssl: OpenSslDir;
let rsa: TestKey;
let ed: TestKey;

beforeAll(() => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'rsa', 'rsa-2048');
  ed = makeKey(ssl, 'ed', 'ed25519');
});

afterAll(() => ssl.cleanup());

/** Counts what is pulled from `input` and notes whether it was closed early. */
function counted(input: AsyncIterable<Buffer>): {
  input: AsyncGenerator<Buffer>;
  pulled: () => number;
  closed: () => boolean;
} {
  let pulled = 0;
  let closed = false;
  async function* wrap(): AsyncGenerator<Buffer> {
    try {
      for await (const c of input) {
        pulled += c.length;
        yield c;
      }
    } finally {
      closed = true;
    }
  }
  return { input: wrap(), pulled: () => pulled, closed: () => closed };
}

describe('streaming behaviour', () => {
  it('when the body is read slowly, then the input is read no faster than the output is consumed', async () => {
    const src = counted(syntheticEnveloped(rsa, 64 * MiB));
    const result = await convertPkcs7ToJose(src.input, {
      metadata: {},
      resolver: resolverFor([rsa]),
    });
    const it = result.body[Symbol.asyncIterator]();
    let out = 0;
    for (let i = 0; i < 10; i++) out += (await it.next()).value!.length;
    // Ten output chunks need about ten input chunks of 64 KiB, not the 64 MiB on offer.
    expect(src.pulled()).toBeLessThan(out + 1 * MiB);
    await it.return!(undefined);
    expect(src.closed()).toBe(true);
  });

  it('when the consumer stops early, then the input is released', async () => {
    const src = counted(syntheticEnveloped(rsa, 8 * MiB));
    const result = await convertPkcs7ToJose(src.input, {
      metadata: {},
      resolver: resolverFor([rsa]),
    });
    for await (const chunk of result.body) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    expect(src.closed()).toBe(true);
  });

  it('when an Ed25519 re-signature would need more than EDDSA_CAP bytes, then cms-eddsa-content-too-large (422)', async () => {
    const content = randomBytes(EDDSA_CAP + 1);
    const file = buildEd25519SignedData(ed, content, true);
    await expect(
      convertPkcs7ToJose(chunked(file, 4096), {
        metadata: {},
        resolver: resolverFor([ed]),
        content: chunked(content, MiB),
      }),
    ).rejects.toMatchObject({
      code: 'cms_eddsa_too_large',
      status: 422,
      slug: 'cms-eddsa-content-too-large',
    });
  });
});
