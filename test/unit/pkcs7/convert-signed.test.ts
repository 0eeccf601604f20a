import { createPublicKey, randomBytes } from 'node:crypto';
import { flattenedVerify } from 'jose';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import { candidateAlgs } from '../../../shared/jose/jws.ts';
import {
  OpenSslDir,
  buildEd25519SignedData,
  chunked,
  collect,
  makeKey,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';
import { checkSigners, offloaded } from '../../../shared/pkcs7/signer-checks.ts';

let ssl: OpenSslDir;
let keys: Record<string, TestKey>;
let data: Buffer;

beforeAll(() => {
  ssl = new OpenSslDir();
  keys = {
    rsa: makeKey(ssl, 'signer-rsa', 'rsa-2048'),
    p256: makeKey(ssl, 'signer-p256', 'ec-p256'),
    p384: makeKey(ssl, 'signer-p384', 'ec-p384'),
    p521: makeKey(ssl, 'signer-p521', 'ec-p521'),
    ed: makeKey(ssl, 'signer-ed25519', 'ed25519'),
  };
  data = randomBytes(100_000);
  ssl.write('data.bin', data);
});

afterAll(() => ssl.cleanup());

function sign(key: TestKey, args: string[]): Buffer {
  return cms.sign(ssl, 'data.bin', { by: key, binary: true, outform: 'DER', extra: args });
}

interface Jws {
  protected: string;
  signature: string;
  header?: { kid: string };
}

async function convertSigned(
  file: Buffer,
  metadata = {},
  content?: Buffer,
  chunk = 65536,
): Promise<Jws> {
  const result = await convertPkcs7ToJose(chunked(file, chunk), {
    metadata,
    resolver: resolverFor(Object.values(keys)),
    ...(content ? { content: chunked(content, 4096) } : {}),
  });
  expect(result.contentType).toBe('application/octet-stream');
  return JSON.parse((await collect(result.body)).toString());
}

function header(jws: Jws): Record<string, unknown> {
  return JSON.parse(Buffer.from(jws.protected, 'base64url').toString());
}

const cases: { name: string; key: string; args: string[]; alg: string }[] = [
  {
    name: 'RSA SHA-256 with signed attributes in DER',
    key: 'rsa',
    args: ['-nodetach'],
    alg: 'RS256',
  },
  {
    name: 'RSA SHA-256 with signed attributes in streamed BER',
    key: 'rsa',
    args: ['-nodetach', '-stream'],
    alg: 'RS256',
  },
  { name: 'RSA SHA-384', key: 'rsa', args: ['-nodetach', '-md', 'sha384'], alg: 'RS256' },
  {
    name: 'RSA SHA-512 without signed attributes',
    key: 'rsa',
    args: ['-nodetach', '-md', 'sha512', '-noattr'],
    alg: 'RS256',
  },
  {
    name: 'RSA-PSS',
    key: 'rsa',
    args: ['-nodetach', '-keyopt', 'rsa_padding_mode:pss'],
    alg: 'PS256',
  },
  {
    name: 'RSA-PSS without signed attributes',
    key: 'rsa',
    args: ['-nodetach', '-noattr', '-keyopt', 'rsa_padding_mode:pss'],
    alg: 'PS256',
  },
  { name: 'ECDSA P-256', key: 'p256', args: ['-nodetach'], alg: 'ES256' },
  {
    name: 'ECDSA P-256 without signed attributes',
    key: 'p256',
    args: ['-nodetach', '-noattr'],
    alg: 'ES256',
  },
  {
    name: 'ECDSA P-384 with SHA-384',
    key: 'p384',
    args: ['-nodetach', '-md', 'sha384', '-stream'],
    alg: 'ES384',
  },
  {
    name: 'ECDSA P-521 with SHA-512',
    key: 'p521',
    args: ['-nodetach', '-md', 'sha512'],
    alg: 'ES512',
  },
];

describe('SignedData to a detached JWS', () => {
  for (const c of cases) {
    it(`when the CMS is ${c.name}, then the JWS is ${c.alg} and verifies with jose over the raw content`, async () => {
      const jws = await convertSigned(sign(keys[c.key], c.args));
      // The alg follows the signing key, never the CMS digest.
      expect(header(jws)).toMatchObject({
        alg: c.alg,
        kid: `${keys[c.key].kid}#1`,
        b64: false,
        crit: ['b64'],
      });
      expect(header(jws).kw_signers).toHaveLength(1);
      expect(jws.header).toBeUndefined();
      const pub = createPublicKey(keys[c.key].privateKey);
      await expect(flattenedVerify({ ...jws, payload: data }, pub)).resolves.toBeTruthy();
    });
  }

  // OpenSSL 3.0 cannot write Ed25519 SignedData; the fixture builds it per RFC 8419.
  it('when the CMS is Ed25519 with signed attributes, then the JWS is EdDSA and verifies', async () => {
    const jws = await convertSigned(buildEd25519SignedData(keys.ed, data));
    expect(header(jws).alg).toBe('EdDSA');
    await expect(
      flattenedVerify({ ...jws, payload: data }, createPublicKey(keys.ed.privateKey)),
    ).resolves.toBeTruthy();
  });

  it('when the SignedData is detached and the content comes as its own stream, then the kid is protected and the JWS verifies', async () => {
    const jws = await convertSigned(sign(keys.p256, []), {}, data);
    expect(header(jws)).toMatchObject({
      alg: 'ES256',
      kid: `${keys.p256.kid}#1`,
      b64: false,
      crit: ['b64'],
    });
    expect(jws.header).toBeUndefined();
    await expect(
      flattenedVerify({ ...jws, payload: data }, createPublicKey(keys.p256.privateKey)),
    ).resolves.toBeTruthy();
  });

  it('when an Ed25519 SignedData is detached, then the EdDSA JWS verifies over the separate content', async () => {
    const jws = await convertSigned(buildEd25519SignedData(keys.ed, data, true), {}, data);
    expect(header(jws)).toMatchObject({
      alg: 'EdDSA',
      kid: `${keys.ed.kid}#1`,
      b64: false,
      crit: ['b64'],
    });
    await expect(
      flattenedVerify({ ...jws, payload: data }, createPublicKey(keys.ed.privateKey)),
    ).resolves.toBeTruthy();
  });

  it('when b64 is true, then the JWS follows RFC 7515 Appendix F over BASE64URL(content)', async () => {
    for (const size of [0, 1, 2, 3, 100_000]) {
      ssl.write('sized.bin', data.subarray(0, size));
      const file = cms.sign(ssl, 'sized.bin', {
        by: keys.rsa,
        detached: false,
        binary: true,
        outform: 'DER',
      });
      const jws = await convertSigned(file, { b64: true }, undefined, 7);
      expect(header(jws)).toMatchObject({ alg: 'RS256' });
      await expect(
        flattenedVerify(
          { ...jws, payload: data.subarray(0, size).toString('base64url') },
          createPublicKey(keys.rsa.privateKey),
        ),
      ).resolves.toBeTruthy();
    }
  });

  it('when signerKid names the key, then the kid is in the protected header', async () => {
    const jws = await convertSigned(sign(keys.p384, ['-nodetach', '-stream']), {
      signerKid: keys.p384.kid,
    });
    expect(header(jws)).toMatchObject({
      alg: 'ES384',
      kid: `${keys.p384.kid}#1`,
      b64: false,
      crit: ['b64'],
    });
    await expect(
      flattenedVerify({ ...jws, payload: data }, createPublicKey(keys.p384.privateKey)),
    ).resolves.toBeTruthy();
  });

  it("when the signer is only named after the content, then the content is hashed for the algs the tenant's key types can sign with", () => {
    expect(candidateAlgs(null, 'sha256')).toEqual(['RS256', 'PS256', 'ES256']);
    expect(candidateAlgs(null, 'sha256', ['rsa-2048', 'aes-256', 'ml-kem-768'])).toEqual([
      'RS256',
      'PS256',
    ]);
    expect(candidateAlgs(null, 'sha256', ['ec-p256', 'ec-p384'])).toEqual(['ES256']);
    expect(candidateAlgs(null, 'sha384', ['ec-p256', 'ec-p384'])).toEqual(['ES384']);
    expect(candidateAlgs(null, 'sha512', ['ed25519', 'ec-p521'])).toEqual(['ES512', 'EdDSA']);
    expect(candidateAlgs(null, 'sha256', ['aes-128', 'unknown-type'])).toEqual([]);
  });

  it('when the tenant holds no key that can sign, then the conversion reports the signer key as not imported', async () => {
    const file = sign(keys.rsa, ['-nodetach']);
    const noSigners = { ...resolverFor([]), keyTypes: async () => ['aes-256'] };
    await expect(
      convertPkcs7ToJose(chunked(file, 65536), { metadata: {}, resolver: noSigners }).then((r) =>
        collect(r.body),
      ),
    ).rejects.toMatchObject({ code: 'cms_key_not_imported' });
  });

  it('when the input arrives one byte at a time, then the JWS is the same kind and verifies', async () => {
    const jws = await convertSigned(sign(keys.rsa, ['-nodetach', '-stream']), {}, undefined, 1);
    await expect(
      flattenedVerify({ ...jws, payload: data }, createPublicKey(keys.rsa.privateKey)),
    ).resolves.toBeTruthy();
  });
});

describe('where the signer checks run', () => {
  /** Converts `file` with the checks offloaded to a stand-in pool that counts what it was sent. */
  async function sentAway(file: Buffer, metadata = {}, held = Object.values(keys)) {
    let calls = 0;
    const checker = offloaded(async (input) => {
      calls += 1;
      return checkSigners(input);
    });
    const result = await convertPkcs7ToJose(chunked(file, 65536), {
      metadata,
      resolver: resolverFor(held),
      checkSigners: checker,
    });
    await collect(result.body);
    return calls;
  }

  it('when the one signer is a held key and no chain is asked for, then it is checked in place; otherwise it goes to the pool', async () => {
    expect(await sentAway(sign(keys.rsa, ['-nodetach']))).toBe(0);
    // A signer the tenant does not hold brings its certificate: the input chose the key.
    expect(
      await sentAway(sign(keys.rsa, ['-nodetach']), { signerKid: 'signer-p256' }, [keys.p256]),
    ).toBe(1);
    // Two signers: how many is the input's choice.
    const two = cms.sign(ssl, 'data.bin', {
      by: [keys.rsa, keys.p256],
      binary: true,
      outform: 'DER',
      extra: ['-nodetach'],
    });
    expect(await sentAway(two)).toBe(1);
  });

  it('when a held signer is checked in place, then a bad signature is the same problem as from the pool', async () => {
    const file = sign(keys.rsa, ['-nodetach']);
    const at = file.indexOf(data.subarray(5000, 5032));
    file[at] ^= 0x01;
    const problemOf = (p: Promise<unknown>) =>
      p.then(
        () => 'resolved',
        (e: { code?: string }) => e.code,
      );
    expect(await problemOf(sentAway(file))).toBe('cms_signature_invalid');
    expect(
      await problemOf(
        convertPkcs7ToJose(chunked(file, 65536), {
          metadata: {},
          resolver: resolverFor(Object.values(keys)),
          checkSigners: async (input) => checkSigners(input),
        }).then((r) => collect(r.body)),
      ),
    ).toBe('cms_signature_invalid');
  });
});
