/**
 * PKCS#12 (RFC 7292) in password integrity and password privacy modes: the PFX, its MAC
 * (section 5 and appendix B), the AuthenticatedSafe and its SafeContents (section 4), decrypted
 * with pbe.ts. Public-key modes (SignedData, EnvelopedData) are refused with a 415.
 */
import { createHmac, createPrivateKey, timingSafeEqual } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { AuthenticatedSafe, CertBag, PFX, SafeContents } from '@peculiar/asn1-pfx';
import type { MacData, SafeBag } from '@peculiar/asn1-pfx';
import { EncryptedPrivateKeyInfo, PrivateKeyInfo } from '@peculiar/asn1-pkcs8';
import { DirectoryString } from '@peculiar/asn1-x509';
import type { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { octets, parseAsn } from '../asn1/der.ts';
import { DIGESTS, OID } from '../asn1/oids.ts';
import { CmsEncryptedData } from './schemas.ts';
import { DecryptionFailed, pbeDecrypt } from './pbe.ts';
import type { Passwords } from './pbe.ts';
import {
  KDF_MAC,
  WorkBudget,
  bmpPassword,
  digestLength,
  isPkcs12KdfHash,
  pkcs12Kdf,
} from './pkcs12-kdf.ts';
import { describeDer } from './sniff.ts';
import { unloadableKeyProblem } from './entries.ts';
import type { FoundCertificate, FoundKey } from './entries.ts';
import { problem } from '../errors/index.ts';

/** SafeContents bags may nest (safeContentsBag); real files use one level at most. */
const MAX_NESTING = 3;

interface Context {
  passwords: Passwords;
  macVerified: boolean;
  budget: WorkBudget;
  keys: FoundKey[];
  certs: FoundCertificate[];
}

/** Reads the keys and certificates of a DER PKCS#12 file. */
export function readPkcs12(
  data: Buffer,
  password: string | undefined,
  budget = new WorkBudget(),
): { keys: FoundKey[]; certs: FoundCertificate[] } {
  let pfx: PFX;
  try {
    pfx = parseAsn(data, PFX, 'PFX', 'keystore_malformed');
  } catch {
    throw problem('keystore_malformed', describeDer(data));
  }
  if (pfx.version !== 3)
    throw problem(
      'keystore_malformed',
      `PFX version ${pfx.version} (RFC 7292 section 4 requires 3)`,
    );
  const authSafe = pfx.authSafe;
  if (authSafe.contentType === OID.signedData) {
    throw problem(
      'keystore_unsupported_algorithm',
      'PKCS#12 public-key integrity mode (SignedData authSafe) is not supported',
    );
  }
  if (authSafe.contentType !== OID.data) {
    throw problem(
      'keystore_malformed',
      `PFX authSafe has content type ${authSafe.contentType}, expected data`,
    );
  }
  const authSafeOctets = octets(authSafe.content, 'PFX authSafe content', 'keystore_malformed');

  // RFC 7292 appendix B.1: an empty password may have been written as just the BMP terminator
  // (OpenSSL with "") or as no bytes at all (OpenSSL with no password); try both.
  const candidates = password ? [bmpPassword(password)] : [bmpPassword(''), Buffer.alloc(0)];
  // asn1-pfx fills an absent macData with an empty default; a real one always names its digest.
  const macData = pfx.macData?.mac.digestAlgorithm.algorithm ? pfx.macData : undefined;
  const bmp = macData
    ? verifyMac(macData, authSafeOctets, candidates, password, budget)
    : candidates[0];

  const ctx: Context = {
    passwords: { utf8: Buffer.from(password ?? '', 'utf8'), bmp },
    macVerified: Boolean(macData),
    budget,
    keys: [],
    certs: [],
  };
  for (const info of parseAsn(
    authSafeOctets,
    AuthenticatedSafe,
    'AuthenticatedSafe',
    'keystore_malformed',
  )) {
    if (info.contentType === OID.data) {
      readSafeContents(
        parseAsn(
          octets(info.content, 'SafeContents data', 'keystore_malformed'),
          SafeContents,
          'SafeContents',
          'keystore_malformed',
        ),
        ctx,
        0,
      );
    } else if (info.contentType === OID.encryptedData) {
      const eci = parseAsn(
        info.content,
        CmsEncryptedData,
        'EncryptedData',
        'keystore_malformed',
      ).encryptedContentInfo;
      const content = eci.encryptedContent;
      const cipherText =
        content?.value ??
        (content?.constructedValue ? { buffer: concat(content.constructedValue) } : undefined);
      if (!cipherText)
        throw problem('keystore_malformed', 'EncryptedData has no encrypted content');
      const what = 'encrypted SafeContents (certificates)';
      const plain = decrypt(
        eci.contentEncryptionAlgorithm,
        Buffer.from(cipherText.buffer),
        what,
        ctx,
      );
      readSafeContents(parseDecrypted(plain, SafeContents, what, ctx), ctx, 0);
    } else if (info.contentType === OID.envelopedData) {
      throw problem(
        'keystore_unsupported_algorithm',
        'PKCS#12 public-key privacy mode (EnvelopedData) is not supported',
      );
    } else {
      throw problem(
        'keystore_malformed',
        `AuthenticatedSafe holds content type ${info.contentType}`,
      );
    }
  }
  return { keys: ctx.keys, certs: ctx.certs };
}

/**
 * RFC 7292 section 5.1 and appendix B.4: HMAC over the authSafe content octets, keyed by the
 * PKCS#12 KDF with ID 3 and a key as long as the hash output. Returns the password form that
 * verified; keystore-password-invalid when none does.
 */
function verifyMac(
  macData: MacData,
  content: Buffer,
  candidates: Buffer[],
  password: string | undefined,
  budget: WorkBudget,
): Buffer {
  const oid = macData.mac.digestAlgorithm.algorithm;
  if (oid === OID.pbmac1)
    throw problem(
      'keystore_unsupported_algorithm',
      `PBMAC1 (RFC 9579, OID ${oid}) integrity is not supported`,
    );
  // RFC 7292 section 4 and RFC 5754 section 2: the MAC's DigestInfo names one of the SHA hashes.
  const hash = DIGESTS[oid];
  if (!hash || !isPkcs12KdfHash(hash))
    throw problem(
      'keystore_unsupported_algorithm',
      `unsupported MAC digest algorithm: OID ${oid}`,
      { details: { oid } },
    );
  const expected = Buffer.from(macData.mac.digest.buffer);
  const salt = Buffer.from(macData.macSalt.buffer);
  for (const bmp of candidates) {
    const key = pkcs12Kdf(hash, bmp, salt, KDF_MAC, macData.iterations, digestLength(hash), budget);
    const actual = createHmac(hash, key).update(content).digest();
    if (actual.length === expected.length && timingSafeEqual(actual, expected)) return bmp;
  }
  throw problem(
    'keystore_password_invalid',
    password
      ? 'MAC verification failed: the password is wrong or the file was altered'
      : 'MAC verification failed: the keystore needs a password',
  );
}

/** RFC 7292 section 4.2: the bags of one SafeContents. Unknown, CRL and secret bags are skipped. */
function readSafeContents(bags: SafeContents, ctx: Context, depth: number): void {
  for (const bag of bags) {
    if (bag.bagId === OID.keyBag) {
      const der = Buffer.from(bag.bagValue);
      ctx.keys.push({
        privateKey: toKey(
          der,
          parseAsn(der, PrivateKeyInfo, 'key bag', 'keystore_malformed'),
          'key bag',
        ),
        ...attributes(bag),
      });
    } else if (bag.bagId === OID.pkcs8ShroudedKeyBag) {
      const epki = parseAsn(
        bag.bagValue,
        EncryptedPrivateKeyInfo,
        'PKCS8ShroudedKeyBag',
        'keystore_malformed',
      );
      const what = 'shrouded key bag';
      const plain = decrypt(
        epki.encryptionAlgorithm,
        Buffer.from(epki.encryptedData.buffer),
        what,
        ctx,
      );
      ctx.keys.push({
        privateKey: toKey(plain, parseDecrypted(plain, PrivateKeyInfo, what, ctx), what),
        ...attributes(bag),
      });
    } else if (bag.bagId === OID.certBag) {
      const certBag = parseAsn(bag.bagValue, CertBag, 'CertBag', 'keystore_malformed');
      // Section 4.2.3: x509Certificate holds DER in an OCTET STRING; sdsiCertificate is skipped.
      if (certBag.certId === OID.x509Certificate)
        ctx.certs.push({
          der: octets(certBag.certValue, 'x509Certificate', 'keystore_malformed'),
          ...attributes(bag),
        });
    } else if (bag.bagId === OID.safeContentsBag) {
      if (depth >= MAX_NESTING)
        throw problem(
          'keystore_malformed',
          `SafeContents nested deeper than ${MAX_NESTING} levels`,
        );
      readSafeContents(
        parseAsn(bag.bagValue, SafeContents, 'nested SafeContents', 'keystore_malformed'),
        ctx,
        depth + 1,
      );
    }
  }
}

/** Decrypts with the keystore password; a padding failure becomes keystore-password-invalid. */
function decrypt(alg: AlgorithmIdentifier, data: Buffer, what: string, ctx: Context): Buffer {
  try {
    return pbeDecrypt(alg, data, ctx.passwords, ctx.budget);
  } catch (cause) {
    if (!(cause instanceof DecryptionFailed)) throw cause;
    throw problem(
      'keystore_password_invalid',
      ctx.macVerified
        ? `the MAC verified but the ${what} did not decrypt: it is damaged or under a different password`
        : `decryption failed: the password does not decrypt the ${what}`,
      { cause },
    );
  }
}

/**
 * Parses what a password-based cipher produced. With a wrong password the CBC padding check
 * passes about once in 256 tries, leaving garbage: that is a password problem unless a MAC
 * already vouched for the password.
 */
function parseDecrypted<T>(plain: Buffer, type: new () => T, what: string, ctx: Context): T {
  try {
    return parseAsn(plain, type, what, 'keystore_malformed');
  } catch (cause) {
    if (ctx.macVerified)
      throw problem('keystore_malformed', `the decrypted ${what} is not valid DER`, { cause });
    throw problem(
      'keystore_password_invalid',
      `decryption failed: the password does not decrypt the ${what}`,
      { cause },
    );
  }
}

/** A PKCS#8 PrivateKeyInfo (RFC 5958 section 2) as a KeyObject. */
function toKey(der: Buffer, info: PrivateKeyInfo, what: string): KeyObject {
  try {
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch (cause) {
    throw unloadableKeyProblem(info.privateKeyAlgorithm.algorithm, what, cause);
  }
}

/** RFC 7292 section 4.2: the friendlyName (BMPString) and localKeyId (OCTET STRING) attributes. */
function attributes(bag: SafeBag): { localKeyId?: Buffer; friendlyName?: string } {
  const out: { localKeyId?: Buffer; friendlyName?: string } = {};
  for (const attr of bag.bagAttributes ?? []) {
    const value = attr.attrValues[0];
    if (!value) continue;
    if (attr.attrId === OID.localKeyId)
      out.localKeyId = octets(value, 'localKeyId', 'keystore_malformed');
    if (attr.attrId === OID.friendlyName)
      out.friendlyName = parseAsn(
        value,
        DirectoryString,
        'friendlyName',
        'keystore_malformed',
      ).toString();
  }
  return out;
}

function concat(parts: { buffer: ArrayBuffer }[]): ArrayBuffer {
  const all = Buffer.concat(parts.map((p) => Buffer.from(p.buffer)));
  return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer;
}
