/**
 * Detached JWS in the flattened JSON form over streamed content: RFC 7797 unencoded payload when
 * b64 is false (signing input ASCII(protected) '.' content), RFC 7515 Appendix F otherwise
 * (signing input ASCII(protected) '.' BASE64URL(content)).
 *
 * CMS puts the SignerInfo after the content, so when no signerKid is given the re-signing key,
 * and with it `alg`, is only known at the end, while the signing input starts with the protected
 * header that names `alg`. The signer therefore hashes the input once per candidate `alg` and
 * keeps the one the key calls for; the candidates are only the algs the tenant's key types can
 * sign with (each one costs a SHA pass over the content, the largest cost of a conversion). Ed25519 cannot sign a stream (RFC 8032 PureEdDSA hashes the
 * message twice), so its input is held up to EDDSA_CAP bytes.
 */
import {
  constants,
  createSign,
  createVerify,
  sign as signOneShot,
  verify as verifyOneShot,
} from 'node:crypto';
import type { KeyObject, Sign, SignKeyObjectInput, Verify } from 'node:crypto';
import { KEY_TYPE_SPECS, isKeyType } from '../crypto/registry.ts';
import { keySignatureAlgorithms } from '../crypto/rsa-pss.ts';
import { versionedKid } from './kid.ts';
import { ML_DSA_ALGS } from './pq-identifiers.ts';
import type { ResolvedKey } from './types.ts';
import { problem } from '../errors/index.ts';

/**
 * An RS* signing key: an RSA key alone (PKCS#1 v1.5 is its default, and Node takes a bare
 * KeyObject faster than options, which it first tests as a KeyObject), any other with the padding.
 */
export const rsaPkcs1 = (key: KeyObject): KeyObject | SignKeyObjectInput =>
  key.asymmetricKeyType === 'rsa' ? key : { key, padding: constants.RSA_PKCS1_PADDING };

export type JwsAlg =
  | 'RS256'
  | 'RS384'
  | 'RS512'
  | 'PS256'
  | 'PS384'
  | 'PS512'
  | 'ES256'
  | 'ES384'
  | 'ES512'
  | 'EdDSA'
  | 'ML-DSA-44'
  | 'ML-DSA-65'
  | 'ML-DSA-87';

/** Largest signing input held for EdDSA and ML-DSA. */
export const EDDSA_CAP = 64 * 1024 * 1024;

/**
 * The algs whose signature covers the whole message rather than a streamed hash: PureEdDSA, and
 * ML-DSA as RFC 9964 uses it (pure, empty context; Node has no external-mu interface), so their
 * signing input is held, up to EDDSA_CAP bytes.
 */
export function holdsInput(alg: string): boolean {
  return alg === 'EdDSA' || ML_DSA_ALGS.has(alg);
}

const BITS: Record<string, string> = { sha384: '384', sha512: '512' };
const CURVE_ALG: Record<string, JwsAlg> = {
  prime256v1: 'ES256',
  secp384r1: 'ES384',
  secp521r1: 'ES512',
};
const HASH_OF: Record<string, string> = { '256': 'sha256', '384': 'sha384', '512': 'sha512' };

/** The JWS alg for a tenant key: its family, the CMS digest size for RSA, PS when the CMS used PSS. */
export function algForKey(key: ResolvedKey, cmsHash: string, pss: boolean): JwsAlg {
  const priv = key.privateKey;
  const type = priv?.asymmetricKeyType;
  // An id-RSASSA-PSS key signs PS* only, of the hash its parameters name when they name one.
  if (type === 'rsa-pss') {
    const alg = keySignatureAlgorithms(priv, ['PS256', 'PS384', 'PS512']);
    const wanted = `PS${BITS[cmsHash] ?? '256'}` as JwsAlg;
    if (alg.includes(wanted)) return wanted;
    if (alg.length > 0) return alg[0] as JwsAlg;
  }
  if (type === 'rsa') return `${pss ? 'PS' : 'RS'}${BITS[cmsHash] ?? '256'}` as JwsAlg;
  if (type === 'ec') {
    const alg = CURVE_ALG[priv!.asymmetricKeyDetails?.namedCurve ?? ''];
    if (alg) return alg;
  }
  if (type === 'ed25519' || type === 'ed448') return 'EdDSA';
  // RFC 9964: ML-DSA-44/65/87, named by the parameter set; the CMS digest plays no part.
  const mlDsa = /^ml-dsa-(44|65|87)$/.exec(type ?? '');
  if (mlDsa) return `ML-DSA-${mlDsa[1]}` as JwsAlg;
  throw problem(
    'cms_key_unusable',
    `key ${key.kid} cannot sign a JWS (it needs an RSA, RSASSA-PSS, EC P-256/384/521, Ed25519, Ed448 or ML-DSA private key)`,
  );
}

/**
 * Algs the signer must hash for, from what is known before the content: the key's exact alg and
 * its PSS twin when the key is named, else every alg of the CMS digest size, narrowed to what the
 * tenant's key types can sign with when those are known (`keyTypes`).
 */
export function candidateAlgs(
  key: ResolvedKey | null,
  cmsHash: string,
  keyTypes?: readonly string[],
): JwsAlg[] {
  const bits = BITS[cmsHash] ?? '256';
  if (key) {
    const exact = algForKey(key, cmsHash, false);
    return exact.startsWith('RS') ? [exact, `PS${bits}` as JwsAlg] : [exact];
  }
  const algs: JwsAlg[] = [`RS${bits}` as JwsAlg, `PS${bits}` as JwsAlg, `ES${bits}` as JwsAlg];
  // RFC 8419 section 3: Ed25519 signers use SHA-512 for the CMS digest.
  if (cmsHash === 'sha512') algs.push('EdDSA');
  if (!keyTypes) return algs;
  // An ML-DSA key signs whatever digest the CMS used: its algs are candidates whenever it is held.
  algs.push('ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87');
  const signable = new Set<string>(
    keyTypes.filter(isKeyType).flatMap((t) => KEY_TYPE_SPECS[t].jws ?? []),
  );
  return algs.filter((alg) => signable.has(alg));
}

/** The flattened JWS object the converter returns. */
export interface DetachedJws {
  protected: string;
  signature: string;
  header?: { kid: string };
}

/**
 * The signing input after ASCII(protected) '.': the content as it comes (b64 false, RFC 7797)
 * or its base64url, encoded in whole 3-byte groups so the pieces concatenate (RFC 7515).
 */
export class SigningInputEncoder {
  #carry: Buffer = Buffer.alloc(0);
  readonly b64: boolean;

  constructor(b64: boolean) {
    this.b64 = b64;
  }

  /** The signing-input bytes for the next content chunk. */
  update(chunk: Buffer): Buffer {
    if (!this.b64) return chunk;
    const all = this.#carry.length ? Buffer.concat([this.#carry, chunk]) : chunk;
    const whole = all.length - (all.length % 3);
    this.#carry = Buffer.from(all.subarray(whole));
    return Buffer.from(all.subarray(0, whole).toString('base64url'), 'ascii');
  }

  /** The last signing-input bytes (the base64url of a trailing partial group). */
  final(): Buffer {
    const rest = this.b64
      ? Buffer.from(this.#carry.toString('base64url'), 'ascii')
      : Buffer.alloc(0);
    this.#carry = Buffer.alloc(0);
    return rest;
  }
}

interface Candidate {
  protectedB64: string;
  sign?: Sign;
  held?: Buffer[];
  heldBytes: number;
  overflow: boolean;
}

/** Hashes streamed content for one or more candidate algs and signs with the one chosen at the end. */
export class DetachedJwsSigner {
  readonly b64: boolean;
  #input: SigningInputEncoder;
  /** The kid in the protected header (`<kid>#<version>`, see versionedKid), when the key was known before the content. */
  readonly kid: string | undefined;
  #candidates = new Map<JwsAlg, Candidate>();

  /** `key`: the signing key when it is known before the content; its version goes in the protected header. */
  constructor(
    algs: JwsAlg[],
    opts: { b64: boolean; key?: Pick<ResolvedKey, 'kid' | 'version'> | null },
  ) {
    this.b64 = opts.b64;
    this.#input = new SigningInputEncoder(opts.b64);
    this.kid = opts.key ? versionedKid(opts.key.kid, opts.key.version) : undefined;
    for (const alg of algs) {
      const header = {
        alg,
        ...(this.kid ? { kid: this.kid } : {}),
        ...(opts.b64 ? {} : { b64: false, crit: ['b64'] }),
      };
      const protectedB64 = Buffer.from(JSON.stringify(header)).toString('base64url');
      const prefix = Buffer.from(`${protectedB64}.`, 'ascii');
      const c: Candidate = { protectedB64, heldBytes: 0, overflow: false };
      if (holdsInput(alg)) c.held = [];
      else c.sign = createSign(HASH_OF[alg.slice(2)]);
      this.#candidates.set(alg, c);
      this.#feed(c, prefix);
    }
  }

  #feed(c: Candidate, data: Buffer): void {
    if (c.sign) {
      c.sign.update(data);
    } else if (!c.overflow) {
      c.heldBytes += data.length;
      if (c.heldBytes > EDDSA_CAP) {
        c.overflow = true;
        c.held = [];
      } else {
        c.held!.push(Buffer.from(data));
      }
    }
  }

  /** Feeds the next content bytes. */
  update(chunk: Buffer): void {
    const data = this.#input.update(chunk);
    for (const c of this.#candidates.values()) this.#feed(c, data);
  }

  /** Signs with `key` under `alg`, which must be one of the candidates. */
  finish(alg: JwsAlg, key: ResolvedKey): DetachedJws {
    const c = this.#candidates.get(alg);
    if (!c) {
      throw problem(
        'cms_unsupported',
        `the re-signing key needs ${alg}, which could not be foreseen before the content; give signerKid in the metadata`,
      );
    }
    const rest = this.#input.final();
    if (rest.length) this.#feed(c, rest);
    const priv = key.privateKey!;
    let sig: Buffer;
    if (holdsInput(alg)) {
      if (c.overflow)
        throw problem(
          'cms_eddsa_too_large',
          `${alg} signs at most ${EDDSA_CAP} bytes of signing input; this content is larger`,
        );
      sig = signOneShot(null, Buffer.concat(c.held!), priv);
    } else if (alg.startsWith('PS')) {
      // RFC 7518 section 3.5: the salt is as long as the hash output.
      sig = c.sign!.sign({
        key: priv,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength: Number(alg.slice(2)) / 8,
      });
    } else if (alg.startsWith('ES')) {
      sig = c.sign!.sign({ key: priv, dsaEncoding: 'ieee-p1363' });
    } else {
      sig = c.sign!.sign(rsaPkcs1(priv));
    }
    return {
      protected: c.protectedB64,
      signature: sig.toString('base64url'),
      ...(this.kid ? {} : { header: { kid: versionedKid(key.kid, key.version) } }),
    };
  }
}

const HASH: Record<string, string> = { '256': 'sha256', '384': 'sha384', '512': 'sha512' };

/** The hash of a JWS alg (sha256 for EdDSA, which names none). */
export function hashOfAlg(alg: string): string {
  return Object.hasOwn(HASH, alg.slice(2)) ? HASH[alg.slice(2)] : 'sha256';
}

/** Checks one JWS signature over a signing input fed in pieces. */
export interface StreamVerifier {
  update(data: Buffer): void;
  /** True when the signature verifies with `key`. */
  verify(key: KeyObject, signature: Buffer): boolean;
}

/** A verifier for a JWS alg (RFC 7518 section 3, RFC 9964); EdDSA and ML-DSA hold the input up to EDDSA_CAP bytes. */
export function streamVerifier(alg: string): StreamVerifier {
  if (holdsInput(alg)) {
    const keyType = alg === 'EdDSA' ? null : alg.toLowerCase();
    const held: Buffer[] = [];
    let n = 0;
    return {
      update(data) {
        n += data.length;
        if (n > EDDSA_CAP)
          throw problem(
            'jose_too_large',
            `${alg} verifies at most ${EDDSA_CAP} bytes of signing input; this content is larger`,
          );
        held.push(Buffer.from(data));
      },
      verify: (key, sig) =>
        (keyType
          ? key.asymmetricKeyType === keyType
          : key.asymmetricKeyType === 'ed25519' || key.asymmetricKeyType === 'ed448') &&
        verifyOneShot(null, Buffer.concat(held), key, sig),
    };
  }
  const m = /^(RS|PS|ES)(256|384|512)$/.exec(alg);
  if (!m) throw problem('jose_unsupported', `JWS alg ${alg.slice(0, 16)} is not supported`);
  const v: Verify = createVerify(HASH[m[2]]);
  return {
    update: (data) => v.update(data),
    verify(key, sig) {
      const type = key.asymmetricKeyType;
      try {
        if (m[1] === 'ES')
          return type === 'ec' && v.verify({ key, dsaEncoding: 'ieee-p1363' }, sig);
        if (type !== 'rsa' && type !== 'rsa-pss') return false;
        // RFC 7518 section 3.5: PSS with MGF1 of the same hash and a salt as long as the hash.
        if (m[1] === 'PS')
          return v.verify(
            { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: Number(m[2]) / 8 },
            sig,
          );
        return v.verify({ key, padding: constants.RSA_PKCS1_PADDING }, sig);
      } catch {
        return false;
      }
    },
  };
}
