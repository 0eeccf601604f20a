/**
 * Compact JWE (RFC 7516 section 7.1) with node:crypto directly, for the encrypt/decrypt hot path.
 *
 *   AES keys   alg "dir", enc A128GCM / A256GCM (the key is the CEK)
 *   RSA keys   alg "RSA-OAEP-256" (RFC 7518 section 4.3), enc A256GCM
 *   EC keys    alg "ECDH-ES+A256KW" (RFC 7518 section 4.6), enc A256GCM
 *   ML-KEM, hybrids  alg "HPKE-12" / "HPKE-13" / "HPKE-9" / "HPKE-8" / "HPKE-10", Integrated Encryption
 *              (draft-ietf-jose-hpke-encrypt section 5: no enc, empty IV and tag, the HPKE
 *              ciphertext with its tag); "HPKE-n-KE" compact JWEs decrypt too
 *
 * The protected header names the key version as `kid: "<kid>#<version>"`, the same string as that
 * version's public JWK, so a verifier picks the right key; `ver` (the version, a number)
 * is written too, for older readers. Ciphertexts from before that naming (`kid` without `#`, plus
 * `ver`) still decrypt. An encryption context (AWS KMS EncryptionContext) is bound as `ctx`, a
 * digest of its entries, never in clear: the protected header is the GCM AAD (RFC 7516 section
 * 5.1 step 14), so decryption with another context, or an altered header, fails. Decryption also accepts what other JOSE
 * libraries produce for the same key (AnGCM content encryption, ECDH-ES and ECDH-ES+AnKW), and
 * every failure after the key lookup is the one opaque `decryption_failed` (RFC 7516 section 11.5),
 * the reason kept in `cause` for the log.
 */
import {
  constants,
  createCipheriv,
  createHmac,
  timingSafeEqual,
  createDecipheriv,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  randomFillSync,
} from 'node:crypto';
import { asSecretKey } from '../crypto/secret-key.ts';
import type { CipherGCMTypes, KeyObject } from 'node:crypto';
import { AppError, problem } from '../errors/index.ts';
import { KID } from '../ids.ts';
import { assertUsage } from '../crypto/registry.ts';
import type { ContentEncryption } from '../crypto/registry.ts';
import type { LoadedKeyVersion } from '../crypto/material.ts';
import { aesKeyUnwrap, aesKeyWrap } from '../crypto/aes-kw.ts';
import { ephemeralAgreement } from '../crypto/ecdh-es.ts';
import type { JoseCurve } from '../crypto/ecdh-es.ts';
import { concatKdf } from '../crypto/kdf.ts';
import { ecdhKeyWrapBits, recipientDerivedKey } from './keys.ts';
import { hpkeUnwrap, kemKeyOf } from './hpke-jwe.ts';
import { hpkeAlg, hpkeSuiteOf } from './pq-identifiers.ts';
import { open as hpkeOpen, seal as hpkeSeal } from '../crypto/hpke.ts';
import { splitVersionedKid, versionedKid } from './kid.ts';

/** The members of a protected header this module reads or writes. */
export interface JweHeader {
  alg: string;
  enc: string;
  kid: string;
  ver?: number;
  /** base64url SHA-256 of the encryption context (contextDigest), when one was given. */
  ctx?: string;
  epk?: unknown;
  apu?: string;
  apv?: string;
  [member: string]: unknown;
}

/** A compact JWE split into its parts, with the header parsed and the key version it names. */
export interface ParsedCompactJwe {
  header: JweHeader;
  /** The key's kid, without the `#<version>` suffix. */
  kid: string;
  version: number;
  /** BASE64URL(UTF8(protected header)), the AAD. */
  protectedHeader: string;
  encryptedKey: Buffer;
  iv: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

// Maps, not object literals: header values are attacker input and must not reach Object.prototype.
const ENC_BITS = new Map<unknown, number>([
  ['A128GCM', 128],
  ['A192GCM', 192],
  ['A256GCM', 256],
]);
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The opaque failure; `cause` explains it to the log, never to the client. */
function failed(cause: unknown): AppError {
  return problem('decryption_failed', 'decryption failed', {
    cause: cause instanceof Error ? cause : new Error(String(cause)),
  });
}

/**
 * Random 96-bit IVs (RFC 7518 section 5.3) dealt from a pool refilled by the CSPRNG: one
 * randomFillSync per 340 messages instead of a randomBytes call each, which saves a large share
 * of what a 1 KiB encryption costs (bench/results/design-figures.md). Each IV is copied out; the
 * pool is per thread.
 */
const ivPool = Buffer.alloc(IV_BYTES * 340);
let ivAt = ivPool.length;

function nextIv(): Buffer {
  if (ivAt === ivPool.length) {
    randomFillSync(ivPool);
    ivAt = 0;
  }
  const iv = Buffer.from(ivPool.subarray(ivAt, ivAt + IV_BYTES));
  ivAt += IV_BYTES;
  return iv;
}

function gcmEncrypt(
  cek: KeyObject | Buffer,
  bits: number,
  aad: Buffer,
  plaintext: Buffer,
): { iv: Buffer; ciphertext: Buffer; tag: Buffer } {
  const iv = nextIv();
  const cipher = createCipheriv(`aes-${bits}-gcm` as CipherGCMTypes, asSecretKey(cek), iv, {
    authTagLength: TAG_BYTES,
  });
  cipher.setAAD(aad);
  const head = cipher.update(plaintext);
  const tail = cipher.final();
  return {
    iv,
    ciphertext: tail.length === 0 ? head : Buffer.concat([head, tail]),
    tag: cipher.getAuthTag(),
  };
}

function gcmDecrypt(cek: KeyObject | Buffer, bits: number, p: ParsedCompactJwe): Buffer {
  const decipher = createDecipheriv(`aes-${bits}-gcm` as CipherGCMTypes, asSecretKey(cek), p.iv, {
    authTagLength: TAG_BYTES,
  });
  decipher.setAAD(Buffer.from(p.protectedHeader, 'ascii'));
  decipher.setAuthTag(p.tag);
  const head = decipher.update(p.ciphertext);
  const tail = decipher.final();
  return tail.length === 0 ? head : Buffer.concat([head, tail]);
}

const b64 = (value: unknown): string =>
  Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** Encryption options: the content encryption, and the context digest to bind (contextDigest). */
export interface EncryptOptions {
  enc?: ContentEncryption;
  context?: string;
}

/**
 * The digest bound into the header for an encryption context: HMAC-SHA-256, under a key the
 * service derives from its master key, of the JSON of the entries sorted by key, so member order
 * does not matter and, unlike a plain hash, a guessable value (`{tenant: "acme"}`) cannot be
 * confirmed from a ciphertext by anyone without the service. An empty or absent context binds
 * nothing. The caller has checked that every value is a string.
 */
export function contextDigest(
  context: Readonly<Record<string, string>> | undefined,
  key: KeyObject,
): string | undefined {
  if (context === undefined) return undefined;
  const entries = Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return undefined;
  return createHmac('sha256', key).update(JSON.stringify(entries), 'utf8').digest('base64url');
}

/** The header members naming the key version and binding the context. */
const naming = (key: LoadedKeyVersion, context: string | undefined) => ({
  kid: versionedKid(key.kid, key.version),
  ver: key.version,
  ...(context ? { ctx: context } : {}),
});

/** The per-key-version header, built once: dir and RSA-OAEP headers do not change between messages. */
const staticHeaders = new WeakMap<
  LoadedKeyVersion,
  Map<string, { encoded: string; aad: Buffer }>
>();

function staticHeader(
  key: LoadedKeyVersion,
  alg: string,
  enc: string,
): { encoded: string; aad: Buffer } {
  let byEnc = staticHeaders.get(key);
  if (!byEnc) staticHeaders.set(key, (byEnc = new Map()));
  let h = byEnc.get(enc);
  if (!h) {
    const encoded = b64({ alg, enc, ...naming(key, undefined) });
    byEnc.set(enc, (h = { encoded, aad: Buffer.from(encoded, 'ascii') }));
  }
  return h;
}

/**
 * A JWE's five parts as the sealer makes them: the protected header's base64url text and the
 * other four as bytes. encryptCompact writes them as the compact serialization; the ciphertext
 * blob (ciphertext-blob.ts) writes the bytes as they are, without a base64url pass.
 */
export interface JweParts {
  header: string;
  encryptedKey: Buffer;
  iv: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

const EMPTY = Buffer.alloc(0);

/** The compact serialization of a JWE's parts. */
const compactOf = (p: JweParts): string =>
  `${p.header}.${p.encryptedKey.toString('base64url')}.${p.iv.toString('base64url')}.${p.ciphertext.toString('base64url')}.${p.tag.toString('base64url')}`;

/** A header for one message: with a context it differs per call, so it is not cached. */
function header(
  key: LoadedKeyVersion,
  alg: string,
  enc: string,
  context: string | undefined,
): { encoded: string; aad: Buffer } {
  if (context === undefined) return staticHeader(key, alg, enc);
  const encoded = b64({ alg, enc, ...naming(key, context) });
  return { encoded, aad: Buffer.from(encoded, 'ascii') };
}

/** Encrypts to a compact JWE whose header names the key version and binds the context digest; `enc` may be chosen for RSA and EC keys. */
export const encryptCompact = (
  key: LoadedKeyVersion,
  plaintext: Buffer,
  opts: EncryptOptions = {},
): string => compactOf(encryptParts(key, plaintext, opts));

/** encryptCompact's JWE as its parts. */
export function encryptParts(
  key: LoadedKeyVersion,
  plaintext: Buffer,
  opts: EncryptOptions = {},
): JweParts {
  assertUsage(key, 'encrypt');
  const spec = key.spec;
  const hpke = hpkeSuiteOf(key.type);
  if (hpke) {
    // Integrated Encryption: HPKE seals the plaintext itself, with the protected header as aad.
    if (opts.enc !== undefined)
      throw problem('validation_failed', `${hpke.integrated} has no separate content encryption`);
    const encoded = b64({ alg: hpke.integrated, ...naming(key, opts.context) });
    const sealed = hpkeSeal(key, Buffer.alloc(0), Buffer.from(encoded, 'ascii'), plaintext);
    return {
      header: encoded,
      encryptedKey: sealed.enc,
      iv: EMPTY,
      ciphertext: sealed.ct,
      tag: EMPTY,
    };
  }
  if (!spec.jwe)
    throw problem(
      'key_usage_mismatch',
      spec.family === 'okp'
        ? `a ${key.type} key only receives CMS key agreement (RFC 8418); it does not encrypt JWE`
        : `a ${key.type} key does not encrypt JWE; use encapsulation`,
    );
  if (spec.family === 'aes') {
    if (opts.enc !== undefined && opts.enc !== spec.jwe.enc)
      throw problem('validation_failed', `a ${key.type} key encrypts with ${spec.jwe.enc}`);
    const h = header(key, 'dir', spec.jwe.enc, opts.context);
    return {
      header: h.encoded,
      encryptedKey: EMPTY,
      ...gcmEncrypt(key.secretKey!, spec.bits, h.aad, plaintext),
    };
  }
  const enc = opts.enc ?? spec.jwe.enc;
  const bits = ENC_BITS.get(enc);
  if (bits === undefined)
    throw problem('validation_failed', `unsupported content encryption ${enc}`, {
      details: { allowed: [...ENC_BITS.keys()] },
    });
  const cek = randomBytes(bits / 8);
  if (spec.family === 'rsa') {
    const h = header(key, 'RSA-OAEP-256', enc, opts.context);
    const encryptedKey = publicEncrypt(
      { key: key.publicKey!, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
      cek,
    );
    return { header: h.encoded, encryptedKey, ...gcmEncrypt(cek, bits, h.aad, plaintext) };
  }
  // ECDH-ES+A256KW: a fresh ephemeral key per message, so the header (it carries epk) is per message too.
  const alg = spec.jwe.alg;
  const { z, epk } = ephemeralAgreement(spec.curve!, key.publicKey!);
  const kek = concatKdf(z, ecdhKeyWrapBits(alg)!, alg);
  const encoded = b64({ alg, enc, epk, ...naming(key, opts.context) });
  return {
    header: encoded,
    encryptedKey: aesKeyWrap(kek, cek),
    ...gcmEncrypt(cek, bits, Buffer.from(encoded, 'ascii'), plaintext),
  };
}

/** Strict base64url: Node's decoder skips what it does not know, so the round trip must give the input back. */
function decodePart(part: string, what: string): Buffer {
  const bytes = Buffer.from(part, 'base64url');
  if (bytes.toString('base64url') !== part) throw failed(`${what} is not canonical base64url`);
  return bytes;
}

/** Splits a compact JWE and reads the kid and version from its protected header; malformed input is decryption_failed. */
export function parseCompact(jwe: string): ParsedCompactJwe {
  if (typeof jwe !== 'string') throw failed('the JWE is not a string');
  const parts = jwe.split('.');
  if (parts.length !== 5) throw failed('a compact JWE has five parts');
  const [protectedHeader, ek, iv, ct, tag] = parts;
  let header: JweHeader;
  try {
    header = JSON.parse(
      decodePart(protectedHeader, 'protected header').toString('utf8'),
    ) as JweHeader;
  } catch (cause) {
    throw cause instanceof AppError ? cause : failed(cause);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header))
    throw failed('the protected header is not a JSON object');
  const { kid, version } = keyVersionOf(header);
  return {
    header,
    kid,
    version,
    protectedHeader,
    encryptedKey: decodePart(ek, 'encrypted key'),
    iv: decodePart(iv, 'iv'),
    ciphertext: decodePart(ct, 'ciphertext'),
    tag: decodePart(tag, 'tag'),
  };
}

/**
 * The key version a header names: `kid` "<kid>#<version>" (with `ver`, when present, agreeing), or
 * the older `kid` plus `ver`.
 */
function keyVersionOf(header: JweHeader): { kid: string; version: number } {
  if (typeof header.kid !== 'string' || header.kid === '')
    throw failed('the protected header names no kid');
  const named = splitVersionedKid(header.kid);
  if (named.version === undefined) {
    if (header.kid.includes('#')) throw failed('the protected header kid names no key version');
    if (!Number.isSafeInteger(header.ver) || (header.ver as number) < 1)
      throw failed('the protected header names no key version');
    if (!KID.test(header.kid)) throw failed('the protected header names no valid kid');
    return { kid: header.kid, version: header.ver as number };
  }
  if (header.ver !== undefined && header.ver !== named.version)
    throw failed('kid and ver name different key versions');
  if (!KID.test(named.kid)) throw failed('the protected header names no valid kid');
  return { kid: named.kid, version: named.version };
}

/** Whether the header binds exactly the given context digest (none when both are absent). */
function sameContext(bound: unknown, context: string | undefined): boolean {
  if (bound === undefined || context === undefined) return bound === context;
  if (typeof bound !== 'string') return false;
  const a = Buffer.from(bound, 'utf8');
  const b = Buffer.from(context, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Decrypts a parsed compact JWE with the key version it names; `context` is the digest the caller's context gives (contextDigest). */
export function decryptParsed(
  p: ParsedCompactJwe,
  key: LoadedKeyVersion,
  context?: string,
): Buffer {
  assertUsage(key, 'encrypt');
  try {
    // The context is checked before any key use; the header is the AAD, so a `ctx` swapped into it fails the tag below.
    if (!sameContext(p.header.ctx, context))
      throw new Error('the encryption context differs from the one bound');
    return decryptWith(p, key);
  } catch (cause) {
    // Every failure, the HPKE layer's own decryption-failed included, is this one answer: the
    // same words whatever key type or step failed.
    throw failed(cause);
  }
}

function decryptWith(p: ParsedCompactJwe, key: LoadedKeyVersion): Buffer {
  const { alg, enc } = p.header;
  const hpke = hpkeAlg(alg);
  if (hpke) return hpkeDecryptWith(p, key, hpke.mode);
  const bits = ENC_BITS.get(enc);
  // We never compress and understand no critical extension, so both are refused (RFC 7516 section 4.1.13).
  if (bits === undefined) throw new Error(`unsupported enc ${String(enc)}`);
  if (p.header.zip !== undefined || p.header.crit !== undefined)
    throw new Error('zip and crit are not supported');
  if (p.iv.length !== IV_BYTES || p.tag.length !== TAG_BYTES)
    throw new Error('iv or tag has the wrong length');
  if (key.kid !== p.kid || key.version !== p.version)
    throw new Error('the key looked up is not the one the header names');
  const family = key.spec.family;

  if (family === 'aes') {
    if (alg !== 'dir' || bits !== key.spec.bits || p.encryptedKey.length !== 0)
      throw new Error(`alg ${alg}/${enc} does not fit a ${key.type} key`);
    return gcmDecrypt(key.secretKey!, bits, p);
  }
  if (!key.privateKey) throw new Error('the key has no private part');
  if (family === 'rsa') {
    if (alg !== 'RSA-OAEP-256') throw new Error(`alg ${alg} does not fit an RSA key`);
    let cek: Buffer;
    try {
      cek = privateDecrypt(
        { key: key.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
        p.encryptedKey,
      );
    } catch {
      // RFC 7516 section 11.5: carry on with a random CEK so a bad key and a bad tag look alike.
      cek = randomBytes(bits / 8);
    }
    if (cek.length !== bits / 8) cek = randomBytes(bits / 8);
    return gcmDecrypt(cek, bits, p);
  }
  if (family === 'ec') {
    const direct = alg === 'ECDH-ES';
    const kwBits = ecdhKeyWrapBits(alg);
    if (!direct && kwBits === undefined) throw new Error(`alg ${alg} does not fit an EC key`);
    const crv = key.spec.curve as JoseCurve;
    if (direct) {
      if (p.encryptedKey.length !== 0) throw new Error('ECDH-ES carries no encrypted key');
      return gcmDecrypt(recipientDerivedKey(key.privateKey, crv, p.header, enc, bits), bits, p);
    }
    const cek = aesKeyUnwrap(
      recipientDerivedKey(key.privateKey, crv, p.header, alg, kwBits!),
      p.encryptedKey,
    );
    if (cek.length !== bits / 8) throw new Error('the unwrapped key does not fit enc');
    return gcmDecrypt(cek, bits, p);
  }
  throw new Error(`a ${key.type} key does not decrypt JWE`);
}

/** HPKE compact JWEs: Integrated (section 5) or Key Encryption with one recipient (section 6). */
function hpkeDecryptWith(
  p: ParsedCompactJwe,
  key: LoadedKeyVersion,
  mode: 'integrated' | 'key-encryption',
): Buffer {
  if (p.header.zip !== undefined || p.header.crit !== undefined)
    throw new Error('zip and crit are not supported');
  if (key.kid !== p.kid || key.version !== p.version)
    throw new Error('the key looked up is not the one the header names');
  const named = hpkeAlg(p.header.alg)!;
  if (named.type !== key.type)
    throw new Error(`alg ${p.header.alg} does not fit a ${key.type} key`);
  if (mode === 'integrated') {
    if (p.header.enc !== undefined || p.iv.length !== 0 || p.tag.length !== 0)
      throw new Error('Integrated Encryption has no enc, IV or tag');
    return hpkeOpen(
      key,
      p.encryptedKey,
      Buffer.alloc(0),
      Buffer.from(p.protectedHeader, 'ascii'),
      p.ciphertext,
    );
  }
  const bits = ENC_BITS.get(p.header.enc);
  if (bits === undefined) throw new Error(`unsupported enc ${String(p.header.enc)}`);
  if (p.iv.length !== IV_BYTES || p.tag.length !== TAG_BYTES)
    throw new Error('iv or tag has the wrong length');
  const cek = hpkeUnwrap(
    { ...kemKeyOf(key), kid: key.kid, version: key.version },
    p.header,
    p.encryptedKey,
    p.header.enc,
    bits / 8,
  );
  return gcmDecrypt(cek, bits, p);
}

/** Decrypts a compact JWE, looking up the key version its header names; lookup errors (unknown kid, revoked) pass through. */
export function decryptCompact(
  jwe: string,
  lookup: (kid: string, version: number) => LoadedKeyVersion,
  context?: string,
): Buffer {
  const parsed = parseCompact(jwe);
  return decryptParsed(parsed, lookup(parsed.kid, parsed.version), context);
}

/** decryptCompact for a lookup that reads the key store (a promise), with the same error rules. */
export async function decryptCompactAsync(
  jwe: string,
  lookup: (kid: string, version: number) => LoadedKeyVersion | Promise<LoadedKeyVersion>,
): Promise<Buffer> {
  const parsed = parseCompact(jwe);
  return decryptParsed(parsed, await lookup(parsed.kid, parsed.version));
}
