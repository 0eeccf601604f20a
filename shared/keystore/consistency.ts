/**
 * Key pair consistency at import: a private key whose parts disagree would import and then fail
 * (or, worse, quietly work through OpenSSL's non-CRT fallback) at every later use, so it is
 * refused here with a problem that names what does not hold.
 */
import {
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
  sign,
  verify,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { problem } from '../errors/index.ts';
import { asRsaKey } from '../crypto/rsa-pss.ts';

const big = (b64url: string | undefined): bigint | undefined =>
  b64url === undefined
    ? undefined
    : BigInt(`0x${Buffer.from(b64url, 'base64url').toString('hex') || '0'}`);
const gcd = (a: bigint, b: bigint): bigint => {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
};

/** What is wrong with an RSA private key's parameters (RFC 8017 section 3.2), or null. */
export function rsaInconsistency(privateKey: KeyObject): string | null {
  const j = asRsaKey(privateKey).export({ format: 'jwk' });
  const [n, e, d, p, q, dp, dq, qi] = [j.n, j.e, j.d, j.p, j.q, j.dp, j.dq, j.qi].map(big);
  if (!n || !e || !d) return 'n, e or d is missing';
  // Only the two-prime form has p and q; without them the sign/verify round trip decides.
  if (!p || !q) return null;
  if (p * q !== n) return 'n is not p * q';
  const lambda = ((p - 1n) * (q - 1n)) / gcd(p - 1n, q - 1n);
  if ((d * e) % lambda !== 1n) return 'd is not the inverse of e modulo lcm(p-1, q-1)';
  if (dp !== undefined && dp !== d % (p - 1n)) return 'dP is not d mod (p-1)';
  if (dq !== undefined && dq !== d % (q - 1n)) return 'dQ is not d mod (q-1)';
  if (qi !== undefined && (qi * q) % p !== 1n) return 'qInv is not the inverse of q modulo p';
  return null;
}

/**
 * Refuses (keystore-key-invalid, 400) a private key that does not form a pair with `publicKey`
 * (its certificate's key when it has one): RSA parameters are checked arithmetically, then every
 * type signs a random message that `publicKey` must verify, which catches an EC or Ed25519
 * private scalar that does not belong to the public point it is stored with; X25519 and X448 keys,
 * which cannot sign, agree on a secret with a fresh key instead.
 */
export function checkKeyPair(privateKey: KeyObject, publicKey: KeyObject, index: number): void {
  const which = `private key #${index + 1}`;
  if (privateKey.asymmetricKeyType === 'rsa' || privateKey.asymmetricKeyType === 'rsa-pss') {
    const why = rsaInconsistency(privateKey);
    if (why) throw problem('keystore_key_invalid', `the RSA ${which} is inconsistent: ${why}`);
  }
  const kind = privateKey.asymmetricKeyType;
  if (kind === 'x25519' || kind === 'x448') {
    // Agreement keys cannot sign: the pair holds when both sides agree on one secret with a fresh key.
    const peer = kind === 'x25519' ? generateKeyPairSync('x25519') : generateKeyPairSync('x448');
    const agreed = (priv: KeyObject, pub: KeyObject): Buffer =>
      diffieHellman({ privateKey: priv, publicKey: pub });
    if (!agreed(privateKey, peer.publicKey).equals(agreed(peer.privateKey, publicKey)))
      throw problem(
        'keystore_key_invalid',
        `the ${which} does not match its certificate's public key`,
      );
    return;
  }
  const message = randomBytes(32);
  // Ed25519 and Ed448 sign the message itself (RFC 8032); RSA and ECDSA over SHA-256, an
  // RSASSA-PSS key over the hash its parameters bind it to.
  const hash =
    kind === 'ed25519' || kind === 'ed448'
      ? null
      : (privateKey.asymmetricKeyDetails?.hashAlgorithm ?? 'sha256');
  let ok: boolean;
  try {
    ok = verify(hash, message, publicKey, sign(hash, message, privateKey));
  } catch {
    ok = false;
  }
  if (!ok) {
    const derived = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
    const stored = publicKey.export({ type: 'spki', format: 'der' }).equals(derived);
    throw problem(
      'keystore_key_invalid',
      stored
        ? `the ${which} does not match its public key: a signature it makes does not verify`
        : `the ${which} does not match its certificate's public key`,
    );
  }
}
