/**
 * The per-process memos of the signer checks (shared/pkcs7/key-cache.ts, the SignerInfo parse and
 * description): bounded, never answering one key for another, and never changing an outcome.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import {
  SPKI_CACHE_SIZE,
  spkiCacheSize,
  spkiOf,
  spkiPublicKey,
} from '../../../shared/pkcs7/key-cache.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

const spki = () => generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });

describe('the SPKI -> KeyObject memo', () => {
  it('when more distinct SPKIs than its size pass through, then it holds at most its size', () => {
    for (let i = 0; i < SPKI_CACHE_SIZE + 40; i++) spkiPublicKey(spki());
    expect(spkiCacheSize()).toBeLessThanOrEqual(SPKI_CACHE_SIZE);
  });

  it('when two SPKIs differ, then each answers its own key, again after the first is evicted', () => {
    const a = spki();
    const b = spki();
    const ka = spkiPublicKey(a);
    const kb = spkiPublicKey(b);
    expect(ka).not.toBe(kb);
    expect(ka.export({ type: 'spki', format: 'der' })).toEqual(a);
    expect(kb.export({ type: 'spki', format: 'der' })).toEqual(b);
    expect(spkiPublicKey(Buffer.from(a))).toBe(ka);
    for (let i = 0; i < SPKI_CACHE_SIZE + 1; i++) spkiPublicKey(spki());
    expect(spkiPublicKey(a).export({ type: 'spki', format: 'der' })).toEqual(a);
  });

  it('when the SPKI of a private key is asked, then it is its public half, and a copy', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const want = publicKey.export({ type: 'spki', format: 'der' });
    const first = spkiOf(privateKey);
    expect(first).toEqual(want);
    first.fill(0);
    expect(spkiOf(privateKey)).toEqual(want);
    expect(spkiOf(publicKey)).toEqual(want);
  });
});

describe('signed conversions with the memos warm', () => {
  let ssl: OpenSslDir;
  let a: TestKey;
  let b: TestKey;
  beforeAll(() => {
    ssl = new OpenSslDir();
    // The same subject: only the serial number and the key tell them apart.
    a = makeKey(ssl, 'same-name', 'rsa-2048');
    b = { ...makeKey(ssl, 'same-name', 'rsa-2048'), kid: 'same-name-b' };
    ssl.write('data.bin', randomBytes(4096));
  });
  afterAll(() => ssl.cleanup());

  const sign = (k: TestKey) => {
    ssl.write('signer.crt', k.certificate);
    ssl.run(['x509', '-inform', 'DER', '-in', 'signer.crt', '-out', 'signer.pem']);
    const key = k.privateKey.export({ type: 'pkcs8', format: 'pem' });
    ssl.write('signer.key', Buffer.from(key));
    return cms.sign(ssl, 'data.bin', {
      by: { certFile: 'signer.pem', keyFile: 'signer.key' },
      detached: false,
      binary: true,
      outform: 'DER',
    });
  };
  const outcome = async (file: Buffer, keys: TestKey[]) => {
    try {
      const r = await convertPkcs7ToJose(chunked(file, 8192), {
        metadata: {},
        resolver: resolverFor(keys),
      });
      const jws = JSON.parse((await collect(r.body)).toString()) as { protected: string };
      return JSON.parse(Buffer.from(jws.protected, 'base64url').toString()).kid as string;
    } catch (err) {
      return (err as { code: string }).code;
    }
  };
  const tampered = (file: Buffer) => {
    const t = Buffer.from(file);
    t[t.length - 1] ^= 1; // the last byte of the signature
    return t;
  };

  it('when signers of the same name alternate, then each verifies with its own key and a bad signature still fails', async () => {
    const fa = sign(a);
    const fb = sign(b);
    // First, before either key has been seen by the memos.
    const foreign = await outcome(fb, [a]);
    const before = [await outcome(tampered(fa), [a]), await outcome(tampered(fb), [b])];
    for (let i = 0; i < 3; i++) {
      expect(await outcome(fa, [a])).toBe('same-name#1');
      expect(await outcome(fb, [b])).toBe('same-name-b#1');
      expect(await outcome(tampered(fa), [a])).toBe(before[0]);
      expect(await outcome(tampered(fb), [b])).toBe(before[1]);
      // The tenant holds A only: B's message names B's serial, so A's key is never tried on it.
      expect(await outcome(fb, [a])).toBe(foreign);
    }
    expect(before).toEqual(['cms_signature_invalid', 'cms_signature_invalid']);
  });
});
