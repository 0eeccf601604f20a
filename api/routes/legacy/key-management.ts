/**
 * The legacy key management, /api/key-management/keys: JSON bodies, legacy tokens
 * from /api/authenticate/app, legacy role names (a missing one is 401). Members a
 * body does not know are ignored here: the legacy API predates the closed bodies of
 * the v3 API.
 *
 * Tests: test/integration/core/legacy.test.ts, test/integration/core/expensive-routes.test.ts,
 *   test/integration/keys/rsa-exponents.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../rows/endpoint.ts';
import { KEY_VIEW, LEGACY_KID, LegacyKeyImport, VIEW_EXAMPLE } from '../../schemas/keys.ts';
import { Resource } from '../../schemas/common.ts';
import { createKey } from '../../services/keys/store.ts';
import { importLegacyKey } from '../../services/legacy-keys.ts';
import { listLegacyKeys } from '../../services/key-lists.ts';

const tag = 'legacy';
const KeyView = Resource(KEY_VIEW, VIEW_EXAMPLE);
const KEY_ERRORS = {
  409: 'conflict: the kid exists in this tenant',
  422: "policy-violation: the tenant's effective policy does not allow the type, or key-usage-mismatch",
};

/** Mounted at /api/key-management (after legacy-audience authentication). */
export const LEGACY_KEY_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/keys',
    operationId: 'legacyListKeys',
    tag,
    summary: "The tenant's keys except archived ones, by kid (at most 1000)",
    description: 'Not paged; use GET /api/v3/crypto/keys for paging.',
    access: { legacyRole: 'key_management.listKeys' },
    answer: {
      status: 200,
      description: 'the keys',
      schema: Type.Object({ keys: Type.Array(KeyView) }, { examples: [{ keys: [VIEW_EXAMPLE] }] }),
    },
    handle: (ctx, { claims }) => listLegacyKeys(ctx.db, claims.tenantId),
  }),
  endpoint({
    method: 'post',
    path: '/keys',
    operationId: 'legacyCreateKey',
    tag,
    summary: "Generate a key in the token's tenant",
    description: "The kid defaults to `key-<uuid>`; usage to the type's default.",
    access: { legacyRole: 'key_management.generateKey' },
    body: Type.Object(
      {
        type: Type.String({
          description: 'a key type of the catalogue (aes-256, rsa-2048, ec-p256, ml-dsa-65...)',
        }),
        usage: Type.Optional(Type.Enum(['encrypt', 'sign', 'mac'])),
        kid: Type.Optional(LEGACY_KID),
        description: Type.Optional(Type.String({ maxLength: 500 })),
        rotationPeriodDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
      },
      { examples: [{ type: 'aes-256', kid: 'orders' }] },
    ),
    answer: { status: 201, description: 'the key', schema: KeyView },
    problems: {
      400: 'validation-failed: an unknown type or usage, a bad kid, description or rotationPeriodDays',
      ...KEY_ERRORS,
    },
    expensive: { kinds: ['key-generation'] },
    handle: (ctx, { claims, body, actor }) => createKey(ctx, claims.tenantId, body, actor),
    audit: {
      action: 'key.create',
      target: (_input, key) => key.kid,
      details: () => ({ legacy: true }),
    },
  }),
  endpoint({
    method: 'post',
    path: '/keys/import',
    operationId: 'legacyImportKey',
    tag,
    summary: 'Import a PEM private key (with its certificates) or a raw AES key',
    description:
      'A PEM is imported like POST .../keys/import-keystore of the admin API (the key pair is checked, certificates stored); the first imported key is answered. Exactly one of `pem` (a private key, plain or encrypted with `password`, with its optional certificate chain) and `key` (base64 of a 16- or 32-byte AES key).',
    access: { legacyRole: 'key_management.importKey' },
    body: LegacyKeyImport,
    answer: { status: 201, description: 'the imported key', schema: KeyView },
    problems: {
      400: 'validation-failed (neither pem nor key, or a key whose length does not match type), keystore-malformed, keystore-password-invalid, keystore-key-invalid (an inconsistent key pair, or an RSA public exponent outside odd 65537 <= e < 2^256)',
      ...KEY_ERRORS,
      415: 'not application/json, or keystore-unsupported-algorithm',
    },
    // An encrypted PEM's PBKDF2 or scrypt, on the caller's budget like a keystore's.
    expensive: { kinds: ['keystore-derivation'] },
    handle: (ctx, { claims, body, actor }) => importLegacyKey(ctx, claims.tenantId, body, actor),
    audit: {
      action: 'key.import',
      target: (_input, view) => view.kid,
      details: () => ({ legacy: true }),
    },
  }),
];
