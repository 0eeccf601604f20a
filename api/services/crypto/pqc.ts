/**
 * The PQC API's operations: the runtime operations restricted to post-quantum keys
 * (ML-KEM, the ML-KEM hybrids, ML-DSA, SLH-DSA). The key-type table's `pqc` column says what a
 * post-quantum key is, for the listing (PQC_KEY_TYPES in SQL) and for the operations alike.
 */
import { problem } from '../../../shared/errors/index.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';
import type { TObject } from 'typebox';
import type { Operation } from './batch.ts';
import { DecapsulateBody, EncapsulateBody, SignBody, VerifyBody } from './bodies.ts';
import { decapsulateKey, encapsulateKey, operationKey } from './runtime.ts';
import { sign, verify } from './signing.ts';

/** Restricts an operation to post-quantum key types (its body checked by the route before). */
function pqcOnly(op: Operation): Operation {
  return async (ctx, tenantId, body: { kid: string }) => {
    const key = await operationKey(ctx, tenantId, body.kid);
    if (keyTypeSpec(key.type).pqc !== true)
      throw problem(
        'key_usage_mismatch',
        `key ${key.kid} is ${key.type}, not a post-quantum key; use /api/v3/crypto`,
      );
    return op(ctx, tenantId, body);
  };
}

/** The operations of /api/v3/pqc: path segment, permission, body schema, operation. */
export const PQC_OPERATIONS: ReadonlyArray<readonly [string, string, TObject, Operation]> = [
  ['encapsulate', 'pqc.encapsulate', EncapsulateBody, pqcOnly(encapsulateKey)],
  ['decapsulate', 'pqc.decapsulate', DecapsulateBody, pqcOnly(decapsulateKey)],
  ['sign', 'pqc.sign', SignBody, pqcOnly(sign)],
  ['verify', 'pqc.verify', VerifyBody, pqcOnly(verify)],
];
