/**
 * HMAC (RFC 2104) with the keys of the `hmac` family: HS256, HS384, HS512 in JOSE terms (RFC 7518
 * section 3.2). A MAC is the full hash output; verification refuses any other length before it
 * compares, then compares once, in constant time, so neither a truncated MAC (which would make
 * forgery cheaper, RFC 2104 section 5) nor the position of the first wrong byte is ever accepted
 * or observable.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { problem } from '../errors/index.ts';
import { assertUsage, type KeyTypeSpec, type MacAlgorithm } from './registry.ts';
import type { LoadedKeyVersion } from './material.ts';

/** The HMAC parameters of a key type; key-usage-mismatch for a type that does not MAC. */
function macSpec(spec: KeyTypeSpec): NonNullable<KeyTypeSpec['mac']> {
  if (!spec.mac)
    throw problem('key_usage_mismatch', `a ${spec.type} key cannot compute a MAC`, {
      details: { needed: 'mac' },
    });
  return spec.mac;
}

/** The MAC length in bytes: the hash output (32, 48 or 64). */
export function macLength(spec: KeyTypeSpec): number {
  return spec.bits / 8;
}

/** The JOSE name of the key's MAC algorithm. */
export function macAlgorithm(spec: KeyTypeSpec): MacAlgorithm {
  return macSpec(spec).alg;
}

/** HMAC of `data` under a `mac` key version. */
export function computeMac(key: LoadedKeyVersion, data: Buffer): Buffer {
  assertUsage(key, 'mac');
  return createHmac(macSpec(key.spec).hash, key.secretKey!).update(data).digest();
}

/** 400 unless `mac` is exactly as long as this key type's MACs: a shorter (truncated) MAC is refused, never compared. */
export function checkMacLength(spec: KeyTypeSpec, mac: Buffer, field = 'mac'): void {
  const want = macLength(spec);
  if (mac.length !== want) {
    throw problem(
      'validation_failed',
      `${field} must be ${want} bytes (the full ${macSpec(spec).alg} output), got ${mac.length}`,
      { details: { field } },
    );
  }
}

/** Whether `mac` is the MAC of `data` under this key version: one constant-time compare of full-length values. */
export function macMatches(key: LoadedKeyVersion, data: Buffer, mac: Buffer): boolean {
  checkMacLength(key.spec, mac);
  return timingSafeEqual(computeMac(key, data), mac);
}
