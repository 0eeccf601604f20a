/**
 * Transit's data operations over the runtime's own seal, unseal, sign, verify and MAC, each on
 * one request (or one `batch_input` item): the JWE, the context binding, the key states and the
 * decryption-failure budget are the Core API's. Each answers Transit's `data` members plus `kid`
 * (the audit target, dropped before the answer is written).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { decodeBase64 } from '../../../shared/base64.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';
import { derToP1363, p1363ToDer } from '../../../shared/crypto/ecdsa-signature.ts';
import type { CachedKey } from '../../../shared/keys/cache.ts';
import { encryptionContext, operationKey, seal, unseal } from '../crypto/runtime.ts';
import { sign, verify } from '../crypto/signing.ts';
import { generateMac, verifyMac } from '../crypto/mac.ts';
import { runtimeCaller } from '../crypto/batch.ts';
import { fromCiphertext, fromPrefixed, prefixed, toCiphertext } from './ciphertext.ts';
import { invalidCiphertext, invalidRequest, keyNotFound } from './errors.ts';

type Input = Record<string, unknown>;
type Answer = Promise<Record<string, unknown>>;

/** A plaintext's bound, as the native API's body bound allows (base64 in a JSON body). */
const MAX_PLAINTEXT_BYTES = 1024 * 1024;

/** A base64 member as bytes; Vault's 400 naming it otherwise. Empty is allowed (Vault encrypts ""). */
function bytes(input: Input, field: string, required = true): Buffer | undefined {
  const v = input[field];
  if (v === undefined && !required) return undefined;
  const b = typeof v === 'string' ? decodeBase64(v, 'standard') : undefined;
  if (!b) throw invalidRequest(`${field} must be base64-encoded`);
  if (b.length > MAX_PLAINTEXT_BYTES)
    throw invalidRequest(`${field} is larger than ${MAX_PLAINTEXT_BYTES} bytes`);
  return b;
}

/** The key a data operation names; Vault's "encryption key not found" when the tenant holds none. */
async function keyOf(ctx: AppContext, tenantId: string, kid: string): Promise<CachedKey> {
  try {
    return await operationKey(ctx, tenantId, kid);
  } catch (err) {
    if (err instanceof AppError && err.code === 'key_not_found') throw keyNotFound();
    throw err;
  }
}

/**
 * The context digest of a request: Transit's `context` (base64) bound as the encryption context
 * `{"vault-transit:context": <base64>}`. A derived key requires one, as Vault does.
 */
function contextOf(ctx: AppContext, key: CachedKey, input: Input): string | undefined {
  const v = input.context;
  if (v === undefined || v === '') {
    if (key.transitDerived)
      throw invalidRequest(
        "missing 'context' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key",
      );
    return undefined;
  }
  const b = typeof v === 'string' ? decodeBase64(v, 'standard') : undefined;
  if (!b || b.length === 0 || b.length > 4096)
    throw invalidRequest('context must be base64-encoded, 1 to 4096 bytes');
  return encryptionContext(ctx, { 'vault-transit:context': b.toString('base64') });
}

/** `key_version` on encrypt: Keyward encrypts with the latest version only (0 or absent names it). */
function latestOnly(key: CachedKey, input: Input): void {
  const v = input.key_version;
  if (v === undefined || v === 0 || v === key.currentVersion) return;
  if (!Number.isSafeInteger(v)) throw invalidRequest('key_version must be an integer');
  throw invalidRequest(
    `this service encrypts with the latest version only (${key.currentVersion}); omit key_version`,
  );
}

/** Counts a ciphertext refused before it reached the cipher against the caller's budget, as unseal counts the rest. */
async function refusedCiphertext(ctx: AppContext, key: CachedKey): Promise<never> {
  const caller = runtimeCaller();
  if (caller) await ctx.decryption.failed(caller, key.kid, 'runtime').catch(() => {});
  throw invalidCiphertext();
}

/**
 * Opens a Transit ciphertext of the key: any failure but a key state, a retired version, an
 * exhausted budget or an outage is the one invalid-ciphertext answer.
 */
async function open(ctx: AppContext, tenantId: string, key: CachedKey, input: Input) {
  let jwe: string;
  try {
    jwe = fromCiphertext(input.ciphertext, key.kid);
  } catch {
    return refusedCiphertext(ctx, key);
  }
  const context = contextOf(ctx, key, input);
  try {
    return await unseal(ctx, tenantId, jwe, context);
  } catch (err) {
    if (
      err instanceof AppError &&
      (err.status >= 500 ||
        [
          'key_suspended',
          'key_pending_deletion',
          'key_revoked',
          'key_version_retired',
          'rate_limited',
          'pool_busy',
        ].includes(err.code))
    )
      throw err;
    throw invalidCiphertext();
  }
}

/** encrypt/:name: `{plaintext, context?, key_version?}` → `{ciphertext, key_version}`. */
export async function encrypt(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  input: Input,
): Answer {
  const plaintext = bytes(input, 'plaintext')!;
  const key = await keyOf(ctx, tenantId, kid);
  latestOnly(key, input);
  const sealed = await seal(ctx, key, plaintext, contextOf(ctx, key, input), 'blob');
  return {
    kid: key.kid,
    ciphertext: toCiphertext(sealed.version, sealed.ciphertext),
    key_version: sealed.version,
  };
}

/** decrypt/:name: `{ciphertext, context?}` → `{plaintext}`. */
export async function decrypt(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  input: Input,
): Answer {
  const key = await keyOf(ctx, tenantId, kid);
  const { plaintext } = await open(ctx, tenantId, key, input);
  try {
    return { kid: key.kid, plaintext: plaintext.toString('base64') };
  } finally {
    plaintext.fill(0);
  }
}

/** rewrap/:name: opens under the same context and seals with the latest version. */
export async function rewrap(ctx: AppContext, tenantId: string, kid: string, input: Input): Answer {
  const key = await keyOf(ctx, tenantId, kid);
  latestOnly(key, input);
  const opened = await open(ctx, tenantId, key, input);
  try {
    const sealed = await seal(
      ctx,
      opened.key,
      opened.plaintext,
      contextOf(ctx, key, input),
      'blob',
    );
    return {
      kid: key.kid,
      ciphertext: toCiphertext(sealed.version, sealed.ciphertext),
      key_version: sealed.version,
    };
  } finally {
    opened.plaintext.fill(0);
  }
}

const DATA_KEY_BITS = new Set<unknown>([128, 256, 512]);

/** datakey/plaintext|wrapped/:name: a fresh key sealed under the named key, with or without its plaintext. */
export function dataKey(withPlaintext: boolean) {
  return async (ctx: AppContext, tenantId: string, kid: string, input: Input): Answer => {
    const bits = input.bits ?? 256;
    if (!DATA_KEY_BITS.has(bits)) throw invalidRequest('bits must be 128, 256 or 512');
    const key = await keyOf(ctx, tenantId, kid);
    const context = contextOf(ctx, key, input);
    const plaintext = randomBytes((bits as number) / 8);
    try {
      const sealed = await seal(ctx, key, plaintext, context, 'blob');
      return {
        kid: key.kid,
        ciphertext: toCiphertext(sealed.version, sealed.ciphertext),
        key_version: sealed.version,
        ...(withPlaintext ? { plaintext: plaintext.toString('base64') } : {}),
      };
    } finally {
      plaintext.fill(0);
    }
  };
}

/** Transit hash names → node:crypto's, for hash and for the algorithm of a key. */
const HASHES = new Map<unknown, string>([
  ['sha2-224', 'sha224'],
  ['sha2-256', 'sha256'],
  ['sha2-384', 'sha384'],
  ['sha2-512', 'sha512'],
  ['sha3-224', 'sha3-224'],
  ['sha3-256', 'sha3-256'],
  ['sha3-384', 'sha3-384'],
  ['sha3-512', 'sha3-512'],
]);

/** The hash a key of `bits` uses (HMAC keys, ECDSA curves), by its Transit name. */
const hashOfBits = (bits: number) =>
  bits <= 256 ? 'sha2-256' : bits <= 384 ? 'sha2-384' : 'sha2-512';

/** The named hash (`algorithm` or `hash_algorithm`), which must be `fixed` where the key fixes it. */
function namedHash(input: Input, fixed: string, what: string): string {
  const named = input.hash_algorithm ?? input.algorithm ?? fixed;
  if (!HASHES.has(named))
    throw invalidRequest(`unsupported hash algorithm ${String(named).slice(0, 40)}`);
  if (named !== fixed)
    throw invalidRequest(
      `${what} use ${fixed} in this service; ${String(named)} is not served for it`,
    );
  return fixed;
}

/** hmac/:name: `{input, algorithm?}` → `{hmac: "vault:v<N>:<base64>"}` with an HMAC key. */
export async function hmac(ctx: AppContext, tenantId: string, kid: string, input: Input): Answer {
  const data = bytes(input, 'input')!;
  const key = await keyOf(ctx, tenantId, kid);
  latestOnly(key, input);
  const spec = keyTypeSpec(key.type);
  if (spec.family !== 'hmac') throw invalidRequest('HMAC is served with keys of type hmac only');
  namedHash(input, hashOfBits(spec.bits), `keys of type ${key.type}`);
  const r = await generateMac(ctx, tenantId, { kid: key.kid, data: data.toString('base64') });
  return {
    kid: key.kid,
    hmac: prefixed(r.version, Buffer.from(r.mac, 'base64')),
    key_version: r.version,
  };
}

/** The JOSE algorithm of a signing key for a Transit request (hash, signature_algorithm). */
function joseAlgorithm(key: CachedKey, input: Input): string | undefined {
  const spec = keyTypeSpec(key.type);
  if (spec.family === 'ec') {
    const hash = namedHash(input, hashOfBits(spec.bits), `keys of type ${key.type}`);
    return `ES${hash.slice(5)}`.replace('ES521', 'ES512');
  }
  if (spec.family === 'rsa') {
    const named = input.hash_algorithm ?? input.algorithm ?? 'sha2-256';
    if (!['sha2-256', 'sha2-384', 'sha2-512'].includes(named as string))
      throw invalidRequest('RSA keys sign with sha2-256, sha2-384 or sha2-512 in this service');
    const scheme = input.signature_algorithm ?? 'pss';
    if (scheme !== 'pss' && scheme !== 'pkcs1v15')
      throw invalidRequest('signature_algorithm must be pss or pkcs1v15');
    return `${scheme === 'pss' ? 'PS' : 'RS'}${(named as string).slice(5)}`;
  }
  return undefined;
}

/** Ed25519 and ML-DSA sign the input itself; ECDSA and RSA a hash of it, or the digest given (prehashed). */
function signedInput(key: CachedKey, input: Input): { data: string } | { digest: string } {
  const data = bytes(input, 'input')!.toString('base64');
  const prehashed = input.prehashed === true || input.prehashed === 'true';
  if (!prehashed) return { data };
  const family = keyTypeSpec(key.type).family;
  if (family !== 'ec' && family !== 'rsa')
    throw invalidRequest(`prehashed input is not supported with keys of type ${key.type}`);
  return { digest: data };
}

const ecSize = (key: CachedKey) => Math.ceil(keyTypeSpec(key.type).bits / 8);

/** `marshaling_algorithm`: asn1 (DER, the default) or jws (r || s, base64url) for ECDSA. */
function marshaling(input: Input): 'asn1' | 'jws' {
  const m = input.marshaling_algorithm ?? 'asn1';
  if (m !== 'asn1' && m !== 'jws') throw invalidRequest('marshaling_algorithm must be asn1 or jws');
  return m;
}

/** sign/:name: `{input, hash_algorithm?, prehashed?, signature_algorithm?, marshaling_algorithm?}` → `{signature}`. */
export async function signData(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  input: Input,
): Answer {
  const key = await keyOf(ctx, tenantId, kid);
  latestOnly(key, input);
  const form = marshaling(input);
  const algorithm = joseAlgorithm(key, input);
  const r = await sign(ctx, tenantId, { kid: key.kid, ...signedInput(key, input), algorithm });
  let signature: Buffer = Buffer.from(r.signature, 'base64');
  const ec = keyTypeSpec(key.type).family === 'ec';
  if (ec && form === 'asn1') signature = p1363ToDer(signature);
  const value =
    ec && form === 'jws'
      ? `vault:v${r.version}:${signature.toString('base64url')}`
      : prefixed(r.version, signature);
  return { kid: key.kid, signature: value, key_version: r.version };
}

/** verify/:name: `{input, hmac}` or `{input, signature, ...}` → `{valid}`. */
export async function verifyData(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  input: Input,
): Answer {
  const key = await keyOf(ctx, tenantId, kid);
  if (input.hmac !== undefined) {
    const data = bytes(input, 'input')!;
    const spec = keyTypeSpec(key.type);
    if (spec.family !== 'hmac') throw invalidRequest('HMAC is served with keys of type hmac only');
    namedHash(input, hashOfBits(spec.bits), `keys of type ${key.type}`);
    const { version, bytes: mac } = fromPrefixed(input.hmac, 'hmac');
    try {
      const r = await verifyMac(ctx, tenantId, {
        kid: key.kid,
        data: data.toString('base64'),
        mac: mac.toString('base64'),
        version,
      });
      return { kid: key.kid, valid: r.valid === true };
    } catch (err) {
      // A MAC of another length is not one of this key's: false, as Vault answers.
      if (err instanceof AppError && err.code === 'validation_failed')
        return { kid: key.kid, valid: false };
      throw err;
    }
  }
  if (input.signature === undefined) throw invalidRequest('signature or hmac is required');
  const algorithm = joseAlgorithm(key, input);
  const signed = signedInput(key, input);
  const form = marshaling(input);
  const ec = keyTypeSpec(key.type).family === 'ec';
  const raw =
    typeof input.signature === 'string' && ec && form === 'jws'
      ? input.signature.replace(
          /^(vault:v[0-9]+:)(.*)$/s,
          (_, p: string, s: string) => `${p}${Buffer.from(s, 'base64url').toString('base64')}`,
        )
      : input.signature;
  const { version, bytes: given } = fromPrefixed(raw, 'signature');
  if (!key.versions.has(version)) return { kid: key.kid, valid: false };
  let signature = given;
  if (ec && form === 'asn1') {
    try {
      signature = derToP1363(given, ecSize(key));
    } catch {
      return { kid: key.kid, valid: false };
    }
  }
  const r = await verify(ctx, tenantId, {
    kid: key.kid,
    ...signed,
    signature: signature.toString('base64'),
    algorithm,
    version,
  });
  return { kid: key.kid, valid: r.valid === true };
}

const FORMATS = new Set<unknown>(['base64', 'hex']);

/** random[/:bytes]: `{bytes?, format?}` → `{random_bytes}` (1 to 1024 bytes, default 32). */
export async function random(input: Input, pathBytes?: string): Answer {
  const n = pathBytes !== undefined ? Number(pathBytes) : (input.bytes ?? 32);
  if (!Number.isSafeInteger(n) || (n as number) < 1 || (n as number) > 1024)
    throw invalidRequest('bytes must be an integer from 1 to 1024');
  const format = input.format ?? 'base64';
  if (!FORMATS.has(format)) throw invalidRequest('format must be base64 or hex');
  const r = randomBytes(n as number);
  return { random_bytes: r.toString(format as 'base64' | 'hex') };
}

/** hash[/:algorithm]: `{input, algorithm?, format?}` → `{sum}` (no key: a convenience Vault serves). */
export async function hash(input: Input, pathAlgorithm?: string): Answer {
  const data = bytes(input, 'input')!;
  const name = pathAlgorithm ?? input.algorithm ?? 'sha2-256';
  const algorithm = HASHES.get(name);
  if (!algorithm) throw invalidRequest(`unsupported hash algorithm ${String(name).slice(0, 40)}`);
  const format = input.format ?? 'hex';
  if (!FORMATS.has(format)) throw invalidRequest('format must be hex or base64');
  return {
    sum: createHash(algorithm)
      .update(data)
      .digest(format as 'hex' | 'base64'),
  };
}
