/**
 * Runtime signatures: sign and verify by kid within the token's tenant, as raw signatures (AWS KMS
 * Sign semantics) or compact JWS. Keys, placement and key versions are runtime.ts's.
 */
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { assertUsage } from '../../../shared/crypto/registry.ts';
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
import type { CachedKey } from '../../../shared/keys/cache.ts';
import { retainedVersion } from '../../../shared/keys/lifecycle.ts';
import { b64, operationKey, place, poolArg, u8, versionOf } from './runtime.ts';
import type { SignBody, VerifyBody } from './bodies.ts';

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
