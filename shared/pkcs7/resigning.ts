/**
 * Re-signing shared by every SignedData path of the converter (attached, detached, nested in an
 * envelope, clear-signed mail): which hash and algs to prepare before the signer is known, the
 * signer key lookup, and the one place the CMS signature is verified before the JWS is signed.
 */
import { algForKey } from '../jose/jws.ts';
import { publicKeyOf } from '../jose/keys.ts';
import { spkiOf } from './key-cache.ts';
import type { DetachedJws } from '../jose/jws.ts';
import type { GeneralJws, SpooledJwsSigner } from '../jose/spooled-jws.ts';
import { cmsDigestName } from './algorithms.ts';
import type { CmsTail } from './cms-structure.ts';
import { checkSigners } from './signer-checks.ts';
import type { HeldSignerKey, SignerCheckInput, SignerChecker } from './types.ts';
import { describeSigner, signingTimeOf } from './signers.ts';
import type { SignerDescription } from './signers.ts';
import type {
  ConvertMetadata,
  ConvertOptions,
  ConvertResult,
  KeyResolver,
  ResolvedKey,
} from './types.ts';
import { Multipart } from '../jose/jwe.ts';

const OCTET = 'application/octet-stream';
const JOSE = 'application/jose+json';
import { problem } from '../errors/index.ts';

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
  jws: SpooledJwsSigner;
  /** The key that signs whatever the signers (signerKid, else the archive key); null: each signer's own. */
  key: ResolvedKey | null;
  resolver: KeyResolver;
  verify?: ConvertMetadata['verify'];
  /** RFC 2315 section 11.2: SignedAndEnvelopedData may encrypt the signature under the content key. */
  decryptSignature?: (sig: Buffer) => Buffer;
  /** Where the signature and chain checks run (ConvertOptions.checkSigners); default in place. */
  checkSigners?: SignerChecker;
}

/** What the JWS protected header records of one original signer, under `kw_signers`. */
export interface OriginalSigner {
  /** The signer's certificate and the chain found for it, base64 DER, the signer's first. */
  x5c: string[];
  signingTime: string | null;
  /** The CMS digest algorithm by name (`sha256`, ...). */
  digestAlg: string;
  /** `signature`: the signature verified with that certificate; `chain`: which also leads to a trust anchor. */
  verified: 'signature' | 'chain';
}

/** The protected header member that records the original signers. */
export const SIGNERS_MEMBER = 'kw_signers';

/**
 * Verifies every CMS signer (with its own certificate or the tenant's), then signs
 * the JWS with the re-signing key (`key`), else with each signer's own key, one signature per key.
 * The key lookups run here; the signature and chain checks (signer-checks.ts) run where
 * `a.checkSigners` puts them (a pool thread), or in place.
 */
export async function finishSignature(a: FinishArgs): Promise<DetachedJws | GeneralJws> {
  try {
    if (a.tail.signers.length === 0)
      throw problem('cms_malformed', 'the SignedData has no SignerInfo to verify');
    const descs: SignerDescription[] = [];
    const held: SignerCheckInput['held'] = [];
    for (const s of a.tail.signers) {
      const desc = describeSigner(s);
      if (desc.unsupported)
        throw problem('cms_unsupported', `${desc.unsupported} is not supported`);
      descs.push(desc);
      held.push(heldKey(await a.resolver.byCmsRef(desc.ref)));
    }
    const chain = a.verify === 'chain';
    const input: SignerCheckInput = {
      signers: a.tail.signers.map((s) => s.raw),
      held,
      certificates: a.tail.certificates,
      digests: [...a.digests],
      eContentType: a.eContentType,
      chain,
      anchors: chain ? ((await a.resolver.trustAnchors?.()) ?? []) : [],
    };
    const checked =
      a.checkSigners && !a.decryptSignature
        ? await a.checkSigners(input)
        : checkSigners(input, a.decryptSignature);
    const recorded: OriginalSigner[] = [];
    const signing = new Map<string, { key: ResolvedKey; pss: boolean }>();
    let anyPss = false;
    for (const [i, desc] of descs.entries()) {
      const pss = desc.scheme!.kind === 'pss';
      anyPss ||= pss;
      recorded.push({
        x5c: checked.x5c[i],
        signingTime: signingTimeOf(desc),
        digestAlg: cmsDigestName(desc.digestOid)!,
        verified: chain ? 'chain' : 'signature',
      });
      if (a.key) continue;
      const own = await ownSigningKey(a.resolver, desc);
      if (!signing.has(own.kid)) signing.set(own.kid, { key: own, pss });
    }
    if (a.key) signing.set(a.key.kid, { key: a.key, pss: anyPss });
    // The alg follows the signing key (its curve, or SHA-256 for RSA), never the input's digest.
    const signings = [...signing.values()].map(({ key, pss }) => ({
      key,
      alg: algForKey(key, 'sha256', pss),
    }));
    return await a.jws.finish(signings, { [SIGNERS_MEMBER]: recorded });
  } finally {
    await a.jws.close();
  }
}

/** The tenant's key for a signer as checkSigners takes it (its public half, its certificate). */
function heldKey(key: ResolvedKey | null): HeldSignerKey | null {
  // A tenant key's KeyObject is the same object message after message: its SPKI is exported once.
  const held = key?.publicKey ?? key?.privateKey;
  const source = held?.type === 'secret' ? undefined : held;
  const spki = source
    ? spkiOf(source)
    : key
      ? publicKeyOf(key)?.export({ type: 'spki', format: 'der' })
      : null;
  if (!spki) return null;
  return {
    spki,
    certificate: key!.certificate ?? null,
  };
}

/**
 * The signer's own key, which re-signs when neither signerKid nor the archive key does: looked up
 * for signing (the identifier may also name the same certificate's key for another usage, and a
 * key without sign enabled is key-usage-mismatch naming it). The converter and analyze both ask
 * here, so analyze names the key the converter really uses.
 */
export async function ownSigningKey(
  resolver: KeyResolver,
  desc: SignerDescription,
): Promise<ResolvedKey> {
  const own = await resolver.byCmsRef(desc.ref, 'sign');
  if (!own?.privateKey)
    throw problem(
      'cms_key_not_imported',
      "no key to re-sign with: the signer's private key is not in the tenant; give signerKid, or make a signing key the tenant's archive signing key (archiveSigning)",
      { details: { identifier: desc.identifier } },
    );
  return own;
}

/** The key that signs every JWS of a conversion when it is known before the content: signerKid, else the tenant's archive signing key. */
export async function signerKeyOf(opts: ConvertOptions): Promise<ResolvedKey | null> {
  if (opts.metadata.signerKid) return keyByKid(opts.resolver, opts.metadata.signerKid, 'signer');
  return (await opts.resolver.archiveSigningKey?.()) ?? null;
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
 * the answer before its closing delimiter. Failures before the content starts
 * (keys, metadata) are plain problems either way: the first step runs before this returns.
 */
export async function signedResult(
  gen: AsyncGenerator<Buffer, DetachedJws | GeneralJws>,
  withContent: boolean,
  release: () => Promise<void>,
): Promise<ConvertResult> {
  let step: IteratorResult<Buffer, DetachedJws | GeneralJws>;
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
