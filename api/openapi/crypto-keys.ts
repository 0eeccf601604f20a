/**
 * OpenAPI paths of the MAC operations, the key list and the per-version public keys (contract 8):
 * generate-mac and verify-mac (HMAC keys, usage `mac`), GET /api/v3/crypto/keys and /keys/{kid} for
 * workloads (`service-core` token, the token's tenant); the admin `/public` view of the same is a
 * route row (api/routes/v3/admin/tenants/keys.ts).
 * A public JWK's `kid` is `<kid>#<version>`, the name the service's JWS and JWE headers give that
 * version, so a verifier picks the key a signature was made with.
 */
import { PAGE_PARAMETERS, jsonResponse, pageOf, problems, withExample } from './components.ts';
import { base64, int, kid, obj, operation, str, type Schema } from './crypto.ts';

/** Answers are not closed: a member may be added without breaking a client (batch results add `status`). */
const res = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});
const COMMON = {
  401: 'missing, invalid or expired bearer token, or the wrong audience',
  403: 'the role lacks the permission',
};
const BODY = {
  413: 'the body is over JSON_LIMIT_BYTES (64 KiB by default)',
  415: 'not application/json',
  429: 'rate limit reached; see Retry-After',
};
const KEY = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended or key-revoked: the key is not active',
};

const MAC = 'q8v3Jb2ZK0e5bJY3m8C1dGvJmX0cQ4mJ7dBqkq0vJ5E=';
const macAlg = {
  enum: ['HS256', 'HS384', 'HS512'],
  description: 'HMAC with SHA-256, SHA-384 or SHA-512 (RFC 7518 section 3.2)',
};

const Jwk = {
  type: 'object',
  required: ['kty', 'kid'],
  properties: {
    kty: { enum: ['RSA', 'EC', 'OKP', 'AKP'] },
    kid: { type: 'string', description: '`<kid>#<version>`' },
    use: { enum: ['sig', 'enc'] },
    alg: { type: 'string', description: 'the default JOSE algorithm of the key, where it has one' },
  },
  description:
    'public members only (RFC 7517, 7518, 8037; AKP for ML-KEM, ML-DSA, SLH-DSA and X-Wing): never d, p, q, dp, dq, qi, priv or k',
};
const PublicKeys = res({
  kid: str,
  type: str,
  usage: { enum: ['encrypt', 'sign'] },
  state: { enum: ['active', 'suspended', 'revoked', 'archived'] },
  currentVersion: int,
  minDecryptionVersion: {
    ...int,
    description:
      'versions below it are no longer shown: nothing they made verifies or decrypts any more',
  },
  versions: {
    type: 'array',
    description: 'every retained version, oldest first',
    items: res({
      version: int,
      jwk: Jwk,
      pem: {
        type: ['string', 'null'],
        description:
          'SPKI PEM (RFC 5280 section 4.1.2.7); null for the X-Wing hybrid, which has no SPKI form',
      },
    }),
  },
});
const publicExample = {
  kid: 'release-signing',
  type: 'ec-p256',
  usage: 'sign',
  state: 'active',
  currentVersion: 2,
  minDecryptionVersion: 1,
  versions: [
    {
      version: 1,
      jwk: {
        kty: 'EC',
        crv: 'P-256',
        x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
        y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
        kid: 'release-signing#1',
        use: 'sig',
        alg: 'ES256',
      },
      pem: '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEf83OJ3D2xF1Bg8vub9tLe1gHMzV7\n6e8Tus9uPHvRVEXH8UTNG72bfocs3+257rn0s2ldbqkLJK2KRiMohYjlrQ==\n-----END PUBLIC KEY-----\n',
    },
    {
      version: 2,
      jwk: {
        kty: 'EC',
        crv: 'P-256',
        x: 'gI0GAILBdu7T53akrFmMyGcsF3n5dO7MmwNBHKW5SV0',
        y: 'SLW_xSffzlPWrHEVI30DHM_4egVwt3NQqeUD7nMFpps',
        kid: 'release-signing#2',
        use: 'sig',
        alg: 'ES256',
      },
      pem: '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgI0GAILBdu7T53akrFmMyGcsF3n5\ndO7MmwNBHKW5SV1Itb/FJ9/OU9ascRUjfQMcz/h6BXC3c1Cp5QPucwWmmw==\n-----END PUBLIC KEY-----\n',
    },
  ],
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

const PUBLIC_ERRORS = {
  404: 'key-not-found: no such kid in this tenant',
  422: 'key-usage-mismatch: a symmetric key (AES, HMAC) has no public key',
};
const KID_PARAM = {
  name: 'kid',
  in: 'path',
  required: true,
  schema: kid,
  description: 'the key identifier',
};

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
  '/api/v3/crypto/keys': {
    get: {
      tags: ['crypto'],
      operationId: 'listUsableKeys',
      summary: "The tenant's usable keys (active and suspended), by kid",
      description:
        "Requires `crypto.keys.read`; the token's tenant. Metadata only; revoked and archived keys are left out because nothing at runtime can use them.",
      parameters: PAGE_PARAMETERS,
      responses: {
        200: jsonResponse('a page of keys', pageOf(KeyView)),
        ...problems({ 400: 'validation-failed: a bad limit or cursor', ...COMMON, 429: BODY[429] }),
      },
    },
  },
  '/api/v3/crypto/keys/{kid}': {
    get: {
      tags: ['crypto'],
      operationId: 'getPublicKeys',
      summary: "Every retained version's public key, as JWK and PEM",
      description:
        "Requires `crypto.keys.read`; the token's tenant. Active and suspended keys; a revoked or archived key answers key-revoked, like any runtime use.",
      parameters: [KID_PARAM],
      responses: {
        200: {
          description: 'the public keys',
          content: { 'application/json': { schema: PublicKeys, example: publicExample } },
        },
        ...problems({
          ...PUBLIC_ERRORS,
          409: 'key-revoked: the key is revoked or archived',
          ...COMMON,
          429: BODY[429],
        }),
      },
    },
  },
};
