/**
 * The JWS of a SignedData conversion. Its protected header records the original
 * signers, who are only known from the SignerInfos after the content, and its signing keys (the
 * archive key, or each signer's own) decide the algs; a JWS signing input starts with that header.
 * So the content is spooled as it streams (memory up to SPOOL_MEMORY, then an unlinked file of
 * this user's private temp directory) and signed once the header is known: constant memory, one
 * write and one read of the content on disk, and an alg that follows the key, never the input.
 */
import { constants, createSign, sign as signOneShot } from 'node:crypto';
import type { Sign } from 'node:crypto';
import {
  EDDSA_CAP,
  SigningInputEncoder,
  holdsInput,
  rsaPkcs1,
  type DetachedJws,
  type JwsAlg,
} from './jws.ts';
import { versionedKid } from './kid.ts';
import type { ResolvedKey } from './types.ts';
import { Spool } from '../spool.ts';
import { problem } from '../errors/index.ts';

/** A JWS in the General JSON Serialization with a detached payload (RFC 7515 section 7.2.1). */
export interface GeneralJws {
  signatures: DetachedJws[];
}

/** One signature to make: the key and its alg. */
export interface JwsSigning {
  key: ResolvedKey;
  alg: JwsAlg;
}

const HASH: Record<string, string> = { '256': 'sha256', '384': 'sha384', '512': 'sha512' };

/** Spools streamed content, then signs it with one or more keys under a header known at the end. */
export class SpooledJwsSigner {
  readonly b64: boolean;
  readonly #spool = new Spool();

  constructor(opts: { b64: boolean }) {
    this.b64 = opts.b64;
  }

  /** Takes the next content bytes (copied: the caller may reuse its buffer once this settles). */
  update(chunk: Buffer): Promise<void> {
    return this.#spool.update(chunk);
  }

  /**
   * Signs the spooled content once per key, every signature under a protected header of its alg,
   * kid and `header`: the flattened form for one signature, the General JSON form for several.
   */
  async finish(
    signings: JwsSigning[],
    header: Record<string, unknown>,
  ): Promise<DetachedJws | GeneralJws> {
    const parts = signings.map(({ key, alg }) => {
      const protectedB64 = Buffer.from(
        JSON.stringify({
          alg,
          kid: versionedKid(key.kid, key.version),
          ...(this.b64 ? {} : { b64: false, crit: ['b64'] }),
          ...header,
        }),
      ).toString('base64url');
      const prefix = Buffer.from(`${protectedB64}.`, 'ascii');
      const s: {
        key: ResolvedKey;
        alg: JwsAlg;
        protectedB64: string;
        sign?: Sign;
        held?: Buffer[];
        n: number;
      } = { key, alg, protectedB64, n: 0 };
      if (holdsInput(alg)) s.held = [prefix];
      else (s.sign = createSign(HASH[alg.slice(2)])).update(prefix);
      return s;
    });
    const encoder = new SigningInputEncoder(this.b64);
    const feed = (data: Buffer) => {
      for (const p of parts) {
        if (p.sign) p.sign.update(data);
        else {
          p.n += data.length;
          if (p.n > EDDSA_CAP)
            throw problem(
              'cms_eddsa_too_large',
              `${p.alg} signs at most ${EDDSA_CAP} bytes of signing input; this content is larger`,
            );
          p.held!.push(Buffer.from(data));
        }
      }
    };
    for await (const chunk of this.#spool.content()) feed(encoder.update(chunk));
    feed(encoder.final());
    const out = parts.map((p): DetachedJws => {
      const priv = p.key.privateKey!;
      let sig: Buffer;
      if (holdsInput(p.alg)) sig = signOneShot(null, Buffer.concat(p.held!), priv);
      else if (p.alg.startsWith('PS'))
        // RFC 7518 section 3.5: the salt is as long as the hash output.
        sig = p.sign!.sign({
          key: priv,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: Number(p.alg.slice(2)) / 8,
        });
      else if (p.alg.startsWith('ES')) sig = p.sign!.sign({ key: priv, dsaEncoding: 'ieee-p1363' });
      else sig = p.sign!.sign(rsaPkcs1(priv));
      return { protected: p.protectedB64, signature: sig.toString('base64url') };
    });
    await this.close();
    return out.length === 1 ? out[0] : { signatures: out };
  }

  /** Drops the spool (idempotent). */
  close(): Promise<void> {
    return this.#spool.close();
  }
}
