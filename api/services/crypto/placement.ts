/**
 * Where each runtime operation runs (the key-type table's `onLoop` column), decided by measurement (µs per operation on one core of
 * this machine, Node 24 / OpenSSL 3.5): work under ~100 µs stays on the event loop (a hop to
 * the pool costs about as much), anything slower goes to the piscina pool so the loop keeps
 * serving. Measured: AES-GCM 1 KiB 7/9, RSA-OAEP-256 encrypt 51, ES256 sign 54, Ed25519 sign 53,
 * RSA-2048 verify 35, ES256 verify 95, ML-KEM-768 encaps/decaps 24/34 stay on the loop;
 * RSA-2048 sign 271 and OAEP decrypt 321, ES384 sign 830, ES512 sign 1,950, P-256 ECDH-ES
 * 174-189, ML-DSA-65 sign 964, SLH-DSA 12,000+, ECDSA digest verify (pure JS) 1,400 go to the pool.
 */
import { keyTypeSpec, type KeyType, type RuntimeOp } from '../../../shared/crypto/registry.ts';

export type { RuntimeOp };

/** True when the operation on this key type should run in the worker pool (the registry's `onLoop` column). */
export function runsInPool(op: RuntimeOp, type: KeyType, digestMode = false): boolean {
  const spec = keyTypeSpec(type);
  return (digestMode && spec.digestInPool === true) || !spec.onLoop.includes(op);
}
