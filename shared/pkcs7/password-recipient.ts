/**
 * Password recipients (RFC 3211, PasswordRecipientInfo of RFC 5652 section 6.2.4): the key-encryption
 * key is PBKDF2 of the password (RFC 8018), and the content key is wrapped by id-alg-PWRI-KEK, a
 * double CBC encryption under it with a length byte and check bytes (RFC 3211 section 2.3). The
 * password comes from `metadata.password` as a secret KeyObject and is never logged or stored.
 */
import { createDecipheriv, pbkdf2 } from 'node:crypto';
import { asSecretKey } from '../crypto/secret-key.ts';
import type { KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { PasswordRecipientInfo, RecipientInfo } from '@peculiar/asn1-cms';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { OctetString } from '@peculiar/asn1-schema';
import { octets, parseAsn, walk } from '../asn1/der.ts';
import { OID, oidName } from '../asn1/oids.ts';
import { plainRecipientInfo } from './der-elements.ts';
import { Pbkdf2Params } from '../keystore/schemas.ts';
import { decryptionFailed, problem } from '../errors/index.ts';
import type { PasswordKeyRequest } from './types.ts';

/** The key type of the stand-in ResolvedKey that carries `metadata.password` to a PWRI recipient. */
export const PASSWORD_KEY_TYPE = 'password';

/** The ciphers id-alg-PWRI-KEK wraps with (RFC 3211 section 2.3, with the AES OIDs OpenSSL writes). */
const KEK_CIPHERS: ReadonlyMap<string, { cipher: string; keyLength: number; block: number }> =
  new Map([
    [OID.aes128Cbc, { cipher: 'aes-128-cbc', keyLength: 16, block: 16 }],
    [OID.aes192Cbc, { cipher: 'aes-192-cbc', keyLength: 24, block: 16 }],
    [OID.aes256Cbc, { cipher: 'aes-256-cbc', keyLength: 32, block: 16 }],
    [OID.desEde3Cbc, { cipher: 'des-ede3-cbc', keyLength: 24, block: 8 }],
  ]);

/** PBKDF2 pseudo-random functions (RFC 8018 appendix B.1.1); the default is HMAC-SHA1. */
const PRFS: ReadonlyMap<string, string> = new Map([
  ['1.2.840.113549.2.7', 'sha1'],
  ['1.2.840.113549.2.8', 'sha224'],
  ['1.2.840.113549.2.9', 'sha256'],
  ['1.2.840.113549.2.10', 'sha384'],
  ['1.2.840.113549.2.11', 'sha512'],
]);

/**
 * More PBKDF2 iterations than this are refused before any work (cms-unsupported). Producers write
 * far fewer: OpenSSL's `cms -pwri_password` always 2,048, BouncyCastle's generator 1,024 unless
 * told otherwise; 100,000 leaves fifty times OpenSSL's count for a producer that raised it, and
 * costs at most ~60 ms of a core (HMAC-SHA-512), which the caller's budget of expensive work pays
 * (docs/expensive-work.md).
 */
export const MAX_ITERATIONS = 100_000;

const pbkdf2Async = promisify(pbkdf2);

/** The derivation of an engine run without a resolver that places it: libuv's async pbkdf2. */
const deriveHere = async (r: PasswordKeyRequest): Promise<Buffer> =>
  pbkdf2Async(r.password, r.salt, r.iterations, r.keyLength, r.digest);

const malformed = () => problem('cms_malformed', 'PasswordRecipientInfo is not valid DER');

/**
 * Parses one RecipientInfo. asn1-cms's schema rejects every PasswordRecipientInfo (its implicit
 * [0] keyDerivationAlgorithm), so the [3] alternative is read here field by field.
 */
export function parseRecipientInfo(b: Buffer): RecipientInfo {
  if (b[0] !== 0xa3)
    return plainRecipientInfo(b) ?? parseAsn(b, RecipientInfo, 'RecipientInfo', 'cms_malformed');
  const top = walk(b);
  if (!top || top.length !== 1) throw malformed();
  const f = walk(b, top[0].valueStart, top[0].end);
  if (!f || f.length < 3 || f[0].tag !== 0x02) throw malformed();
  const hasKdf = f[1].tag === 0xa0;
  if (f.length !== (hasKdf ? 4 : 3)) throw malformed();
  const [kdf, kea, ek] = hasKdf ? f.slice(1) : [null, ...f.slice(1)];
  if (kea!.tag !== 0x30 || ek!.tag !== 0x04) throw malformed();
  // [0] IMPLICIT AlgorithmIdentifier: the same bytes with the SEQUENCE tag.
  const kdfDer = kdf
    ? Buffer.concat([Buffer.from([0x30]), b.subarray(kdf.start + 1, kdf.end)])
    : null;
  const pwri = new PasswordRecipientInfo({
    keyEncryptionAlgorithm: parseAsn(
      b.subarray(kea!.start, kea!.end),
      AlgorithmIdentifier,
      'PWRI key encryption algorithm',
      'cms_malformed',
    ),
    encryptedKey: new OctetString(b.subarray(ek!.valueStart, ek!.end)),
  });
  if (kdfDer)
    pwri.keyDerivationAlgorithm = parseAsn(
      kdfDer,
      AlgorithmIdentifier,
      'PWRI key derivation algorithm',
      'cms_malformed',
    );
  return new RecipientInfo({ pwri });
}

/** Why the engine cannot open this password recipient, or undefined when it can. */
export function pwriUnsupported(pwri: PasswordRecipientInfo): string | undefined {
  const kdf = pwri.keyDerivationAlgorithm;
  if (!kdf || kdf.algorithm !== OID.pbkdf2)
    return `password key derivation ${kdf ? oidName(kdf.algorithm) : '(none)'}`;
  if (pwri.keyEncryptionAlgorithm.algorithm !== OID.pwriKek)
    return `password key encryption ${oidName(pwri.keyEncryptionAlgorithm.algorithm)}`;
  const inner = innerCipherOf(pwri);
  if (!KEK_CIPHERS.has(inner.algorithm)) return `PWRI-KEK with ${oidName(inner.algorithm)}`;
  return undefined;
}

function innerCipherOf(pwri: PasswordRecipientInfo): AlgorithmIdentifier {
  const p = pwri.keyEncryptionAlgorithm.parameters;
  if (!p) throw problem('cms_malformed', 'PWRI-KEK without its cipher');
  return parseAsn(new Uint8Array(p), AlgorithmIdentifier, 'PWRI-KEK cipher', 'cms_malformed');
}

/**
 * Opens the content key of a password recipient. Malformed or unsupported parameters (an
 * iteration count past MAX_ITERATIONS among them) are plain problems thrown before any
 * derivation; `derive` runs the PBKDF2 (the resolver's, off the event loop and on the caller's
 * budget). A wrong password (check bytes, length byte) is the opaque decryption-failed, which the
 * caller replaces by a random stand-in key like every other unwrap failure.
 */
export async function pwriUnwrap(
  pwri: PasswordRecipientInfo,
  password: KeyObject,
  derive: (r: PasswordKeyRequest) => Promise<Buffer> = deriveHere,
): Promise<Buffer> {
  const why = pwriUnsupported(pwri);
  if (why) throw problem('cms_unsupported', `${why} is not supported`);
  const inner = innerCipherOf(pwri);
  const spec = KEK_CIPHERS.get(inner.algorithm)!;
  const iv = octets(inner.parameters ?? new Uint8Array(0), 'PWRI-KEK IV', 'cms_malformed');
  if (iv.length !== spec.block) throw problem('cms_malformed', 'PWRI-KEK IV of the wrong length');
  const params = parseAsn(
    new Uint8Array(pwri.keyDerivationAlgorithm!.parameters ?? new ArrayBuffer(0)),
    Pbkdf2Params,
    'PBKDF2 parameters',
    'cms_malformed',
  );
  const prf = PRFS.get(params.prf?.algorithm ?? '1.2.840.113549.2.7');
  if (!prf) throw problem('cms_unsupported', 'the PBKDF2 pseudo-random function is not supported');
  const n = params.iterationCount;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_ITERATIONS)
    throw problem('cms_unsupported', `a PBKDF2 iteration count of ${n} is not supported`);
  if (params.keyLength !== undefined && params.keyLength !== spec.keyLength)
    throw problem('cms_malformed', 'the PBKDF2 key length does not fit the PWRI-KEK cipher');
  const kek = await derive({
    password: password.export(),
    salt: new Uint8Array(params.salt.buffer),
    iterations: n,
    keyLength: spec.keyLength,
    digest: prf,
  });
  const c = Buffer.from(pwri.encryptedKey.buffer);
  const b = spec.block;
  if (c.length < 2 * b || c.length % b !== 0) throw decryptionFailed(new Error('PWRI key length'));
  const cbc = (data: Buffer, from: Buffer) => {
    const d = createDecipheriv(spec.cipher, asSecretKey(kek), from).setAutoPadding(false);
    return Buffer.concat([d.update(data), d.final()]);
  };
  // RFC 3211 section 2.3.2: the last block with the one before as IV, then the first n-1 blocks
  // with that plaintext as IV strip the outer layer; the inner layer decrypts with the real IV.
  const last = cbc(c.subarray(c.length - b), c.subarray(c.length - 2 * b, c.length - b));
  const outerLayer = Buffer.concat([cbc(c.subarray(0, c.length - b), last), last]);
  const t = cbc(outerLayer, iv);
  const length = t[0];
  if (
    ((t[1] ^ t[4]) & (t[2] ^ t[5]) & (t[3] ^ t[6])) !== 0xff ||
    length < 1 ||
    4 + length > t.length
  )
    throw decryptionFailed(new Error('PWRI check bytes'));
  return Buffer.from(t.subarray(4, 4 + length));
}
