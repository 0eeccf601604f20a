/**
 * OpenAPI paths of the MAC operations (contract 8), generate-mac and verify-mac (HMAC keys,
 * usage `mac`); the key lists and public keys are route rows (api/routes/v3/crypto/keys.ts,
 * api/routes/v3/admin/tenants/keys.ts).
 * A public JWK's `kid` is `<kid>#<version>`, the name the service's JWS and JWE headers give that
 * version, so a verifier picks the key a signature was made with.
 */
import { withExample } from './components.ts';
import { base64, int, kid, obj, operation, str, type Schema } from './crypto.ts';

/** Answers are not closed: a member may be added without breaking a client (batch results add `status`). */
const res = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});
const KEY = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended or key-revoked: the key is not active',
};

const MAC = 'q8v3Jb2ZK0e5bJY3m8C1dGvJmX0cQ4mJ7dBqkq0vJ5E=';
const macAlg = {
  enum: ['HS256', 'HS384', 'HS512'],
  description: 'HMAC with SHA-256, SHA-384 or SHA-512 (RFC 7518 section 3.2)',
};

/** A key's metadata as the runtime and legacy APIs list it (api/services/keys/store.ts keyView): never material. */
export const KeyView = withExample(
  res(
    {
      kid: str,
      type: str,
      usage: { enum: ['encrypt', 'sign', 'mac'] },
      state: { enum: ['active', 'suspended', 'revoked', 'archived'] },
      currentVersion: int,
      source: { enum: ['generated', 'imported', 'exchange'] },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: { type: 'string', format: 'date-time' },
      publicKey: {
        type: 'object',
        description: "the current version's public JWK, asymmetric keys only",
      },
    },
    ['kid', 'type', 'usage', 'state', 'currentVersion', 'source', 'createdAt', 'updatedAt'],
  ),
  {
    kid: 'orders',
    type: 'aes-256',
    usage: 'encrypt',
    state: 'active',
    currentVersion: 2,
    source: 'generated',
    createdAt: '2026-01-05T09:00:00.000Z',
    updatedAt: '2026-11-23T16:00:00.000Z',
  },
);

export const cryptoKeysPaths = {
  '/api/v3/crypto/generate-mac': operation({
    id: 'generateMac',
    summary: "Compute an HMAC of data with the key's current version (AWS KMS GenerateMac)",
    permission: '`crypto.sign`',
    description:
      'The key must have usage `mac` (types hmac-sha256, hmac-sha384, hmac-sha512); the MAC is the full hash output (32, 48 or 64 bytes).',
    request: obj({ kid, data: base64('the message') }),
    response: res({ kid: str, version: int, algorithm: macAlg, mac: base64('the MAC') }),
    example: { kid: 'webhook-mac', data: 'YXR0YWNrIGF0IGRhd24=' },
    answer: { kid: 'webhook-mac', version: 1, algorithm: 'HS256', mac: MAC },
    problems: {
      400: 'validation-failed: bad base64 or an unknown member',
      ...KEY,
      422: "key-usage-mismatch: the key's usage is not mac",
    },
  }),
  '/api/v3/crypto/verify-mac': operation({
    id: 'verifyMac',
    summary:
      'Verify an HMAC with any retained version, newest first, or the one named (AWS KMS VerifyMac)',
    permission: '`crypto.verify`',
    description:
      "Each version is checked with one constant-time comparison of the full MAC. A wrong MAC is `valid: false` (200); a MAC of the wrong length (a truncated one, say) is a 400, never compared. Versions below the key's minDecryptionVersion are not tried; naming one is key-version-retired.",
    request: obj(
      {
        kid,
        data: base64('the message'),
        mac: base64('the MAC, full length'),
        version: { ...int, description: 'check this version only' },
      },
      ['kid', 'data', 'mac'],
    ),
    response: res(
      {
        kid: str,
        version: { ...int, description: 'the version that matched; absent when none did' },
        valid: { type: 'boolean' },
      },
      ['kid', 'valid'],
    ),
    example: { kid: 'webhook-mac', data: 'YXR0YWNrIGF0IGRhd24=', mac: MAC },
    answer: { kid: 'webhook-mac', version: 1, valid: true },
    problems: {
      400: "validation-failed: bad base64, a MAC that is not the algorithm's full length, a version that is not a positive integer, or an unknown member",
      404: KEY[404],
      409: 'key-suspended, key-revoked or key-version-retired',
      422: "key-usage-mismatch: the key's usage is not mac",
    },
  }),
};
