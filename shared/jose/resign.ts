/**
 * Stream re-signing of a convert result: the detached JWS object as convert wrote
 * it, then the content it covers. The old signature is checked with the tenant key its kid
 * names while the content streams, and a new detached JWS of the same form (same b64, flattened
 * JSON, kid protected) is made with the target key in the same pass. Nothing is answered before
 * the old signature verified.
 */
import { problem } from '../errors/index.ts';
import {
  DetachedJwsSigner,
  SigningInputEncoder,
  algForKey,
  hashOfAlg,
  streamVerifier,
} from './jws.ts';
import type { DetachedJws, StreamVerifier } from './jws.ts';
import { keyByKid, publicKeyOf } from './keys.ts';
import type { KidResolver } from './types.ts';

export interface ResignOptions {
  resolver: KidResolver;
  targetKid: string;
}

/** A re-signing in progress: feed the content, then finish. */
export interface Resigning {
  sourceKid: string;
  update(chunk: Buffer): void;
  /** Verifies the old signature (422 signature-invalid) and answers the new JWS. */
  finish(): DetachedJws;
}

const malformed = (why: string) => problem('jose_malformed', why);

interface OldJws {
  protectedB64: string;
  alg: string;
  kid: string;
  b64: boolean;
  signature: Buffer;
}

/** The `{protected, signature, header?}` object, detached (RFC 7515 Appendix F, RFC 7797). */
function parseJws(text: string): OldJws {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text);
  } catch {
    throw malformed('the signature part is not JSON');
  }
  if (!o || typeof o !== 'object' || Array.isArray(o))
    throw malformed('the signature part is not a JSON object');
  if (o.payload !== undefined && o.payload !== '')
    throw problem(
      'jose_unsupported',
      'the JWS carries a payload; only detached JWS objects are re-signed',
    );
  if (typeof o.protected !== 'string' || !/^[A-Za-z0-9_-]+$/.test(o.protected))
    throw malformed('protected is not base64url');
  if (typeof o.signature !== 'string' || !/^[A-Za-z0-9_-]+$/.test(o.signature))
    throw malformed('signature is not base64url');
  let p: Record<string, unknown>;
  try {
    p = JSON.parse(Buffer.from(o.protected, 'base64url').toString('utf8'));
  } catch {
    throw malformed('protected is not a base64url JSON object');
  }
  if (!p || typeof p !== 'object') throw malformed('protected is not a JSON object');
  const header = (o.header && typeof o.header === 'object' ? o.header : {}) as Record<
    string,
    unknown
  >;
  const kid = p.kid ?? header.kid;
  if (typeof kid !== 'string' || !kid) throw malformed('the JWS names no kid');
  if (typeof p.alg !== 'string') throw malformed('the JWS names no alg');
  if (p.b64 !== undefined && typeof p.b64 !== 'boolean') throw malformed('b64 must be a boolean');
  // RFC 7515 section 4.1.11: every crit member must be understood; b64 is the only one we are.
  const crit = p.crit;
  if (crit !== undefined && (!Array.isArray(crit) || crit.some((c) => c !== 'b64')))
    throw problem('jose_unsupported', 'only the b64 critical header is understood');
  // RFC 7797 section 6: b64 false must be listed in crit.
  if (p.b64 === false && !(Array.isArray(crit) && crit.includes('b64')))
    throw malformed('b64 false must be listed in crit');
  return {
    protectedB64: o.protected,
    alg: p.alg,
    kid,
    b64: p.b64 !== false,
    signature: Buffer.from(o.signature, 'base64url'),
  };
}

/** Parses the old JWS and looks up both keys; the content is fed afterwards. */
export async function startResign(jwsText: string, opts: ResignOptions): Promise<Resigning> {
  const old = parseJws(jwsText);
  const verifier: StreamVerifier = streamVerifier(old.alg);
  // Checking the old signature is a use of a sign key too: an encrypt key verifies nothing.
  const source = await keyByKid(opts.resolver, old.kid, 'sign');
  const target = await keyByKid(opts.resolver, opts.targetKid, 'sign');
  const pub = publicKeyOf(source);
  if (!pub) throw problem('signature_invalid', `key ${old.kid} cannot verify a signature`);
  // The same family of padding and hash size as before, on the target key's type.
  const alg = algForKey(target, hashOfAlg(old.alg), old.alg.startsWith('PS'));
  const signer = new DetachedJwsSigner([alg], { b64: old.b64, key: target });
  const input = new SigningInputEncoder(old.b64);
  verifier.update(Buffer.from(`${old.protectedB64}.`, 'ascii'));
  return {
    sourceKid: source.kid,
    update(chunk) {
      verifier.update(input.update(chunk));
      signer.update(chunk);
    },
    finish() {
      verifier.update(input.final());
      if (!verifier.verify(pub, old.signature))
        throw problem(
          'signature_invalid',
          'the JWS does not verify over this content with its key',
        );
      return signer.finish(alg, target);
    },
  };
}
