/**
 * CMS content decryption (RFC 5652 section 6.3, RFC 3565 AES-CBC, RFC 5084 AES-GCM, 3DES-CBC)
 * as a stream: the parameters of the content-encryption algorithm, and a decipher whose failures
 * (padding, tag) all become the one opaque decryption problem.
 */
import { createDecipheriv } from 'node:crypto';
import { asSecretKey } from '../crypto/secret-key.ts';
import type { Decipheriv, DecipherGCM } from 'node:crypto';
import type { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { walk } from '../asn1/der.ts';
import { oidName } from '../asn1/oids.ts';
import { CONTENT_CIPHERS } from './algorithms.ts';
import type { ContentCipherSpec } from './algorithms.ts';
import { problem, decryptionFailed } from '../errors/index.ts';

/** A content-encryption algorithm with its parameters. */
export interface ContentCipher {
  spec: ContentCipherSpec;
  iv: Buffer;
  /** GCM ICV length (RFC 5084 section 3.2). */
  tagLength: number;
}

/** Reads the algorithm and parameters of EncryptedContentInfo.contentEncryptionAlgorithm. */
export function contentCipherOf(alg: AlgorithmIdentifier): ContentCipher {
  const spec = CONTENT_CIPHERS[alg.algorithm];
  if (!spec)
    throw problem(
      'cms_unsupported',
      `content encryption ${oidName(alg.algorithm)} is not supported`,
    );
  const params = alg.parameters ? Buffer.from(alg.parameters) : Buffer.alloc(0);
  const bad = () => problem('cms_malformed', `malformed ${oidName(alg.algorithm)} parameters`);
  const top = walk(params);
  if (!top || top.length !== 1) throw bad();
  if (spec.mode === 'cbc') {
    // AES-IV / CBCParameter ::= OCTET STRING (RFC 3565 section 4.1, RFC 3370 section 5.1).
    const iv = params.subarray(top[0].valueStart, top[0].end);
    if (top[0].tag !== 0x04 || iv.length !== (spec.aesBits ? 16 : 8)) throw bad();
    return { spec, iv: Buffer.from(iv), tagLength: 0 };
  }
  // GCMParameters ::= SEQUENCE { aes-nonce OCTET STRING, aes-ICVlen INTEGER DEFAULT 12 }
  const fields = top[0].tag === 0x30 ? walk(params, top[0].valueStart, top[0].end) : null;
  if (!fields || fields.length < 1 || fields[0].tag !== 0x04) throw bad();
  const iv = Buffer.from(params.subarray(fields[0].valueStart, fields[0].end));
  let tagLength = 12;
  if (fields[1]) {
    if (fields[1].tag !== 0x02 || fields[1].end - fields[1].valueStart !== 1) throw bad();
    tagLength = params[fields[1].valueStart];
  }
  if (iv.length < 8 || iv.length > 64 || tagLength < 12 || tagLength > 16) throw bad();
  return { spec, iv, tagLength };
}

/** A streaming CMS content decipher. */
export interface ContentDecipher {
  update(chunk: Buffer): Buffer;
  /** Checks padding (CBC) or the tag (GCM, with the mac read after the content). */
  final(mac?: Buffer): Buffer;
}

/** Creates the decipher for the recovered content key. */
export function contentDecipher(c: ContentCipher, key: Buffer): ContentDecipher {
  let d: Decipheriv;
  try {
    d =
      c.spec.mode === 'gcm'
        ? createDecipheriv(c.spec.cipher as 'aes-256-gcm', asSecretKey(key), c.iv, {
            authTagLength: c.tagLength,
          })
        : createDecipheriv(c.spec.cipher, asSecretKey(key), c.iv);
  } catch (err) {
    throw decryptionFailed(err);
  }
  return {
    update: (chunk) => d.update(chunk),
    final(mac) {
      try {
        if (c.spec.mode === 'gcm') {
          if (!mac || mac.length !== c.tagLength) throw new Error('missing or mis-sized mac');
          (d as DecipherGCM).setAuthTag(mac);
        }
        return d.final();
      } catch (err) {
        throw decryptionFailed(err);
      }
    },
  };
}
