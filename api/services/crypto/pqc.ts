/**
 * The PQC API's operations (contract 3): the runtime operations restricted to post-quantum keys
 * (ML-KEM, X-Wing hybrid, ML-DSA, SLH-DSA). The key-type table's `pqc` column says what a
 * post-quantum key is, for the listing (PQC_KEY_TYPES in SQL) and for the operations alike.
 */
import { problem } from '../../../shared/errors/index.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';
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
  operationKey,
  verify,
} from './runtime.ts';

/** Restricts an operation to post-quantum key types; unknown members are a 400 before the key lookup. */
function pqcOnly(op: Operation, known: ReadonlySet<string>): Operation {
  return async (ctx, tenantId, body) => {
    onlyKnown(body, known);
    const key = await operationKey(ctx, tenantId, body.kid);
    if (keyTypeSpec(key.type).pqc !== true)
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
