/**
 * The PQC API's operations (contract 3): the runtime operations restricted to post-quantum keys
 * (ML-KEM, X-Wing hybrid, ML-DSA, SLH-DSA). One rule says what a post-quantum key is, for the
 * listing (a type prefix in SQL) and for the operations alike.
 */
import { problem } from '../../../shared/errors/index.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';
import type { Operation } from './batch.ts';
import {
  DECAPSULATE_MEMBERS,
  ENCAPSULATE_MEMBERS,
  SIGN_MEMBERS,
  VERIFY_MEMBERS,
  decapsulateKey,
  encapsulateKey,
  sign,
  usableKey,
  verify,
} from './runtime.ts';

/** The type prefixes of the post-quantum key types (ml-kem-*, ml-dsa-*, slh-dsa-*, x25519-ml-kem-*). */
export const PQC_TYPE_PREFIXES: readonly string[] = ['ml-', 'slh-', 'x25519-'];

/** True for a post-quantum key type. */
export const isPqcType = (type: string): boolean =>
  PQC_TYPE_PREFIXES.some((p) => type.startsWith(p));

/** Restricts an operation to post-quantum key types; unknown members are a 400 before the key lookup. */
function pqcOnly(op: Operation, known: ReadonlySet<string>): Operation {
  return async (ctx, tenantId, body) => {
    onlyKnown(body, known);
    const key = await usableKey(ctx, tenantId, body.kid);
    if (!isPqcType(key.type))
      throw problem(
        'key_usage_mismatch',
        `key ${key.kid} is ${key.type}, not a post-quantum key; use /api/v3/crypto`,
      );
    return op(ctx, tenantId, body);
  };
}

/** The operations of /api/v3/pqc: path segment, permission, operation. */
export const PQC_OPERATIONS: ReadonlyArray<readonly [string, string, Operation]> = [
  ['encapsulate', 'pqc.encapsulate', pqcOnly(encapsulateKey, ENCAPSULATE_MEMBERS)],
  ['decapsulate', 'pqc.decapsulate', pqcOnly(decapsulateKey, DECAPSULATE_MEMBERS)],
  ['sign', 'pqc.sign', pqcOnly(sign, SIGN_MEMBERS)],
  ['verify', 'pqc.verify', pqcOnly(verify, VERIFY_MEMBERS)],
];
