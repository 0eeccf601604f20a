/**
 * OpenAPI paths of the Admin API (contract 2, 3 and 4): platform operations, and per tenant its
 * workloads, roles, human users, policies, keys, keystore import and cryptographic exchanges,
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
const list = (item: Schema): Schema => {
  const page = obj({
    items: { type: 'array', items: item },
    nextCursor: { type: ['string', 'null'], description: 'pass as `cursor` for the next page' },
  });
  const example = (item.examples as unknown[] | undefined)?.[0];
  return example === undefined ? page : withExample(page, { items: [example], nextCursor: null });
};

// Example values, the same across operations so the examples read as one story.
const TENANT_ID = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';
const OTHER_TENANT_ID = '9b1d7c2e-0a4f-4e5b-8c6d-1f2a3b4c5d6e';
const AT = '2026-11-23T16:00:00.000Z';

const KeyState = { enum: ['active', 'suspended', 'revoked', 'archived'] };
const KEY_EXAMPLE = {
  kid: 'orders-db',
  type: 'aes-256',
  usage: 'encrypt',
  usages: ['encrypt'],
  allowedUsages: ['encrypt'],
  state: 'active',
  currentVersion: 3,
  source: 'generated',
  createdAt: '2026-01-05T09:00:00.000Z',
  updatedAt: '2026-11-23T16:00:00.000Z',
  description: 'orders database column encryption',
  rotationPeriodDays: 90,
  rotationPeriodFrom: 'key',
  nextRotationAt: '2027-02-21T16:00:00.000Z',
  lastRotatedAt: '2026-11-23T16:00:00.000Z',
  minDecryptionVersion: 2,
};
const Key = withExample(
  obj(
    {
      kid: str,
      type: {
        type: 'string',
        description:
          'aes-128, aes-256, hmac-sha256/384/512 (usage mac), rsa-2048/3072/4096, rsa-pss-2048/3072/4096 (id-RSASSA-PSS keys: sign only, PS256/384/512, only the PS* of the hash their parameters bind them to), ec-p256/p384/p521, ed25519, ed448, x25519/x448 (receive CMS key agreement only, no JWE), ml-kem-768/1024, ml-dsa-44/65/87, slh-dsa-*, x25519-ml-kem-768',
      },
      usage: {
        enum: ['encrypt', 'sign', 'mac', 'verify'],
        description:
          "the key's one usage where only one can be named (a JWK's use, AWS KMS KeyUsage, listings): the type's default when enabled, else the first of `usages`. verify: a certificate imported without its private key (an outside signer, or a CA as trust anchor); it only verifies CMS signers and is never used to sign or decrypt",
      },
      usages: {
        type: 'array',
        items: { enum: ['encrypt', 'sign', 'mac', 'verify'] },
        description:
          'what the key may do now; every operation checks it (422 key-usage-mismatch otherwise). An imported key pair starts with every usage its certificate allows; PATCH usages changes it within allowedUsages',
      },
      allowedUsages: {
        type: 'array',
        items: { enum: ['encrypt', 'sign', 'mac', 'verify'] },
        description:
          "what the key may ever do: for an imported key pair, what its certificate's keyUsage/extendedKeyUsage allow of what its type does (everything the type does when the certificate has neither extension); for other keys, its one usage",
      },
      state: KeyState,
      currentVersion: { type: 'integer' },
      source: { enum: ['generated', 'imported', 'exchange'] },
      createdAt: time,
      updatedAt: time,
      publicKey: {
        type: 'object',
        description:
          'public JWK of the current version (asymmetric keys only), `kid` "<kid>#<version>"; never private or secret material. Every retained version: GET .../keys/{kid}/public',
      },
      description: { type: ['string', 'null'], maxLength: 500 },
      rotationPeriodDays: {
        type: ['integer', 'null'],
        minimum: 1,
        maximum: 3650,
        description:
          "the effective automatic rotation period: the key's own, else the tenant's effective policy (see rotationPeriodFrom); null for keys that do not rotate (imported or exchanged)",
      },
      rotationPeriodFrom: {
        enum: ['key', 'policy', null],
        description: 'where rotationPeriodDays comes from',
      },
      nextRotationAt: {
        type: ['string', 'null'],
        format: 'date-time',
        description:
          'when the scheduler rotates the key (last rotation or creation plus the period); null unless the key is generated and active',
      },
      lastRotatedAt: { type: ['string', 'null'], format: 'date-time' },
      minDecryptionVersion: {
        type: 'integer',
        minimum: 1,
        description:
          'versions below it no longer decrypt or verify (409 key-version-retired) and are kept; lowering it restores them',
      },
      archiveSigning: {
        type: 'boolean',
        description:
          "the tenant's default archive signing key: it signs the JWS of a SignedData conversion without signerKid, whoever the CMS signers are (contract 10); one key per tenant",
      },
      trustAnchor: {
        type: 'boolean',
        description: 'a verify-only certificate that verify: chain validates CMS signers to',
      },
    },
    ['kid', 'type', 'usage', 'state', 'currentVersion', 'source'],
  ),
  KEY_EXAMPLE,
);
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
const Exchange = withExample(
  obj(
    {
      id: uuid,
      direction: {
        enum: ['outgoing', 'incoming'],
        description: 'relative to the tenant of the path',
      },
      fromTenantId: uuid,
      toTenantId: uuid,
      kid: { type: 'string', description: 'the offered key in the offering tenant' },
      version: { type: 'integer' },
      type: str,
      usage: str,
      mode: { enum: ['public', 'wrapped'] },
      wrappingKid: { type: ['string', 'null'] },
      state: {
        enum: ['pending', 'accepted', 'rejected', 'cancelled', 'expired'],
        description:
          'cancelled: withdrawn by the offering tenant, or by suspending or revoking the offered key',
      },
      publicKeySha256: {
        type: ['string', 'null'],
        description: 'base64url SHA-256 of the public key (SPKI DER) to compare out of band',
      },
      hasCertificate: { type: 'boolean' },
      createdAt: time,
      expiresAt: time,
      decidedAt: { type: ['string', 'null'], format: 'date-time' },
      acceptedKid: { type: ['string', 'null'], description: 'receiving tenant only' },
    },
    ['id', 'direction', 'fromTenantId', 'toTenantId', 'kid', 'mode', 'state', 'expiresAt'],
  ),
  {
    id: 'e5f6a7b8-c9d0-4e1f-8a2b-3c4d5e6f7a8b',
    direction: 'outgoing',
    fromTenantId: TENANT_ID,
    toTenantId: OTHER_TENANT_ID,
    kid: 'release-signing',
    version: 2,
    type: 'ec-p256',
    usage: 'sign',
    mode: 'public',
    wrappingKid: null,
    state: 'pending',
    publicKeySha256: 'n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg',
    hasCertificate: false,
    createdAt: AT,
    expiresAt: '2026-11-24T16:00:00.000Z',
    decidedAt: null,
    acceptedKid: null,
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
// Every admin JSON body refuses members it does not know (400 validation-failed naming the member, contract 8).
const closed = (schema: Schema): Schema =>
  schema.properties ? { ...schema, additionalProperties: false } : schema;
const body = (schema: Schema, example?: unknown) => ({
  required: true,
  content: {
    'application/json': { schema: closed(schema), ...(example === undefined ? {} : { example }) },
  },
});
const optionalBody = (schema: Schema) => ({
  required: false,
  content: { 'application/json': { schema: closed(schema) } },
});
const PATH_EXAMPLES: Record<string, string> = {
  tenantId: TENANT_ID,
  kid: 'orders-db',
  id: '0d4e6f8a-1b3c-4d5e-8f9a-0b1c2d3e4f5a',
  operationId: 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f',
};
const path = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  schema: name === 'kid' ? str : uuid,
  description,
  example: PATH_EXAMPLES[name],
});
const query = (name: string, schema: Schema, description: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  description,
});
const PAGE = [
  query('limit', { type: 'integer', minimum: 1, maximum: 500, default: 100 }, 'page size'),
  query('cursor', str, 'nextCursor of the previous page'),
];
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
const EXID = path('id', 'the exchange id');

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

const EX = `${T}/cryptographic-exchanges`;
const exchangeStep = (action: string, summary: string, extra: Partial<Op> = {}) => ({
  [`${EX}/{id}/${action}`]: {
    post: op('cryptographic-exchanges', {
      id: `${action}Exchange`,
      summary,
      permission: `admin.cryptographicexchange.${action}`,
      parameters: [TENANT, EXID],
      responses: { 200: ok('the exchange', Exchange) },
      requestBody: optionalBody(obj({ reason: { type: 'string', maxLength: 200 } }, [])),
      errors: [404, 409, 410, 415],
      errorText: {
        403: "missing permission, another tenant's path, or the wrong side of the exchange",
        409: 'exchange-not-pending',
        410: 'exchange-expired',
      },
      ...extra,
    }),
  },
});

const exchanges = {
  [EX]: {
    get: op('cryptographic-exchanges', {
      id: 'listExchanges',
      summary: 'Exchanges where this tenant is either side',
      permission: 'admin.cryptographicexchange.read',
      parameters: [
        TENANT,
        query('direction', { enum: ['incoming', 'outgoing'] }, 'one side only'),
        query(
          'state',
          { enum: ['pending', 'accepted', 'rejected', 'cancelled', 'expired'] },
          'only this state',
        ),
        ...PAGE,
      ],
      responses: { 200: ok('exchanges', list(Exchange)) },
      errors: [400],
    }),
    post: op('cryptographic-exchanges', {
      id: 'createExchange',
      summary: 'Offer the current version of a key to another tenant',
      permission: 'admin.cryptographicexchange.create',
      parameters: [TENANT],
      description:
        "mode public copies only the public key (the receiver can verify or encrypt); mode wrapped encrypts a copy of the material inside the service as a JWE to `wrappingKid`, an active AES, RSA or EC encrypt key of the receiver. The material is never in a response. Offers expire (default 24 h). The answer tells nothing of the receiver's keys: it is the same whether or not `wrappingKid` names a usable key (when it does not, nothing is wrapped and acceptance answers why) and whether or not the receiver already has a key with this kid (acceptance answers that conflict). Suspending or revoking the offered key cancels its pending offers.",
      requestBody: body(
        obj(
          {
            kid: str,
            toTenantId: uuid,
            mode: { enum: ['public', 'wrapped'] },
            wrappingKid: str,
            expiresInSeconds: { type: 'integer', minimum: 60, maximum: 2592000, default: 86400 },
          },
          ['kid', 'toTenantId', 'mode'],
        ),
      ),
      responses: { 201: ok('the offer', Exchange) },
      errors: [400, 404, 409, 415, 422],
      errorText: {
        404: 'key-not-found (a key of this tenant)',
        409: 'key-suspended or key-revoked',
        422: 'key-usage-mismatch: a symmetric key offered public',
      },
    }),
  },
  [`${EX}/{id}`]: {
    get: op('cryptographic-exchanges', {
      id: 'getExchange',
      summary: 'Read an exchange',
      permission: 'admin.cryptographicexchange.read',
      parameters: [TENANT, EXID],
      responses: { 200: ok('the exchange', Exchange) },
      errors: [404],
    }),
  },
  ...exchangeStep(
    'accept',
    'Accept an offer (receiving tenant): the key is created here with source exchange',
    {
      requestBody: optionalBody(
        obj(
          {
            kid: {
              type: 'string',
              pattern: '^[A-Za-z0-9._:-]{1,128}$',
              description: 'default exchange-{id}',
            },
          },
          [],
        ),
      ),
      responses: { 200: ok('the exchange and the new key', obj({ exchange: Exchange, key: Key })) },
      errors: [400, 404, 409, 410, 415, 422],
      errorText: {
        403: "missing permission, another tenant's path, or not the receiving tenant",
        404: 'no such exchange, or key-not-found: the wrappingKid of a wrapped offer names no key here',
        409: 'exchange-not-pending; conflict: the kid exists, or the offer was made for a wrappingKid that was not an active encrypt key here (nothing was wrapped); key-suspended or key-revoked: the wrapping key, or the offered key in the offering tenant (re-read under its row lock: nothing is delivered unless it is active)',
        410: 'exchange-expired',
        422: 'policy-violation, or the wrapped payload does not open',
      },
    },
  ),
  ...exchangeStep('reject', 'Reject an offer (receiving tenant)'),
  ...exchangeStep('cancel', 'Withdraw an offer (offering tenant)'),
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

export const adminPaths = { ...keys, ...exchanges, ...legacy };
