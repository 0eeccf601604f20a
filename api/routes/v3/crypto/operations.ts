/**
 * The Core API's runtime operations, POST /api/v3/crypto/<operation>:
 * encrypt, decrypt, sign, verify, the data-key, re-encrypt, random and MAC operations, each in
 * single form (`{kid, ...}`) and batch form (`{items: [...]}` → `{results: [...]}`), as route
 * rows (api/routes/shared/operations.ts). The tenant comes from the token only. The runtime lane
 * (api/runtime-lane.ts) serves every one of them ahead of Express.
 *
 * Tests: test/integration/core/crypto.test.ts, test/integration/admin/key-settings.test.ts,
 *   test/integration/http/canonical-input.test.ts, test/integration/admin/master-key.test.ts,
 *   test/integration/observability/access-log.test.ts, test/integration/http/lane-parity.test.ts,
 *   and 16 more under test/integration/, test/unit/
 */
import type { Access } from '../../../rows/endpoint.ts';
import { OPERATIONS, operationRow, type OperationAt } from '../../shared/operations.ts';
import { decrypt, encrypt } from '../../../services/crypto/runtime.ts';
import { sign, verify } from '../../../services/crypto/signing.ts';
import {
  generateDataKey,
  generateDataKeyWithoutPlaintext,
  random,
  reEncrypt,
} from '../../../services/crypto/data-keys.ts';
import { generateMac, verifyMac } from '../../../services/crypto/mac.ts';

type Name = keyof typeof OPERATIONS;

/** The operation `name` at /<name>, needing every one of `permissions`, on the lane. */
const operation = <N extends Name>(
  name: N,
  operationId: string,
  permissions: readonly [string, ...string[]],
  run: OperationAt<(typeof OPERATIONS)[N]['body']>['run'],
) =>
  operationRow(OPERATIONS[name], {
    path: `/${name}`,
    operationId,
    tag: 'crypto',
    access: { allOf: permissions } satisfies Access,
    budget: `crypto.${name}`,
    run,
    lane: true,
  });

/** The runtime operations of /api/v3/crypto, served by Express and by the runtime lane. */
export const CRYPTO_OPERATIONS = [
  operation('encrypt', 'encrypt', ['crypto.encrypt'], encrypt),
  operation('decrypt', 'decrypt', ['crypto.decrypt'], decrypt),
  operation('sign', 'sign', ['crypto.sign'], sign),
  operation('verify', 'verify', ['crypto.verify'], verify),
  operation('generate-data-key', 'generateDataKey', ['crypto.generate-data-key'], generateDataKey),
  operation(
    'generate-data-key-without-plaintext',
    'generateDataKeyWithoutPlaintext',
    ['crypto.generate-data-key'],
    generateDataKeyWithoutPlaintext,
  ),
  // Re-encryption decrypts and encrypts, so it needs both.
  operation('re-encrypt', 'reEncrypt', ['crypto.decrypt', 'crypto.encrypt'], reEncrypt),
  operation('random', 'random', ['crypto.generate-data-key'], random),
  operation('generate-mac', 'generateMac', ['crypto.sign'], generateMac),
  operation('verify-mac', 'verifyMac', ['crypto.verify'], verifyMac),
];
