/**
 * Re-signing shared by every SignedData path of the converter (attached, detached, nested in an
 * envelope, clear-signed mail): which hash and algs to prepare before the signer is known, the
 * signer key lookup, and the one place the CMS signature is verified before the JWS is signed.
 */
import { algForKey, candidateAlgs, type JwsAlg } from '../jose/jws.ts';
import type { DetachedJws, DetachedJwsSigner } from '../jose/jws.ts';
import { DIGESTS } from '../asn1/oids.ts';
import type { CmsHead, CmsTail } from './cms-structure.ts';
import { describeSigner, verificationKey, verifySigner } from './signers.ts';
import type { ConvertOptions, ConvertResult, KeyResolver, ResolvedKey } from './types.ts';
import { Multipart } from '../jose/jwe.ts';

const OCTET = 'application/octet-stream';
const JOSE = 'application/jose+json';
import { problem } from '../errors/index.ts';

/** The hash that sizes an RSA JWS alg: the first SHA-2 of the declared digest algorithms. */
export function cmsHashOf(head: CmsHead): string {
  for (const a of head.digestAlgorithms) {
    const h = DIGESTS[a.algorithm];
    if (h === 'sha256' || h === 'sha384' || h === 'sha512') return h;
  }
  return 'sha256';
}

export async function keyByKid(
  resolver: KeyResolver,
  kid: string,
  what: 'signer' | 'target',
): Promise<ResolvedKey> {
  const key = await resolver.byKid(kid, what === 'signer' ? 'sign' : 'encrypt');
  if (!key) throw problem('cms_key_not_imported', `the ${what} key ${kid} is not imported`);
  return key;
}

export interface FinishArgs {
  tail: CmsTail;
  eContentType: string;
  digests: Map<string, Buffer>;
  jws: DetachedJwsSigner;
  key: ResolvedKey | null;
  resolver: KeyResolver;
  cmsHash: string;
  /** RFC 2315 section 11.2: SignedAndEnvelopedData may encrypt the signature under the content key. */
  decryptSignature?: (sig: Buffer) => Buffer;
}

/** Verifies the one CMS signer, then signs the JWS with the re-signing key. */
export async function finishSignature(a: FinishArgs): Promise<DetachedJws> {
  if (a.tail.signers.length !== 1)
    throw problem('cms_unsupported', `${a.tail.signers.length} signers; exactly one is supported`);
  const desc = describeSigner(a.tail.signers[0]);
  if (desc.unsupported) throw problem('cms_unsupported', `${desc.unsupported} is not supported`);
  const key = a.key ?? (await a.resolver.byCmsRef(desc.ref, 'sign'));
  if (!key)
    throw problem('cms_key_not_imported', 'the signer key is not imported', {
      details: { identifier: desc.identifier },
    });
  if (!key.privateKey)
    throw problem('cms_key_unusable', `key ${key.kid} has no private part to sign with`);
  const pub = verificationKey(desc, a.tail.certificates, key);
  const sig = Buffer.from(a.tail.signers[0].info.signature.buffer);
  try {
    verifySigner(desc, sig, a.digests, a.eContentType, pub);
  } catch (err) {
    if (!a.decryptSignature || (err as { code?: string }).code !== 'cms_signature_invalid')
      throw err;
    let plain: Buffer;
    try {
      plain = a.decryptSignature(sig);
    } catch {
      throw err;
    }
    verifySigner(desc, plain, a.digests, a.eContentType, pub);
  }
  return a.jws.finish(algForKey(key, a.cmsHash, desc.scheme!.kind === 'pss'), key);
}

export async function signerKeyOf(opts: ConvertOptions): Promise<ResolvedKey | null> {
  return opts.metadata.signerKid
    ? keyByKid(opts.resolver, opts.metadata.signerKid, 'signer')
    : null;
}

/** The algs to hash the content for before the signer is known (jws.ts candidateAlgs). */
export async function candidatesFor(
  resolver: KeyResolver,
  key: ResolvedKey | null,
  cmsHash: string,
): Promise<JwsAlg[]> {
  return candidateAlgs(key, cmsHash, key ? undefined : await resolver.keyTypes?.());
}

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

/**
 * The answer of a SignedData conversion from a generator that yields the signed content as it is
 * hashed and returns the JWS once the CMS signature verified. By default the JWS object alone,
 * after the whole content (so every failure is a plain problem). With `withContent`, a
 * multipart/mixed of the content (application/octet-stream) as it streams, then the JWS
 * (application/jose+json): nothing of the input is lost, and a failure after the first byte cuts
 * the answer before its closing delimiter (contract 5). Failures before the content starts
 * (keys, metadata) are plain problems either way: the first step runs before this returns.
 */
export async function signedResult(
  gen: AsyncGenerator<Buffer, DetachedJws>,
  withContent: boolean,
  release: () => Promise<void>,
): Promise<ConvertResult> {
  let step: IteratorResult<Buffer, DetachedJws>;
  try {
    step = await gen.next();
    if (!withContent) {
      while (!step.done) step = await gen.next();
      return { contentType: OCTET, body: once(Buffer.from(JSON.stringify(step.value))) };
    }
  } catch (err) {
    await release().catch(() => {});
    throw err;
  }
  const mp = new Multipart();
  async function* body(): AsyncGenerator<Buffer> {
    let done = false;
    try {
      yield mp.part(OCTET);
      while (!step.done) {
        yield step.value;
        step = await gen.next();
      }
      yield Buffer.concat([mp.part(JOSE), Buffer.from(JSON.stringify(step.value))]);
      done = true;
      yield mp.close();
    } finally {
      if (!done) {
        await gen.return(undefined as never).catch(() => {});
        await release().catch(() => {});
      }
    }
  }
  return { contentType: mp.contentType, body: body() };
}
