/**
 * The legacy runtime operations, POST /api/crypto/{encrypt,decrypt,sign,verify}:
 * the v3 operations on the same per-route core (api/http/runtime-route.ts), behind legacy tokens
 * and legacy role names (api/access/legacy-role.ts).
 *
 * Tests: test/integration/core/legacy.test.ts
 */
import type { LegacyRuntimeRoute } from '../../http/runtime-route.ts';
import { RUNTIME_OPERATIONS } from '../../http/runtime-contract.ts';
import { decrypt, encrypt, sign, verify } from '../../services/crypto/runtime.ts';
import { DecryptBody, EncryptBody, SignBody, VerifyBody } from '../../services/crypto/bodies.ts';

/** A legacy operation: the v3 one's contract under its legacy id, tag and role. */
const legacy = (
  name: 'encrypt' | 'decrypt' | 'sign' | 'verify',
  legacyRole: string,
  id: string,
  body: LegacyRuntimeRoute['body'],
  op: LegacyRuntimeRoute['op'],
): LegacyRuntimeRoute => ({
  path: `/${name}`,
  legacyRole,
  action: `legacy.crypto.${name}`,
  body,
  op,
  doc: {
    ...RUNTIME_OPERATIONS[name],
    id,
    tag: 'legacy',
    summary: `${RUNTIME_OPERATIONS[name].summary} (legacy path of /api/v3/crypto/${name})`,
  },
});

/** Mounted at /api/crypto (after legacy-audience authentication). */
export const LEGACY_OPERATIONS: readonly LegacyRuntimeRoute[] = [
  legacy('encrypt', 'secure.encrypt', 'legacyEncrypt', EncryptBody, encrypt),
  legacy('decrypt', 'secure.decrypt', 'legacyDecrypt', DecryptBody, decrypt),
  legacy('sign', 'secure.sign', 'legacySign', SignBody, sign),
  legacy('verify', 'secure.verifySignature', 'legacyVerify', VerifyBody, verify),
];
