/**
 * HPKE in JWE (draft-ietf-jose-hpke-encrypt, with the post-quantum suites of
 * draft-ietf-jose-hpke-pq-pqt; the labels are in pq-identifiers.ts):
 *
 * - Key Encryption (`HPKE-n-KE`): the content key is HPKE-sealed to each recipient, with
 *   info = Recipient_structure = "JOSE-HPKE rcpt" || 0xFF || enc || 0xFF (no extra info) and an
 *   empty aad; the recipient's `ek` header carries the encapsulated secret (section 6).
 * - Integrated Encryption (`HPKE-n`): one recipient; the plaintext itself is sealed with
 *   aad = ASCII(protected header) and an empty info; the JWE Encrypted Key is the encapsulated
 *   secret and the IV and tag are empty (section 5). The compact form is written and read here.
 */
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { decryptionFailed, problem } from '../errors/index.ts';
import { keyTypeSpec } from '../crypto/registry.ts';
import type { LoadedKey } from '../crypto/key-material.ts';
import { contextCipher, open, seal, setupSender } from '../crypto/hpke.ts';
import type { ContentEncryptor } from './jwe.ts';
import { hybridExpandSeed } from '../crypto/pqc.ts';
import { hpkeAlg, hpkeSuiteOf, PQ_MEMBERS } from './pq-identifiers.ts';
import { versionedKid } from './kid.ts';
import type { ResolvedKey } from './types.ts';

/** A tenant key as the HPKE layer takes it (the KEM in pqc.ts reads the same shape). */
export function kemKeyOf(key: ResolvedKey): LoadedKey {
  return {
    type: key.type as LoadedKey['type'],
    spec: keyTypeSpec(key.type),
    privateKey: key.privateKey,
    publicKey: key.publicKey,
    components: key.components,
  };
}

/**
 * The key of a private `AKP` JWK of an HPKE suite (draft-ietf-jose-hpke-pq-pqt section 4: `priv`
 * is SerializePrivateKey, the ML-KEM seed d || z or the hybrid's 32-byte seed); its `pub`, when given, must
 * be the key's own.
 */
export function hpkeKeyFromJwk(jwk: Record<string, unknown>, kid = 'jwk'): ResolvedKey {
  const named = hpkeAlg(jwk.alg);
  if (jwk.kty !== 'AKP' || !named || typeof jwk.priv !== 'string')
    throw problem('validation_failed', 'not a private AKP JWK of an HPKE algorithm');
  const seed = Buffer.from(jwk.priv, 'base64url');
  let key: ResolvedKey;
  try {
    if (named.type === 'ml-kem-768' || named.type === 'ml-kem-1024') {
      const privateKey = createPrivateKey({
        key: seed,
        format: 'raw-seed',
        asymmetricKeyType: named.type,
      });
      key = {
        kid,
        version: 1,
        type: named.type,
        privateKey,
        publicKey: createPublicKey(privateKey),
      };
    } else {
      const { mlKem, group } = hybridExpandSeed(named.type, seed);
      key = {
        kid,
        version: 1,
        type: named.type,
        components: [
          { privateKey: mlKem, publicKey: createPublicKey(mlKem) },
          { privateKey: group, publicKey: createPublicKey(group) },
        ],
      };
    }
  } catch (cause) {
    throw problem('validation_failed', 'the AKP JWK priv is not a seed of its algorithm', {
      cause,
    });
  }
  const pub = key.components
    ? Buffer.concat(key.components.map((c) => c.publicKey.export({ format: 'raw-public' })))
    : key.publicKey!.export({ format: 'raw-public' });
  if (jwk.pub !== undefined && jwk.pub !== pub.toString('base64url'))
    throw problem('validation_failed', 'the AKP JWK pub is not the public key of its priv');
  return key;
}

/** True for a key that receives HPKE JWEs (ML-KEM and its hybrids): a post-quantum target. */
export function isHpkeTarget(key: Pick<ResolvedKey, 'type'>): boolean {
  return hpkeSuiteOf(key.type) !== undefined;
}

/**
 * The rule for a recipient list (draft-ietf-jose-hpke-pq-pqt section 5): when any target is
 * post-quantum, all must be, or a later break of the classical key reads the content. A caller
 * may accept the mix on purpose; the answer is then the member that records it in the protected
 * header, else undefined.
 */
export function recipientMix(
  targets: readonly Pick<ResolvedKey, 'kid' | 'type'>[],
  allowMixed: boolean,
): Record<string, true> | undefined {
  const pq = targets.filter(isHpkeTarget);
  if (pq.length === 0 || pq.length === targets.length) return undefined;
  if (!allowMixed)
    throw problem(
      'jose_mixed_recipients',
      'post-quantum and classical targets may not share a JWE: every recipient of a JWE with a post-quantum recipient must be post-quantum (draft-ietf-jose-hpke-pq-pqt); name only post-quantum targets, or set allowMixedRecipients: true',
      {
        details: {
          postQuantum: pq.map((k) => k.kid),
          classical: targets.filter((k) => !isHpkeTarget(k)).map((k) => k.kid),
        },
      },
    );
  return { [PQ_MEMBERS.mixedRecipients.label]: true };
}

/** The Recipient_structure of Key Encryption for a content encryption `enc`. */
export function recipientStructure(enc: string): Buffer {
  const sep = Buffer.from([0xff]);
  return Buffer.concat([
    Buffer.from(PQ_MEMBERS.recipientStructure.label, 'ascii'),
    sep,
    Buffer.from(enc, 'ascii'),
    sep,
  ]);
}

/** A per-recipient header and encrypted key of Key Encryption (`HPKE-n-KE`) for one target. */
export function hpkeWrap(
  target: ResolvedKey,
  cek: Buffer,
  enc: string,
): { header: { alg: string; kid: string; ek: string }; encrypted_key: string } {
  const suite = hpkeSuiteOf(target.type);
  if (!suite || (!target.publicKey && !target.components))
    throw problem('cms_key_unusable', `key ${target.kid} cannot receive an HPKE JWE`);
  const { enc: ek, ct } = seal(kemKeyOf(target), recipientStructure(enc), Buffer.alloc(0), cek);
  return {
    header: {
      alg: suite.keyEncryption,
      kid: versionedKid(target.kid, target.version),
      ek: ek.toString('base64url'),
    },
    encrypted_key: ct.toString('base64url'),
  };
}

/**
 * Opens a content key sealed with `HPKE-n-KE`. A key of another type, a bad `ek` or a content key
 * that does not open or fit enc: a random key stands in, so the failure comes at the content's
 * tag, as for every other key management (RFC 7516 section 11.5).
 */
export function hpkeUnwrap(
  key: ResolvedKey,
  header: Record<string, unknown>,
  encryptedKey: Buffer,
  enc: string,
  cekBytes: number,
): Buffer {
  const named = hpkeAlg(header.alg);
  if (!named || named.mode !== 'key-encryption' || named.type !== key.type)
    throw decryptionFailed(new Error(`key ${key.kid} does not open ${String(header.alg)}`));
  if (typeof header.ek !== 'string' || !/^[A-Za-z0-9_-]+$/.test(header.ek))
    return randomBytes(cekBytes);
  try {
    const cek = open(
      kemKeyOf(key),
      Buffer.from(header.ek, 'base64url'),
      recipientStructure(enc),
      Buffer.alloc(0),
      encryptedKey,
    );
    return cek.length === cekBytes ? cek : randomBytes(cekBytes);
  } catch {
    return randomBytes(cekBytes);
  }
}

/**
 * Integrated Encryption to one key in the compact serialization. `extra` protected members come
 * after `alg` and `kid` (a caller's `cty`, say); `enc` is never among them.
 */
export function integratedEncrypt(
  target: ResolvedKey,
  plaintext: Buffer,
  extra: Record<string, unknown> = {},
): string {
  const suite = hpkeSuiteOf(target.type);
  if (!suite) throw problem('cms_key_unusable', `key ${target.kid} cannot receive an HPKE JWE`);
  const header = {
    alg: suite.integrated,
    kid: versionedKid(target.kid, target.version),
    ...extra,
  };
  const protectedB64 = Buffer.from(JSON.stringify(header)).toString('base64url');
  const { enc, ct } = seal(
    kemKeyOf(target),
    Buffer.alloc(0),
    Buffer.from(protectedB64, 'ascii'),
    plaintext,
  );
  return `${protectedB64}.${enc.toString('base64url')}..${ct.toString('base64url')}.`;
}

/**
 * Integrated Encryption to one key as a stream, for a conversion's compact answer: the protected
 * header (`alg`, `kid`, no `enc`), the encapsulated secret (the compact JWE's Encrypted Key) and
 * the HPKE context's AES-256-GCM over the content, aad the protected header; its IV is empty
 * (the HPKE nonce is derived) and its tag ends the HPKE ciphertext.
 */
export function integratedStream(target: ResolvedKey): {
  protectedB64: string;
  ek: Buffer;
  encryptor: ContentEncryptor;
} {
  const suite = hpkeSuiteOf(target.type);
  if (!suite) throw problem('cms_key_unusable', `key ${target.kid} cannot receive an HPKE JWE`);
  const protectedB64 = Buffer.from(
    JSON.stringify({ alg: suite.integrated, kid: versionedKid(target.kid, target.version) }),
  ).toString('base64url');
  const { enc, ctx } = setupSender(kemKeyOf(target), Buffer.alloc(0));
  const cipher = contextCipher(ctx, Buffer.from(protectedB64, 'ascii'));
  return {
    protectedB64,
    ek: enc,
    encryptor: {
      cek: ctx.key,
      iv: Buffer.alloc(0),
      update: (chunk) => cipher.update(chunk),
      final: () => ({ rest: cipher.final(), tag: cipher.getAuthTag() }),
    },
  };
}

/** The protected header of a compact JWE, or undefined when it is not one. */
export function compactHeader(compact: string): Record<string, unknown> | undefined {
  const parts = compact.split('.');
  if (parts.length !== 5) return undefined;
  try {
    const h = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as unknown;
    return h && typeof h === 'object' && !Array.isArray(h)
      ? (h as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Opens an Integrated Encryption compact JWE with the key its `kid` named. Its form is checked
 * first (no `enc`, empty IV and tag: section 5); everything after that fails as the one
 * decryption-failed.
 */
export function integratedDecrypt(key: ResolvedKey, compact: string): Buffer {
  const [h, ek, iv, ct, tag] = compact.split('.');
  const header = compactHeader(compact);
  const named = header ? hpkeAlg(header.alg) : undefined;
  if (!header || !named || named.mode !== 'integrated' || 'enc' in header || iv || tag)
    throw problem('jose_malformed', 'not an HPKE Integrated Encryption JWE');
  if (named.type !== key.type)
    throw decryptionFailed(new Error(`key ${key.kid} does not open ${String(header.alg)}`));
  return open(
    kemKeyOf(key),
    Buffer.from(ek, 'base64url'),
    Buffer.alloc(0),
    Buffer.from(h, 'ascii'),
    Buffer.from(ct, 'base64url'),
  );
}
