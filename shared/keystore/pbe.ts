/**
 * Password-based decryption for PKCS#12 bags and PKCS#8 EncryptedPrivateKeyInfo: PBES2 with
 * PBKDF2 or scrypt (RFC 8018 section 6.2, RFC 7914) and the PKCS#12 PBE schemes (RFC 7292
 * appendix C). Every derivation is charged to the WorkBudget first.
 * Anything else is keystore-unsupported-algorithm naming the OID.
 */
import { createDecipheriv, pbkdf2Sync, scryptSync } from 'node:crypto';
import type { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { octets, parseAsn } from '../asn1/der.ts';
import { OID, isNamedOid, oidName } from '../asn1/oids.ts';
import {
  Pbes2Params,
  Pbkdf2Params,
  Pkcs12PbeParams,
  ScryptParams,
  requireParams,
} from './schemas.ts';
import { KDF_IV, KDF_KEY, digestLength, pkcs12Kdf } from './pkcs12-kdf.ts';
import type { WorkBudget } from './pkcs12-kdf.ts';
import { rc2CbcDecrypt } from './rc2.ts';
import { problem } from '../errors/index.ts';

/** The password in both encodings: PBES2 takes UTF-8 (RFC 8018 section 3), PKCS#12 a BMPString. */
export interface Passwords {
  utf8: Buffer;
  bmp: Buffer;
}

/** Thrown when the cipher rejects the result (bad padding): the password, or a damaged file. */
export class DecryptionFailed extends Error {}

/** RFC 8018 appendix B.1: PBKDF2 pseudo-random functions. */
const PRFS: Record<string, string> = {
  [OID.hmacWithSha1]: 'sha1',
  [OID.hmacWithSha224]: 'sha224',
  [OID.hmacWithSha256]: 'sha256',
  [OID.hmacWithSha384]: 'sha384',
  [OID.hmacWithSha512]: 'sha512',
};

/** RFC 8018 appendix B.2 (and NIST AES OIDs): PBES2 encryption schemes, with key length. */
const PBES2_CIPHERS: Record<string, { cipher: string; keyLength: number }> = {
  [OID.aes128Cbc]: { cipher: 'aes-128-cbc', keyLength: 16 },
  [OID.aes192Cbc]: { cipher: 'aes-192-cbc', keyLength: 24 },
  [OID.aes256Cbc]: { cipher: 'aes-256-cbc', keyLength: 32 },
  [OID.desEde3Cbc]: { cipher: 'des-ede3-cbc', keyLength: 24 },
};

/** RFC 7292 appendix C: pbeWithSHAAnd* schemes; RC2 is the local implementation. */
const PKCS12_PBES: Record<string, { cipher: string; keyLength: number; rc2Bits?: number }> = {
  [OID.pbeSha13DesCbc]: { cipher: 'des-ede3-cbc', keyLength: 24 },
  [OID.pbeSha12DesCbc]: { cipher: 'des-ede-cbc', keyLength: 16 },
  [OID.pbeSha1Rc2128Cbc]: { cipher: 'rc2', keyLength: 16, rc2Bits: 128 },
  [OID.pbeSha1Rc240Cbc]: { cipher: 'rc2', keyLength: 5, rc2Bits: 40 },
};

/** Decrypts `data` under the password-based scheme `alg`, charging derivation to `budget`. */
export function pbeDecrypt(
  alg: AlgorithmIdentifier,
  data: Buffer,
  passwords: Passwords,
  budget: WorkBudget,
): Buffer {
  if (alg.algorithm === OID.pbes2) return pbes2Decrypt(alg, data, passwords.utf8, budget);
  const scheme = PKCS12_PBES[alg.algorithm];
  if (!scheme) throw unsupported('encryption algorithm', alg.algorithm);
  const name = oidName(alg.algorithm);

  const params = parseAsn(
    requireParams(alg, name),
    Pkcs12PbeParams,
    `${name} parameters`,
    'keystore_malformed',
  );
  const salt = Buffer.from(params.salt.buffer);
  // RFC 7292 appendix C: the hash is SHA-1 for every pbeWithSHAAnd* scheme.
  const key = pkcs12Kdf(
    'sha1',
    passwords.bmp,
    salt,
    KDF_KEY,
    params.iterations,
    scheme.keyLength,
    budget,
  );
  const iv = pkcs12Kdf('sha1', passwords.bmp, salt, KDF_IV, params.iterations, 8, budget);
  if (scheme.rc2Bits) {
    const plain = rc2CbcDecrypt(key, scheme.rc2Bits, iv, data);
    if (!plain) throw new DecryptionFailed(`${name}: bad padding`);
    return plain;
  }
  return decipher(scheme.cipher, key, iv, data);
}

/** RFC 8018 section 6.2.2: PBES2 decryption, with PBKDF2 (section 5.2) or scrypt (RFC 7914). */
function pbes2Decrypt(
  alg: AlgorithmIdentifier,
  data: Buffer,
  password: Buffer,
  budget: WorkBudget,
): Buffer {
  const params = parseAsn(
    requireParams(alg, 'PBES2'),
    Pbes2Params,
    'PBES2 parameters',
    'keystore_malformed',
  );
  const enc = params.encryptionScheme;
  const scheme = PBES2_CIPHERS[enc.algorithm];
  if (!scheme) throw unsupported('PBES2 encryption scheme', enc.algorithm);
  // RFC 8018 appendix B.2.2 and B.2.5: the parameters are the IV as an OCTET STRING.
  const iv = octets(requireParams(enc, scheme.cipher), `${scheme.cipher} IV`, 'keystore_malformed');

  const kdf = params.keyDerivationFunc;
  let key: Buffer;
  if (kdf.algorithm === OID.pbkdf2) key = pbkdf2Key(kdf, password, scheme.keyLength, budget);
  else if (kdf.algorithm === OID.scrypt) key = scryptKey(kdf, password, scheme.keyLength, budget);
  else throw unsupported('PBES2 key derivation function', kdf.algorithm);
  return decipher(scheme.cipher, key, iv, data);
}

/** RFC 8018 section 5.2 and appendix A.2. */
function pbkdf2Key(
  kdf: AlgorithmIdentifier,
  password: Buffer,
  keyLength: number,
  budget: WorkBudget,
): Buffer {
  const p = parseAsn(
    requireParams(kdf, 'PBKDF2'),
    Pbkdf2Params,
    'PBKDF2 parameters',
    'keystore_malformed',
  );
  // Appendix A.2: prf DEFAULT algid-hmacWithSHA1.
  const prfOid = p.prf?.algorithm ?? '1.2.840.113549.2.7';
  const hash = PRFS[prfOid];
  if (!hash) throw unsupported('PBKDF2 pseudo-random function', prfOid);
  checkKeyLength(p.keyLength, keyLength);
  budget.charge(p.iterationCount * Math.ceil(keyLength / digestLength(hash)), p.iterationCount);
  return pbkdf2Sync(password, Buffer.from(p.salt.buffer), p.iterationCount, keyLength, hash);
}

/** scrypt cap: 64 MiB of memory (128 * N * r bytes, RFC 7914 section 6). */
const SCRYPT_MAX_MEMORY = 64 * 1024 * 1024;

/** RFC 7914 section 7 (what `openssl pkcs8 -topk8 -scrypt` writes). */
function scryptKey(
  kdf: AlgorithmIdentifier,
  password: Buffer,
  keyLength: number,
  budget: WorkBudget,
): Buffer {
  const p = parseAsn(
    requireParams(kdf, 'scrypt'),
    ScryptParams,
    'scrypt parameters',
    'keystore_malformed',
  );
  const { costParameter: N, blockSize: r, parallelizationParameter: par } = p;
  if (![N, r, par].every((x) => Number.isSafeInteger(x) && x > 0) || (N & (N - 1)) !== 0 || N < 2) {
    throw problem('keystore_malformed', `scrypt parameters N=${N} r=${r} p=${par} are invalid`);
  }
  const memory = 128 * N * r;
  if (memory > SCRYPT_MAX_MEMORY)
    throw problem('keystore_malformed', `scrypt parameters need ${memory} bytes of memory`);
  checkKeyLength(p.keyLength, keyLength);
  // One scrypt block mix costs about as much as three PBKDF2 iterations.
  budget.charge(3 * N * r * par, N, 'scrypt cost parameter');
  return scryptSync(password, Buffer.from(p.salt.buffer), keyLength, {
    N,
    r,
    p: par,
    maxmem: 2 * memory + 1024 * 1024,
  });
}

function checkKeyLength(declared: number | undefined, expected: number): void {
  if (declared !== undefined && declared !== expected) {
    throw problem(
      'keystore_malformed',
      `declared key length ${declared} does not fit a ${expected}-byte cipher key`,
    );
  }
}

/** CBC decryption with padding check; a wrong IV length is malformed, bad padding DecryptionFailed. */
function decipher(cipher: string, key: Buffer, iv: Buffer, data: Buffer): Buffer {
  let d;
  try {
    d = createDecipheriv(cipher, key, iv);
  } catch (cause) {
    throw problem('keystore_malformed', `${cipher} IV has ${iv.length} bytes`, { cause });
  }
  try {
    return Buffer.concat([d.update(data), d.final()]);
  } catch (cause) {
    throw new DecryptionFailed(`${cipher}: bad padding or length`, { cause });
  }
}

function unsupported(what: string, oid: string): Error {
  const name = isNamedOid(oid) ? `${oidName(oid)} (OID ${oid})` : `OID ${oid}`;
  return problem('keystore_unsupported_algorithm', `unsupported ${what}: ${name}`, {
    details: { oid },
  });
}
