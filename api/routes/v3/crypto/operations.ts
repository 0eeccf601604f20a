/**
 * The Core API's runtime operations, POST /api/v3/crypto/<operation>:
 * encrypt, decrypt, sign, verify, the data-key, re-encrypt, random and MAC operations, each in
 * single form (`{kid, ...}`) and batch form (`{items: [...]}` → `{results: [...]}`). The
 * tenant comes from the token only. The runtime lane (api/runtime-lane.ts) serves the same
 * table ahead of Express.
 *
 * Tests: test/integration/core/crypto.test.ts, test/integration/admin/key-settings.test.ts,
 *   test/integration/http/canonical-input.test.ts, test/integration/admin/master-key.test.ts,
 *   test/integration/observability/access-log.test.ts, test/integration/http/lane-parity.test.ts,
 *   and 16 more under test/integration/, test/unit/
 */
import type { TObject } from 'typebox';
import type { RuntimeRoute } from '../../../http/runtime-route.ts';
import { RUNTIME_OPERATIONS } from '../../../http/runtime-contract.ts';
import type { Operation } from '../../../services/crypto/batch.ts';
import { decrypt, encrypt, sign, verify } from '../../../services/crypto/runtime.ts';
import {
  generateDataKey,
  generateDataKeyWithoutPlaintext,
  random,
  reEncrypt,
} from '../../../services/crypto/data-keys.ts';
import { generateMac, verifyMac } from '../../../services/crypto/mac.ts';
import {
  DataKeyBody,
  DecryptBody,
  EncryptBody,
  GenerateMacBody,
  RandomBody,
  ReEncryptBody,
  SignBody,
  VerifyBody,
  VerifyMacBody,
} from '../../../services/crypto/bodies.ts';

/**
 * A route of the table below: path segment, permission (or every one of a list), body schema,
 * operation, and its contract when api/http/runtime-contract.ts holds one.
 */
const operation = (
  name: string,
  permission: string | readonly string[],
  body: TObject,
  op: Operation,
): RuntimeRoute => ({
  path: `/${name}`,
  permissions: typeof permission === 'string' ? [permission] : permission,
  action: `crypto.${name}`,
  body,
  op,
  doc: (RUNTIME_OPERATIONS as Record<string, RuntimeRoute['doc']>)[name],
});

/** The runtime operations of /api/v3/crypto, served by Express and by the runtime lane. */
export const CRYPTO_OPERATIONS: readonly RuntimeRoute[] = [
  operation('encrypt', 'crypto.encrypt', EncryptBody, encrypt),
  operation('decrypt', 'crypto.decrypt', DecryptBody, decrypt),
  operation('sign', 'crypto.sign', SignBody, sign),
  operation('verify', 'crypto.verify', VerifyBody, verify),
  operation('generate-data-key', 'crypto.generate-data-key', DataKeyBody, generateDataKey),
  operation(
    'generate-data-key-without-plaintext',
    'crypto.generate-data-key',
    DataKeyBody,
    generateDataKeyWithoutPlaintext,
  ),
  // Re-encryption decrypts and encrypts, so it needs both.
  operation('re-encrypt', ['crypto.decrypt', 'crypto.encrypt'], ReEncryptBody, reEncrypt),
  operation('random', 'crypto.generate-data-key', RandomBody, random),
  operation('generate-mac', 'crypto.sign', GenerateMacBody, generateMac),
  operation('verify-mac', 'crypto.verify', VerifyMacBody, verifyMac),
];
