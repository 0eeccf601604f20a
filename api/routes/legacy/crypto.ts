/**
 * The legacy runtime operations, POST /api/crypto/{encrypt,decrypt,sign,verify}:
 * the v3 operations' contracts (api/routes/shared/operations.ts) on the same core, behind legacy
 * tokens and legacy role names (api/access/legacy-role.ts).
 *
 * Tests: test/integration/core/legacy.test.ts
 */
import { OPERATIONS, operationRow, type OperationAt } from '../shared/operations.ts';
import { decrypt, encrypt } from '../../services/crypto/runtime.ts';
import { sign, verify } from '../../services/crypto/signing.ts';

type Name = 'encrypt' | 'decrypt' | 'sign' | 'verify';

/** A legacy operation: the v3 one's contract under its legacy id, tag and role. */
const legacy = <N extends Name>(
  name: N,
  legacyRole: string,
  operationId: string,
  run: OperationAt<(typeof OPERATIONS)[N]['body']>['run'],
) =>
  operationRow(
    {
      ...OPERATIONS[name],
      summary: `${OPERATIONS[name].summary} (legacy path of /api/v3/crypto/${name})`,
    },
    {
      path: `/${name}`,
      operationId,
      tag: 'legacy',
      access: { legacyRole },
      budget: `legacy.crypto.${name}`,
      run,
    },
  );

/** Mounted at /api/crypto (after legacy-audience authentication). */
export const LEGACY_OPERATIONS = [
  legacy('encrypt', 'secure.encrypt', 'legacyEncrypt', encrypt),
  legacy('decrypt', 'secure.decrypt', 'legacyDecrypt', decrypt),
  legacy('sign', 'secure.sign', 'legacySign', sign),
  legacy('verify', 'secure.verifySignature', 'legacyVerify', verify),
];
