/**
 * OpenAPI paths of the Admin API (contract 2, 3 and 4): platform operations, and per tenant its
 * workloads, roles, human users, policies, keys and keystore import,
 * plus the unversioned keystore-import alias. Every path needs a `service-admin` bearer token
 * (the alias also takes `service-core`), the permission named in its description, and for
 * `/tenants/{tenantId}` paths a token of that tenant or `admin.platform.cross-tenant`.
 */
import { jsonResponse, problemResponse, withExample, type Schema } from './components.ts';

const uuid = { type: 'string', format: 'uuid' };
const time = { type: 'string', format: 'date-time' };
const str = { type: 'string' };
const obj = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});

// Example values, the same across operations so the examples read as one story.
const TENANT_ID = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';

const KeyState = { enum: ['active', 'suspended', 'revoked', 'archived'] };
const CertificateSummary = obj({
  subject: str,
  issuer: str,
  serialNumber: { type: 'string', description: 'upper-case hex' },
  notBefore: time,
  notAfter: time,
});
const Imported = withExample(
  obj({
    keys: {
      type: 'array',
      items: obj({
        kid: str,
        type: str,
        usage: str,
        usages: { type: 'array', items: str },
        allowedUsages: { type: 'array', items: str },
        state: KeyState,
        certificate: { oneOf: [CertificateSummary, { type: 'null' }] },
      }),
    },
  }),
  {
    keys: [
      {
        kid: 'partner-signing',
        type: 'rsa-2048',
        usage: 'sign',
        usages: ['sign'],
        allowedUsages: ['sign'],
        state: 'active',
        certificate: {
          subject: 'CN=Partner Signing,O=Partner',
          issuer: 'CN=Partner CA,O=Partner',
          serialNumber: '5A3C91E0',
          notBefore: '2026-01-01T00:00:00.000Z',
          notAfter: '2028-01-01T00:00:00.000Z',
        },
      },
    ],
  },
);

const PROBLEM_TEXT: Record<number, string> = {
  400: 'invalid input (validation-failed, malformed-json)',
  401: 'missing, invalid or expired bearer token, or the wrong audience',
  403: 'the role lacks the permission, or the path names another tenant',
  404: 'no such record in this tenant',
  409: 'conflict with the current state',
  410: 'gone',
  413: 'body too large',
  415: 'wrong media type',
  422: 'refused by the effective policy or the key usage',
};
const problems = (codes: number[], extra: Record<number, string> = {}) =>
  Object.fromEntries(codes.map((c) => [c, problemResponse(extra[c] ?? PROBLEM_TEXT[c])]));
const ok = jsonResponse;
const PATH_EXAMPLES: Record<string, string> = { tenantId: TENANT_ID };
const path = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  schema: name === 'kid' ? str : uuid,
  description,
  example: PATH_EXAMPLES[name],
});
const TENANT = path(
  'tenantId',
  "the tenant; must be the token's unless it holds admin.platform.cross-tenant",
);

interface Op {
  id: string;
  summary: string;
  permission: string;
  responses: Record<string | number, unknown>;
  errors?: number[];
  errorText?: Record<number, string>;
  requestBody?: unknown;
  parameters?: unknown[];
  description?: string;
}
const op = (tag: string, o: Op) => ({
  tags: [tag],
  operationId: o.id,
  summary: o.summary,
  description: [`Requires \`${o.permission}\`.`, o.description].filter(Boolean).join(' '),
  ...(o.parameters ? { parameters: o.parameters } : {}),
  ...(o.requestBody ? { requestBody: o.requestBody } : {}),
  responses: { ...o.responses, ...problems([401, 403, ...(o.errors ?? [])], o.errorText) },
});

const T = '/api/v3/admin/tenants/{tenantId}';

const keys = {
  [`${T}/keys/import-keystore`]: {
    post: op('keys', {
      id: 'importKeystore',
      summary:
        'Import the keys of a PKCS#12 file or a PEM key with its certificate chain (contract 4)',
      permission: 'admin.keys.import',
      parameters: [TENANT],
      description:
        "PKCS#12 with PBES2 (AES, PBKDF2, SHA-256 MAC) or legacy 3DES/RC2/SHA-1; PEM with a plain or encrypted private key. The chain is stored and the key is found by issuer and serial number or subject key identifier. Each key pair imports as one key whose `allowedUsages` are what the certificate's keyUsage/extendedKeyUsage allow of what its type does (digitalSignature or nonRepudiation: sign; keyEncipherment, dataEncipherment or keyAgreement: encrypt), or everything its type does when the certificate has neither extension (openssl req -x509 and keytool -genkeypair make such certificates): an RSA or EC key then both signs and encrypts. Its `usages` are all of them, or the one `usage` names (narrowed at import; PATCH usages changes them later within allowedUsages). Keys: RSA 2048/3072/4096, RSASSA-PSS 2048/3072/4096 (id-RSASSA-PSS PKCS#8 keys and certificates: sign only, type rsa-pss-*; a key whose RSASSA-PSS-params bind it to a hash other than SHA-256/384/512, to MGF1 over another hash, or to a salt longer than the hash is keystore-unsupported-algorithm when it is to sign), EC P-256/P-384/P-521, Ed25519, Ed448 (sign only), and X25519/X448 (encrypt only: they open CMS key agreement recipients, RFC 8418). Every key pair is checked for consistency. A PEM bundle or PKCS#12 file of certificates without any private key imports each certificate as a verify-only key (usage `verify`, contract 10): it verifies CMS signers (an outside sender's mail) and is never used to sign or decrypt; `trustAnchor=true` makes them the tenant's trust anchors for `verify: chain`. A failure stores nothing.",
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: obj(
              {
                keystore: { type: 'string', format: 'binary' },
                password: str,
                kid: str,
                usage: { enum: ['encrypt', 'sign', 'verify'] },
                trustAnchor: {
                  enum: ['true', 'false'],
                  description:
                    'certificates without a private key only: mark them as trust anchors for verify: chain',
                },
              },
              ['keystore'],
            ),
          },
        },
      },
      responses: { 201: ok('the imported keys', Imported) },
      errors: [400, 409, 413, 415, 422],
      errorText: {
        400: "keystore-password-invalid (wrong password or failed MAC), keystore-malformed (names what was found: truncated, a certificate, ...), keystore-empty, keystore-key-mismatch (the key is not the certificate's), keystore-key-invalid (an inconsistent key pair, naming what does not hold, or an RSA public exponent outside odd 65537 <= e < 2^256), or a kid for a certificate that makes two keys",
        409: 'the kid exists, or another key of the tenant holds the certificate for one of those usages (the problem names the existing kid in `kid`)',
        415: 'keystore-unsupported-algorithm, or not multipart/form-data',
        422: "policy-violation, or key-usage-mismatch (usage contradicts the certificate's keyUsage/extendedKeyUsage, or they allow nothing this key type does)",
      },
    }),
  },
};

const legacy = {
  '/api/migration/pkcs12': {
    post: {
      ...op('migration', {
        id: 'legacyImportKeystore',
        summary:
          "Unversioned keystore import into the token's tenant (alias of keys/import-keystore)",
        permission: 'migration.keystore.import or admin.keys.import',
        description: 'Accepts service-admin and service-core tokens.',
        requestBody: keys[`${T}/keys/import-keystore`].post.requestBody,
        responses: { 201: ok('the imported keys', Imported) },
        errors: [400, 409, 413, 415, 422],
      }),
    },
  },
};

export const adminPaths = { ...keys, ...legacy };
