/**
 * Runtime cryptography: encrypt, decrypt, sign, verify, encapsulate, decapsulate
 * by kid within the token's tenant. Keys come from the in-process cache (no database round
 * trip); each operation runs on the event loop or in the pool as placement.ts decides.
 */
import type { AppContext } from '../../context.ts';
import { AppError, problem } from '../../../shared/errors/index.ts';
import { assertUsage, type KeyUsage } from '../../../shared/crypto/registry.ts';
import {
  contextDigest,
  decryptParsed,
  encryptCompact,
  encryptParts,
  parseCompact,
} from '../../../shared/jose/compact-jwe.ts';
import { blobBase64, blobOf } from '../../../shared/jose/ciphertext-blob.ts';
import {
  assertVerifies,
  resolveSignatureAlgorithm,
  signMessage,
  signMessageAsync,
  verifyMessage,
  type SignInput,
} from '../../../shared/crypto/sign.ts';
import { splitVersionedKid, versionedKid } from '../../../shared/jose/kid.ts';
import { keySignatureAlgorithms } from '../../../shared/crypto/rsa-pss.ts';
import { decapsulate, encapsulate } from '../../../shared/crypto/pqc.ts';
import type { LoadedKeyVersion } from '../../../shared/crypto/material.ts';
import type { CachedKey } from '../../../shared/keys/cache.ts';
import { decodeBase64 } from '../../../shared/base64.ts';
import { retainedVersion } from '../../../shared/keys/lifecycle.ts';
import { usableKey } from '../../../shared/keys/lookup.ts';
import { runsInPool, type RuntimeOp } from './placement.ts';
import { noteKeyType, runtimeCaller } from './batch.ts';
import type { DecryptingCaller } from '../../../shared/keys/decryption-budget.ts';
import {
  MAX_CONTEXT_MEMBERS,
  type DecapsulateBody,
  type DecryptBody,
  type EncapsulateBody,
  type EncryptBody,
  type SignBody,
  type VerifyBody,
} from './bodies.ts';

/** A base64 (or base64url) request member as bytes; 400 naming the field otherwise. */
export const b64 = (s: string, field: string): Buffer => {
  const bytes = decodeBase64(s, 'any');
  if (!bytes) throw problem('validation_failed', `${field} must be a base64 string`);
  return bytes;
};
const u8 = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/**
 * The key a runtime operation runs with: shared/keys' usableKey (the one lookup), its type noted
 * for the operation's metrics label.
 */
export async function operationKey(
  ctx: AppContext,
  tenantId: string,
  kid: unknown,
): Promise<CachedKey> {
  const key = await usableKey(ctx.keys, tenantId, kid);
  noteKeyType(key.type);
  return key;
}

function versionOf(key: CachedKey, version: number): LoadedKeyVersion {
  const v = key.versions.get(version);
  if (!v) throw problem('decryption_failed', 'decryption failed');
  return v;
}

function poolArg(key: CachedKey, version: number, usage: KeyUsage) {
  return { material: key.material.get(version)!, kid: key.kid, version, usage };
}

const MAX_CONTEXT_BYTES = 8192;

/**
 * An encryption context (AWS KMS EncryptionContext): an object of at most 64 string members,
 * 8 KiB of keys and values in all. Checked here, not only by the body size cap, so the bound holds
 * whatever JSON_LIMIT_BYTES is. Returns its digest for the JWE header (undefined: none).
 */
export function encryptionContext(
  ctx: AppContext,
  value: unknown,
  field = 'context',
): string | undefined {
  if (value === undefined) return undefined;
  const bad = (why: string) =>
    problem('validation_failed', `${field} ${why}`, { details: { field } });
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw bad('must be an object of string members');
  const names = Object.keys(value);
  if (names.length > MAX_CONTEXT_MEMBERS)
    throw bad(`has ${names.length} members; at most ${MAX_CONTEXT_MEMBERS}`);
  let bytes = 0;
  for (const name of names) {
    const v = (value as Record<string, unknown>)[name];
    if (typeof v !== 'string') throw bad(`member ${name.slice(0, 40)} must be a string`);
    bytes += Buffer.byteLength(name) + Buffer.byteLength(v);
    if (bytes > MAX_CONTEXT_BYTES) throw bad(`is larger than ${MAX_CONTEXT_BYTES} bytes`);
  }
  return contextDigest(value as Record<string, string>, ctx.contextKey);
}

async function place<T>(
  op: RuntimeOp,
  key: CachedKey,
  digest: boolean,
  local: () => T,
  remote: () => Promise<T>,
): Promise<T> {
  return runsInPool(op, key.type, digest) ? remote() : local();
}

/** Awaits a decryption, counting a decryption-failed against the caller's budget on the key. */
async function opening<T>(
  ctx: AppContext,
  caller: DecryptingCaller | null,
  kid: string,
  decryption: Promise<T>,
): Promise<T> {
  try {
    return await decryption;
  } catch (err) {
    if (caller && err instanceof AppError && err.code === 'decryption_failed')
      await ctx.decryption.failed(caller, kid, 'runtime').catch(() => {});
    throw err;
  }
}

/**
 * Encrypts to the key's current version, binding the context digest: `{kid, version, ciphertext}`,
 * the ciphertext a compact JWE, or for `blob` the base64 of its ciphertext blob (what the AWS KMS
 * and Vault Transit APIs carry), written from the sealer's bytes without a base64url pass.
 */
export async function seal(
  ctx: AppContext,
  key: CachedKey,
  data: Buffer,
  context: string | undefined,
  form: 'compact' | 'blob' = 'compact',
) {
  assertUsage(key, 'encrypt');
  const v = key.currentVersion;
  const ciphertext = await place(
    'encrypt',
    key,
    false,
    () =>
      form === 'blob'
        ? blobOf(encryptParts(versionOf(key, v), data, { context })).toString('base64')
        : encryptCompact(versionOf(key, v), data, { context }),
    async () => {
      const { jwe } = await ctx.pool.run<{ jwe: string }>('encryptCompactWithKey', {
        ...poolArg(key, v, 'encrypt'),
        plaintext: data,
        context,
      });
      return form === 'blob' ? blobBase64(jwe) : jwe;
    },
  );
  return { kid: key.kid, version: v, ciphertext };
}

/**
 * Opens a compact JWE of the tenant with the version its header names, if still retained
 * (key-version-retired below minDecryptionVersion) and only under the same context digest.
 */
export async function unseal(
  ctx: AppContext,
  tenantId: string,
  ciphertext: string,
  context: string | undefined,
): Promise<{ key: CachedKey; version: number; plaintext: Buffer }> {
  const parsed = parseCompact(ciphertext);
  const key = await operationKey(ctx, tenantId, parsed.kid);
  assertUsage(key, 'encrypt');
  const loaded = retainedVersion(key, parsed.version);
  // The decryption-failure budget of the caller on this key: checked before, counted after.
  const caller = runtimeCaller();
  if (caller) await ctx.decryption.admit(caller, key.kid);
  const plaintext = await opening(
    ctx,
    caller,
    key.kid,
    place(
      'decrypt',
      key,
      false,
      () => decryptParsed(parsed, loaded, context),
      async () =>
        u8(
          (
            await ctx.pool.run<{ plaintext: Uint8Array }>('decryptCompactWithKey', {
              ...poolArg(key, parsed.version, 'encrypt'),
              jwe: ciphertext,
              context,
            })
          ).plaintext,
        ),
    ),
  );
  return { key, version: parsed.version, plaintext };
}

/** `{kid, data, context?}` → `{kid, version, ciphertext}` (compact JWE naming `<kid>#<version>`). */
export async function encrypt(ctx: AppContext, tenantId: string, body: EncryptBody) {
  const context = encryptionContext(ctx, body.context);
  const data = b64(body.data, 'data');
  return seal(ctx, await operationKey(ctx, tenantId, body.kid), data, context);
}

/** `{ciphertext, context?}` → `{kid, version, data}`; any retained version decrypts, with the context it was sealed under. */
export async function decrypt(ctx: AppContext, tenantId: string, body: DecryptBody) {
  const { key, version, plaintext } = await unseal(
    ctx,
    tenantId,
    body.ciphertext,
    encryptionContext(ctx, body.context),
  );
  return { kid: key.kid, version, data: plaintext.toString('base64') };
}

function signInput({ data, digest }: SignBody): SignInput {
  if (data !== undefined && digest === undefined) return { data: b64(data, 'data') };
  if (digest !== undefined && data === undefined) return { digest: b64(digest, 'digest') };
  throw problem('validation_failed', 'give exactly one of data and digest (base64)');
}

/** `{kid, data | digest, algorithm?}` → `{kid, version, algorithm, signature}` (AWS KMS Sign semantics). */
export async function sign(ctx: AppContext, tenantId: string, body: SignBody) {
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'sign');
  const input = signInput(body);
  const v = key.currentVersion;
  if (body.output === 'jws') return signJws(key, v, input, body.algorithm);
  const algorithm = body.algorithm;
  // Data-mode signatures go to libuv's thread pool (crypto.sign's callback form): no copy of
  // the key or message to a worker, and both cores sign; on RSA-2048 it measured faster than
  // piscina (bench/results/design-figures.md). Digest mode has no async form in Node.
  if (input.digest === undefined) {
    const r = await signMessageAsync(versionOf(key, v), input, algorithm);
    return {
      kid: key.kid,
      version: v,
      algorithm: r.algorithm,
      signature: r.signature.toString('base64'),
    };
  }
  const result = await place(
    'sign',
    key,
    true,
    () => signMessage(versionOf(key, v), input, algorithm),
    async () => {
      const r = await ctx.pool.run<{ signature: Uint8Array; algorithm: string }>('signWithKey', {
        ...poolArg(key, v, 'sign'),
        input,
        algorithm,
      });
      return { signature: u8(r.signature), algorithm: r.algorithm };
    },
  );
  return {
    kid: key.kid,
    version: v,
    algorithm: result.algorithm,
    signature: result.signature.toString('base64'),
  };
}

/**
 * A compact JWS of `data` (RFC 7515 section 7.1): a data-mode signature is the JWS signature of
 * its input (shared/crypto/sign.ts), so the signing input ASCII(header.payload) is signed as
 * data, on the same thread pool as any data-mode signature.
 */
async function signJws(key: CachedKey, v: number, input: SignInput, requested?: string) {
  if (input.data === undefined)
    throw problem('validation_failed', 'output jws signs data: a digest has no JWS payload');
  const version = versionOf(key, v);
  const alg = resolveSignatureAlgorithm(version, requested);
  const header = Buffer.from(JSON.stringify({ alg, kid: versionedKid(key.kid, v) })).toString(
    'base64url',
  );
  const signingInput = `${header}.${input.data.toString('base64url')}`;
  const r = await signMessageAsync(version, { data: Buffer.from(signingInput, 'ascii') }, alg);
  return {
    kid: key.kid,
    version: v,
    algorithm: r.algorithm,
    signature: r.signature.toString('base64'),
    jws: `${signingInput}.${r.signature.toString('base64url')}`,
  };
}

/**
 * `{kid, data | digest, signature, algorithm?, version?}` → `{kid, version, valid}`; tries the
 * retained versions newest first. A version named below minDecryptionVersion is key-version-retired.
 * `{kid, jws, version?}` verifies a compact JWS instead (verifyJws). A key enabled only to verify
 * (an outside signer's public key) verifies as a signing key does.
 */
export async function verify(ctx: AppContext, tenantId: string, body: VerifyBody) {
  const key = await operationKey(ctx, tenantId, body.kid);
  assertVerifies(key);
  if (body.jws !== undefined) return verifyJws(ctx, key, body);
  const input = signInput(body);
  if (body.signature === undefined)
    throw problem('validation_failed', 'give signature (base64), or a compact jws', {
      details: { field: 'signature' },
    });
  const signature = b64(body.signature, 'signature');
  const versions =
    body.version !== undefined
      ? [body.version]
      : [...key.versions.keys()].filter((v) => v >= key.minDecryptionVersion).sort((a, b) => b - a);
  const v = await firstVerifying(ctx, key, versions, input, signature, body.algorithm);
  return v === undefined
    ? { kid: key.kid, valid: false }
    : { kid: key.kid, version: v, valid: true };
}

/** The first of `versions` whose key verifies `signature` over `input`, or undefined. */
async function firstVerifying(
  ctx: AppContext,
  key: CachedKey,
  versions: readonly number[],
  input: SignInput,
  signature: Buffer,
  algorithm: string | undefined,
): Promise<number | undefined> {
  for (const v of versions) {
    if (!key.versions.has(v)) continue;
    retainedVersion(key, v);
    const valid = await place(
      'verify',
      key,
      input.digest !== undefined,
      () => verifyMessage(versionOf(key, v), input, signature, algorithm),
      async () =>
        (
          await ctx.pool.run<{ valid: boolean }>('verifyWithKey', {
            ...poolArg(key, v, 'sign'),
            input,
            signature,
            algorithm,
          })
        ).valid,
    );
    if (valid) return v;
  }
  return undefined;
}

const COMPACT_JWS = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]*)\.([A-Za-z0-9_-]*)$/;

/**
 * A compact JWS (RFC 7515 section 7.1) verified with the key: its signature over ASCII(header.
 * payload), by the retained versions newest first, or the one its `kid` ("<kid>#<version>") or
 * `version` names. A JWS that is not three base64url parts with a JSON object header naming a
 * string `alg` is 400: that is about the input alone. Everything that depends on the key answers
 * `{kid, valid: false}`, the same as a wrong signature: an `alg` the key does not sign with, a
 * `kid` that is not this key's (another key's, another tenant's), a version not retained, a
 * `crit` header (no extension is understood) or an unencoded payload (`b64`). A valid JWS
 * answers its header's `alg` and `kid`.
 */
async function verifyJws(ctx: AppContext, key: CachedKey, body: VerifyBody) {
  const extra = (['data', 'digest', 'signature', 'algorithm'] as const).filter(
    (m) => body[m] !== undefined,
  );
  if (extra.length > 0)
    throw problem(
      'validation_failed',
      `jws carries its payload, signature and alg: send it without ${extra.join(', ')}`,
      { details: { field: extra[0] } },
    );
  const bad = () =>
    problem('validation_failed', 'jws must be a compact JWS: three base64url parts', {
      details: { field: 'jws' },
    });
  const m = COMPACT_JWS.exec(body.jws!);
  if (!m) throw bad();
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw bad();
  const { alg, kid, crit, b64: encoded } = header as Record<string, unknown>;
  if (typeof alg !== 'string')
    throw problem('validation_failed', 'the JWS protected header names no alg', {
      details: { field: 'jws' },
    });
  const invalid = { kid: key.kid, valid: false };
  const retained = [...key.versions.keys()]
    .filter((v) => v >= key.minDecryptionVersion)
    .sort((a, b) => b - a);
  let versions = body.version !== undefined ? [body.version] : retained;
  if (kid !== undefined) {
    const named = typeof kid === 'string' ? splitVersionedKid(kid) : undefined;
    if (named?.kid !== key.kid) return invalid;
    if (named.version !== undefined) versions = versions.filter((v) => v === named.version);
  }
  if (crit !== undefined || (encoded !== undefined && encoded !== true)) return invalid;
  const version = key.versions.get(versions[0] ?? key.currentVersion);
  const algs = version ? keySignatureAlgorithms(version.publicKey, version.spec.jws ?? []) : [];
  if (!(algs as readonly string[]).includes(alg)) return invalid;
  const signingInput = Buffer.from(`${m[1]}.${m[2]}`, 'ascii');
  const v = await firstVerifying(
    ctx,
    key,
    versions.filter((n) => retained.includes(n) || body.version === n),
    { data: signingInput },
    Buffer.from(m[3], 'base64url'),
    alg,
  );
  if (v === undefined) return invalid;
  return {
    kid: key.kid,
    version: v,
    valid: true,
    header: { alg, ...(typeof kid === 'string' ? { kid } : {}) },
  };
}

/** `{kid}` → `{kid, version, ciphertext, sharedSecret}` (ML-KEM or a hybrid). */
export async function encapsulateKey(ctx: AppContext, tenantId: string, body: EncapsulateBody) {
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'encrypt');
  const v = key.currentVersion;
  const r = await place(
    'encapsulate',
    key,
    false,
    () => encapsulate(versionOf(key, v)),
    async () => {
      const out = await ctx.pool.run<{ ciphertext: Uint8Array; sharedSecret: Uint8Array }>(
        'encapsulateWithKey',
        poolArg(key, v, 'encrypt'),
      );
      return { ciphertext: u8(out.ciphertext), sharedSecret: u8(out.sharedSecret) };
    },
  );
  return {
    kid: key.kid,
    version: v,
    ciphertext: Buffer.from(r.ciphertext).toString('base64'),
    sharedSecret: Buffer.from(r.sharedSecret).toString('base64'),
  };
}

/** `{kid, ciphertext, version?}` → `{sharedSecret}`. */
export async function decapsulateKey(ctx: AppContext, tenantId: string, body: DecapsulateBody) {
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'encrypt');
  const v = body.version ?? key.currentVersion;
  if (!key.versions.has(v))
    throw problem('validation_failed', `key ${key.kid} has no version ${v}`);
  // A retired version no longer decapsulates, like decrypt (the key's minDecryptionVersion).
  retainedVersion(key, v);
  const ct = b64(body.ciphertext, 'ciphertext');
  const secret = await place(
    'decapsulate',
    key,
    false,
    () => decapsulate(versionOf(key, v), ct),
    async () =>
      u8(
        (
          await ctx.pool.run<{ sharedSecret: Uint8Array }>('decapsulateWithKey', {
            ...poolArg(key, v, 'encrypt'),
            ciphertext: ct,
          })
        ).sharedSecret,
      ),
  );
  return { kid: key.kid, version: v, sharedSecret: Buffer.from(secret).toString('base64') };
}
