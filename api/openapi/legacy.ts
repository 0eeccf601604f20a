/**
 * OpenAPI paths of the legacy unversioned key management and runtime operations (spec 4.2):
 * /api/key-management/keys and /api/crypto/{encrypt,decrypt,sign,verify}. They take the
 * access token of /api/authenticate/app and check its legacy role names (`scopes`); a missing
 * role answers 401 (spec 5.12), not 403. Errors are problem details. The legacy login and the
 * migration aliases are documented with their v3 counterparts (auth.ts, admin.ts, migration.ts).
 */
import { jsonResponse, plainSchema, problems, withExample, type Schema } from './components.ts';
import { COMMON, kid } from './crypto.ts';
import { KeyView as KeyViewSchema } from '../http/key-schemas.ts';

/** The key view the Core key list answers (its row's schema). */
const KeyView = plainSchema(KeyViewSchema);

const tags = ['legacy'];
const UNAUTHORIZED =
  'missing or invalid legacy bearer token, or the token lacks the legacy role (insufficient_scope)';
const LEGACY_COMMON = { 401: UNAUTHORIZED, 413: COMMON[413], 415: COMMON[415] };
const role = (name: string) => `the legacy role \`${name}\``;
// Like the admin API's key creation, but members it does not know are ignored (the legacy contract predates the closed bodies of contract 8).
const NewKey: Schema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: {
      type: 'string',
      description: 'a key type of the catalogue (aes-256, rsa-2048, ec-p256, ml-dsa-65...)',
    },
    usage: { enum: ['encrypt', 'sign', 'mac'] },
    kid,
    description: { type: 'string', maxLength: 500 },
    rotationPeriodDays: { type: 'integer', minimum: 1, maximum: 3650 },
  },
};
const ImportKey: Schema = {
  type: 'object',
  description:
    'Exactly one of `pem` (a private key, plain or encrypted with `password`, with its optional certificate chain) and `key` (base64 of a 16- or 32-byte AES key).',
  properties: {
    pem: { type: 'string' },
    password: { type: 'string', writeOnly: true },
    key: { type: 'string', contentEncoding: 'base64', writeOnly: true },
    type: { enum: ['aes-128', 'aes-256'], description: 'for `key`; default from its length' },
    kid,
    usage: { enum: ['encrypt', 'sign'] },
  },
};
const KEY_ERRORS = {
  409: 'conflict: the kid exists in this tenant',
  422: "policy-violation: the tenant's effective policy does not allow the type, or key-usage-mismatch",
};

export const legacyPaths = {
  '/api/key-management/keys': {
    get: {
      tags,
      operationId: 'legacyListKeys',
      summary: "The tenant's keys except archived ones, by kid (at most 1000)",
      description: `Requires ${role('key_management.listKeys')}. Not paged; use GET /api/v3/crypto/keys for paging.`,
      responses: {
        200: jsonResponse(
          'the keys',
          withExample(
            {
              type: 'object',
              required: ['keys'],
              properties: { keys: { type: 'array', items: KeyView } },
            },
            { keys: KeyView.examples },
          ),
        ),
        ...problems({ 401: UNAUTHORIZED }),
      },
    },
    post: {
      tags,
      operationId: 'legacyCreateKey',
      summary: "Generate a key in the token's tenant",
      description: `Requires ${role('key_management.generateKey')}. The kid defaults to \`key-<uuid>\`; usage to the type's default.`,
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: NewKey, example: { type: 'aes-256', kid: 'orders' } },
        },
      },
      responses: {
        201: jsonResponse('the key', KeyView),
        ...problems({
          400: 'validation-failed: an unknown type or usage, a bad kid, description or rotationPeriodDays',
          ...KEY_ERRORS,
          ...LEGACY_COMMON,
        }),
      },
    },
  },
  '/api/key-management/keys/import': {
    post: {
      tags,
      operationId: 'legacyImportKey',
      summary: 'Import a PEM private key (with its certificates) or a raw AES key',
      description: `Requires ${role('key_management.importKey')}. A PEM is imported like POST .../keys/import-keystore of the admin API (the key pair is checked, certificates stored); the first imported key is answered.`,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: ImportKey,
            example: {
              key: 'q1N4ve3m3Mmw0Q2oLr7H8wJ0Xk3c1S0b3mXyq3M5c8E=',
              kid: 'orders-imported',
            },
          },
        },
      },
      responses: {
        201: jsonResponse('the imported key', KeyView, {
          ...((KeyView.examples as unknown[])[0] as object),
          kid: 'orders-imported',
          currentVersion: 1,
          source: 'imported',
        }),
        ...problems({
          400: 'validation-failed (neither pem nor key, or a key whose length does not match type), keystore-malformed, keystore-password-invalid, keystore-key-invalid (an inconsistent key pair, or an RSA public exponent outside odd 65537 <= e < 2^256)',
          ...KEY_ERRORS,
          ...LEGACY_COMMON,
          415: 'not application/json, or keystore-unsupported-algorithm',
        }),
      },
    },
  },
};
