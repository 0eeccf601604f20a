import { createPublicKey, createSecretKey, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { flattenedDecrypt, flattenedVerify } from 'jose';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import type { ConvertMetadata } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  buildSignedAndEnveloped,
  chunked,
  collect,
  makeKey,
  makeSecret,
  parseMultipart,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { Part, TestKey, TestSecret } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let keys: Record<string, TestKey>;
let kek: TestSecret;
let data: Buffer;

beforeAll(() => {
  ssl = new OpenSslDir();
  keys = {
    rsa: makeKey(ssl, 'recipient-rsa', 'rsa-2048'),
    p256: makeKey(ssl, 'recipient-p256', 'ec-p256'),
    p384: makeKey(ssl, 'recipient-p384', 'ec-p384'),
    p521: makeKey(ssl, 'recipient-p521', 'ec-p521'),
    target: makeKey(ssl, 'target-p256', 'ec-p256'),
    signer: makeKey(ssl, 'signer-rsa', 'rsa-2048'),
    signerEc: makeKey(ssl, 'signer-p384', 'ec-p384'),
  };
  kek = makeSecret('kek-aes-256', 32);
  data = randomBytes(70_001);
  ssl.write('data.bin', data);
});

afterAll(() => ssl.cleanup());

function encrypt(recipient: string | null, args: string[], input = 'data.bin'): Buffer {
  // A -keyopt in args applies to the -recip before it.
  const to = recipient ? { to: { recip: keys[recipient] } } : { kek };
  return cms.encrypt(ssl, input, { ...to, binary: true, outform: 'DER', extra: args });
}

const TAG_BYTES: Record<string, number> = {
  'A128CBC-HS256': 16,
  'A192CBC-HS384': 24,
  'A256CBC-HS512': 32,
};

interface Opened {
  parts: Part[];
  enc: string;
  alg: string;
  plaintext: Buffer;
}

async function convertAndOpen(
  file: Buffer,
  metadata: ConvertMetadata,
  targetKey: KeyObject,
  chunk = 65536,
): Promise<Opened> {
  const result = await convertPkcs7ToJose(chunked(file, chunk), {
    metadata,
    resolver: resolverFor(Object.values(keys), [kek]),
  });
  expect(result.contentType).toMatch(/^multipart\/mixed; boundary="----service-[0-9a-f-]{36}"$/);
  const { parts, closed } = parseMultipart(await collect(result.body), result.contentType);
  expect(closed).toBe(true);
  expect(parts[0].contentType).toBe('application/jose+json');
  expect(parts[1].contentType).toBe('application/octet-stream');
  const jwe = JSON.parse(parts[0].body.toString());
  const enc = JSON.parse(Buffer.from(jwe.protected, 'base64url').toString()).enc;
  const tagBytes = TAG_BYTES[enc] ?? 16;
  const ct = parts[1].body;
  const { plaintext } = await flattenedDecrypt(
    {
      protected: jwe.protected,
      header: jwe.recipients[0].header,
      encrypted_key: jwe.recipients[0].encrypted_key,
      iv: jwe.iv,
      ciphertext: ct.subarray(0, ct.length - tagBytes).toString('base64url'),
      tag: ct.subarray(ct.length - tagBytes).toString('base64url'),
    },
    targetKey,
  );
  return { parts, enc, alg: jwe.recipients[0].header.alg, plaintext: Buffer.from(plaintext) };
}

const cases: {
  name: string;
  recipient: string | null;
  args: string[];
  enc: string;
  alg: string;
  metadata?: ConvertMetadata;
}[] = [
  {
    name: 'RSA key transport, AES-256-CBC, DER',
    recipient: 'rsa',
    args: ['-aes-256-cbc'],
    enc: 'A256GCM',
    alg: 'RSA-OAEP-256',
  },
  {
    name: 'RSA key transport, AES-256-CBC, streamed BER',
    recipient: 'rsa',
    args: ['-aes-256-cbc', '-stream'],
    enc: 'A256GCM',
    alg: 'RSA-OAEP-256',
  },
  {
    name: 'RSA key transport, AES-128-CBC',
    recipient: 'rsa',
    args: ['-aes-128-cbc', '-stream'],
    enc: 'A128GCM',
    alg: 'RSA-OAEP-256',
  },
  {
    name: 'RSA key transport, AES-192-CBC',
    recipient: 'rsa',
    args: ['-aes-192-cbc'],
    enc: 'A192GCM',
    alg: 'RSA-OAEP-256',
  },
  {
    name: 'RSA key transport, 3DES-CBC',
    recipient: 'rsa',
    args: ['-des3'],
    enc: 'A256GCM',
    alg: 'RSA-OAEP-256',
  },
  {
    name: 'RSA-OAEP with SHA-1',
    recipient: 'rsa',
    args: ['-aes-256-cbc', '-keyopt', 'rsa_padding_mode:oaep'],
    enc: 'A256GCM',
    alg: 'RSA-OAEP-256',
  },
  {
    name: 'RSA-OAEP with SHA-256',
    recipient: 'rsa',
    args: ['-aes-256-cbc', '-keyopt', 'rsa_padding_mode:oaep', '-keyopt', 'rsa_oaep_md:sha256'],
    enc: 'A256GCM',
    alg: 'RSA-OAEP-256',
  },
  ...['sha384', 'sha512'].map((md) => ({
    name: `RSA-OAEP with ${md.toUpperCase()} (OAEP and MGF1)`,
    recipient: 'rsa',
    args: [
      '-aes-256-cbc',
      '-keyopt',
      'rsa_padding_mode:oaep',
      '-keyopt',
      `rsa_oaep_md:${md}`,
      '-keyopt',
      `rsa_mgf1_md:${md}`,
    ],
    enc: 'A256GCM',
    alg: 'RSA-OAEP-256',
  })),
  {
    name: 'ECDH P-256 with the SHA-1 KDF',
    recipient: 'p256',
    args: ['-aes-256-cbc'],
    enc: 'A256GCM',
    alg: 'ECDH-ES+A256KW',
  },
  {
    name: 'ECDH P-384 with the SHA-256 KDF',
    recipient: 'p384',
    args: ['-aes-128-cbc', '-keyopt', 'ecdh_kdf_md:sha256', '-stream'],
    enc: 'A128GCM',
    alg: 'ECDH-ES+A256KW',
  },
  {
    name: 'ECDH P-521 with the SHA-512 KDF',
    recipient: 'p521',
    args: ['-aes-256-cbc', '-keyopt', 'ecdh_kdf_md:sha512'],
    enc: 'A256GCM',
    alg: 'ECDH-ES+A256KW',
  },
  {
    name: 'KEK recipient with AES key wrap',
    recipient: null,
    args: ['-aes-256-cbc'],
    enc: 'A256GCM',
    alg: 'A256KW',
  },
  {
    name: 'AuthEnvelopedData AES-256-GCM, streamed',
    recipient: 'rsa',
    args: ['-aes-256-gcm', '-stream'],
    enc: 'A256GCM',
    alg: 'RSA-OAEP-256',
  },
  {
    name: 'AuthEnvelopedData AES-128-GCM, DER',
    recipient: 'p256',
    args: ['-aes-128-gcm'],
    enc: 'A128GCM',
    alg: 'ECDH-ES+A256KW',
  },
  {
    name: 'AES-256-CBC kept with preserve',
    recipient: 'rsa',
    args: ['-aes-256-cbc', '-stream'],
    enc: 'A256CBC-HS512',
    alg: 'RSA-OAEP-256',
    metadata: { contentEncryption: 'preserve' },
  },
  {
    name: 'AES-128-CBC kept with preserve',
    recipient: 'rsa',
    args: ['-aes-128-cbc'],
    enc: 'A128CBC-HS256',
    alg: 'RSA-OAEP-256',
    metadata: { contentEncryption: 'preserve' },
  },
  {
    name: 'AES-192-CBC kept with preserve',
    recipient: 'p256',
    args: ['-aes-192-cbc'],
    enc: 'A192CBC-HS384',
    alg: 'ECDH-ES+A256KW',
    metadata: { contentEncryption: 'preserve' },
  },
  {
    name: 'AES-256-CBC re-encrypted as A128GCM on request',
    recipient: 'rsa',
    args: ['-aes-256-cbc'],
    enc: 'A128GCM',
    alg: 'RSA-OAEP-256',
    metadata: { contentEncryption: 'A128GCM' },
  },
  {
    name: 'RSA key transport with RSA-OAEP (SHA-1) key management',
    recipient: 'rsa',
    args: ['-aes-256-cbc'],
    enc: 'A256GCM',
    alg: 'RSA-OAEP',
    metadata: { keyManagement: 'RSA-OAEP' },
  },
];

describe('EnvelopedData and AuthEnvelopedData to a detached JWE', () => {
  for (const c of cases) {
    it(`when the CMS uses ${c.name}, then the JWE is ${c.alg} + ${c.enc} and jose decrypts it to the content`, async () => {
      const opened = await convertAndOpen(
        encrypt(c.recipient, c.args),
        c.metadata ?? {},
        c.recipient ? keys[c.recipient].privateKey : createSecretKey(kek.secret),
      );
      expect(opened.enc).toBe(c.enc);
      expect(opened.alg).toBe(c.alg);
      expect(opened.parts).toHaveLength(2);
      expect(opened.plaintext.equals(data)).toBe(true);
    });
  }

  it('when preserve is asked, then the JWE ciphertext is the CMS ciphertext byte for byte', async () => {
    const file = encrypt('rsa', ['-aes-256-cbc']);
    const opened = await convertAndOpen(
      file,
      { contentEncryption: 'preserve' },
      keys.rsa.privateKey,
    );
    const ct = opened.parts[1].body.subarray(0, opened.parts[1].body.length - 32);
    expect(file.subarray(file.length - ct.length).equals(ct)).toBe(true);
  });

  it('when a targetKid names an EC key, then the JWE is ECDH-ES+A256KW for that key with its epk', async () => {
    const opened = await convertAndOpen(
      encrypt('rsa', ['-aes-256-cbc']),
      { targetKid: keys.target.kid },
      keys.target.privateKey,
    );
    expect(opened.alg).toBe('ECDH-ES+A256KW');
    const header = JSON.parse(opened.parts[0].body.toString()).recipients[0].header;
    expect(header.kid).toBe(`${keys.target.kid}#1`);
    expect(header.epk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(opened.plaintext.equals(data)).toBe(true);
  });

  it('when the input arrives one byte at a time, then the result is the same', async () => {
    const small = randomBytes(3000);
    ssl.write('small.bin', small);
    const opened = await convertAndOpen(
      encrypt('rsa', ['-aes-256-cbc', '-stream'], 'small.bin'),
      {},
      keys.rsa.privateKey,
      1,
    );
    expect(opened.plaintext.equals(small)).toBe(true);
  });
});

describe('EnvelopedData holding a SignedData to JWE plus JWS', () => {
  function signThenEncrypt(signer: TestKey, signArgs: string[], encArgs: string[]): Buffer {
    ssl.write(
      'signed.der',
      cms.sign(ssl, 'data.bin', {
        by: signer,
        detached: false,
        binary: true,
        outform: 'DER',
        extra: signArgs,
      }),
    );
    return encrypt('rsa', ['-aes-256-cbc', ...encArgs], 'signed.der');
  }

  for (const [name, signer, signArgs, encArgs, alg] of [
    ['an RSA signer, DER in DER', 'signer', [], [], 'RS256'],
    ['an RSA signer, BER in BER', 'signer', ['-stream'], ['-stream'], 'RS256'],
    ['an ECDSA P-384 signer', 'signerEc', ['-md', 'sha384'], ['-stream'], 'ES384'],
  ] as const) {
    it(`when ${name} signed then encrypted it (content type id-data), then part 3 is a ${alg} JWS over the decrypted inner content`, async () => {
      const opened = await convertAndOpen(
        signThenEncrypt(keys[signer], [...signArgs], [...encArgs]),
        {},
        keys.rsa.privateKey,
      );
      expect(opened.plaintext.equals(data)).toBe(true);
      expect(opened.parts).toHaveLength(3);
      expect(opened.parts[2].contentType).toBe('application/jose+json');
      const jws = JSON.parse(opened.parts[2].body.toString());
      expect(JSON.parse(Buffer.from(jws.protected, 'base64url').toString()).alg).toBe(alg);
      await expect(
        flattenedVerify({ ...jws, payload: data }, createPublicKey(keys[signer].privateKey)),
      ).resolves.toBeTruthy();
    });
  }

  it('when the EncryptedContentInfo says signedData, then the inner SignedData is recognised by its type', async () => {
    const file = signThenEncrypt(keys.signer, [], []);
    // Same-length OIDs: id-data (...7.1) in the EncryptedContentInfo becomes id-signedData (...7.2).
    const at = file.indexOf(Buffer.from('06092a864886f70d010701', 'hex'));
    file[at + 10] = 0x02;
    const opened = await convertAndOpen(file, {}, keys.rsa.privateKey);
    expect(opened.plaintext.equals(data)).toBe(true);
    expect(opened.parts).toHaveLength(3);
  });

  it('when signerKid is given and b64 is true, then the JWS has the kid protected and follows RFC 7515 Appendix F', async () => {
    const opened = await convertAndOpen(
      signThenEncrypt(keys.signer, [], []),
      { signerKid: keys.signer.kid, b64: true },
      keys.rsa.privateKey,
    );
    const jws = JSON.parse(opened.parts[2].body.toString());
    expect(JSON.parse(Buffer.from(jws.protected, 'base64url').toString())).toMatchObject({
      alg: 'RS256',
      kid: `${keys.signer.kid}#1`,
    });
    expect(jws.header).toBeUndefined();
    await expect(
      flattenedVerify(
        { ...jws, payload: data.toString('base64url') },
        createPublicKey(keys.signer.privateKey),
      ),
    ).resolves.toBeTruthy();
  });
});

describe('SignedAndEnvelopedData (PKCS#7 v1.5) to JWE plus JWS', () => {
  for (const encryptDigest of [false, true]) {
    it(`when the signature is ${encryptDigest ? 'encrypted under the content key (RFC 2315 section 11.2)' : 'left in clear (as OpenSSL writes it)'}, then part 3 is a JWS over the decrypted content`, async () => {
      const enveloped = encrypt('rsa', ['-aes-256-cbc']);
      const signed = cms.sign(ssl, 'data.bin', {
        by: keys.signer,
        detached: false,
        binary: true,
        outform: 'DER',
      });
      const file = buildSignedAndEnveloped(enveloped, signed, keys.rsa, encryptDigest);
      const opened = await convertAndOpen(file, {}, keys.rsa.privateKey);
      expect(opened.plaintext.equals(data)).toBe(true);
      expect(opened.parts).toHaveLength(3);
      const jws = JSON.parse(opened.parts[2].body.toString());
      await expect(
        flattenedVerify({ ...jws, payload: data }, createPublicKey(keys.signer.privateKey)),
      ).resolves.toBeTruthy();
    });
  }
});
