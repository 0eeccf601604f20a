/**
 * The contract of the runtime operations: the answer of encrypt, decrypt,
 * sign, verify, the data keys, re-encrypt and random, with their examples and problems, declared
 * once and shared by the rows that serve them (api/routes/v3/crypto/operations.ts, the PQC and
 * legacy paths); their request is the body schema the route checks (api/services/crypto/
 * bodies.ts). The OpenAPI operation is generated from both (api/openapi/endpoints.ts). Each
 * takes a single request or a batch `{items: [...]}` of up to 1000, answered `{results: [...]}`
 * in order, each result its own status. Unknown JSON members answer 400 naming the member.
 */
export type Schema = Record<string, unknown>;

export const str = { type: 'string' };
export const base64 = (description: string): Schema => ({
  type: 'string',
  contentEncoding: 'base64',
  description,
});
export const int = { type: 'integer', minimum: 1 };
const jwe = {
  type: 'string',
  pattern: '^[\\w-]+\\.[\\w-]*\\.[\\w-]+\\.[\\w-]+\\.[\\w-]+$',
  description:
    'compact JWE (RFC 7516); its protected header names `kid` "<kid>#<version>" and `ver`, and `ctx` when a context is bound',
};
export const obj = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
  additionalProperties: false,
});
export const COMMON = {
  401: 'missing, invalid or expired bearer token, or the wrong audience',
  403: 'the role lacks the permission',
  413: 'the body is over JSON_LIMIT_BYTES (64 KiB by default); use the stream endpoints for large data',
  415: 'not application/json',
  429: 'rate limit reached; see Retry-After',
};
const KEY_PROBLEMS = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended, key-pending-deletion or key-revoked: the key is not active',
  422: "key-usage-mismatch: the key's usage or type does not allow this operation",
};

/** What documents one runtime operation. */
export interface OperationDoc {
  id: string;
  summary: string;
  permission: string;
  description: string;
  response: Schema;
  example: unknown;
  answer: unknown;
  problems: Record<number, string>;
  tag?: string;
  common?: Record<number, string>;
  /** The operation decrypts content: the generated oracle test drives it (x-keyward-decrypts). */
  decrypts?: boolean;
}

const CT =
  'eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoib3JkZXJzIzIiLCJ2ZXIiOjJ9..2e3Zq0CNqjNyrEgc.X2Vi1w.G9tU0v5pC2m6x-ZlKq3mCw';
const CTX = { tenant: 'acme', purpose: 'invoices' };
const DECRYPTION = {
  400: 'validation-failed (bad base64, context, or an unknown member) or decryption-failed (opaque: a wrong context, a tampered or foreign ciphertext)',
  404: KEY_PROBLEMS[404],
  409: "key-suspended, key-pending-deletion, key-revoked, or key-version-retired: the version is below the key's minDecryptionVersion",
  422: KEY_PROBLEMS[422],
};
const dataKeyAnswer = {
  kid: 'orders',
  version: 2,
  plaintext: 'q1N4ve3m3Mmw0Q2oLr7H8wJ0Xk3c1S0b3mXyq3M5c8E=',
  ciphertext: CT,
};

/** Answers are not closed: a member may be added without breaking a client. */
const res = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});
const KEY = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended, key-pending-deletion or key-revoked: the key is not active',
};
const MAC = 'q8v3Jb2ZK0e5bJY3m8C1dGvJmX0cQ4mJ7dBqkq0vJ5E=';
const macAlg = {
  enum: ['HS256', 'HS384', 'HS512'],
  description: 'HMAC with SHA-256, SHA-384 or SHA-512 (RFC 7518 section 3.2)',
};

/** The contract of each runtime operation by path segment; the PQC and legacy paths reuse some. */
export const RUNTIME_OPERATIONS = {
  encrypt: {
    id: 'encrypt',
    summary: "Encrypt data to a compact JWE under the key's current version",
    permission: '`crypto.encrypt`',
    description:
      'AES keys use dir/A128GCM or A256GCM, RSA keys RSA-OAEP-256, EC keys ECDH-ES+A256KW, each with A256GCM content.',
    response: obj({ kid: str, version: int, ciphertext: jwe }),
    example: { kid: 'orders', data: 'YXR0YWNrIGF0IGRhd24=', context: CTX },
    answer: { kid: 'orders', version: 2, ciphertext: CT },
    problems: {
      400: 'validation-failed: bad base64, a bad context, or an unknown member (e.g. `aad`)',
      ...KEY_PROBLEMS,
    },
  },
  decrypt: {
    id: 'decrypt',
    summary: 'Decrypt a compact JWE with the key version its header names',
    permission: '`crypto.decrypt`',
    decrypts: true,
    description:
      "Any retained version at or above the key's minDecryptionVersion decrypts; headers naming `kid` without `#` plus `ver` (older ciphertexts) are accepted. Failed decryptions count against the caller's decryption-failure budget on the key (DECRYPT_FAILURE_BUDGET per DECRYPT_FAILURE_WINDOW_SECONDS, shared with conversion, stream re-encrypt and jobs): past it every decryption with the key answers 429 with Retry-After until the window ends.",
    response: obj({ kid: str, version: int, data: base64('the plaintext') }),
    example: { ciphertext: CT, context: CTX },
    answer: { kid: 'orders', version: 2, data: 'YXR0YWNrIGF0IGRhd24=' },
    problems: DECRYPTION,
  },
  sign: {
    id: 'sign',
    summary: 'Sign data, or a precomputed digest (AWS KMS Sign)',
    permission: '`crypto.sign`',
    description:
      "Exactly one of `data` and `digest`; `algorithm` defaults to the key's JWS algorithm.",
    response: obj({
      kid: str,
      version: int,
      algorithm: str,
      signature: base64('the raw signature'),
    }),
    example: { kid: 'release-signing', data: 'YXR0YWNrIGF0IGRhd24=' },
    answer: {
      kid: 'release-signing',
      version: 1,
      algorithm: 'ES256',
      signature:
        'MEUCIQDx1oTqJ0sQk9yR5y0lWq3ZP9lq1uP4GxM5yQbQ0rj1rAIgS3b7w1V0B9m0c0Zp1WzH8q4mPp4uYQm1lqv7w6G3d0Q=',
    },
    problems: {
      400: 'validation-failed: neither or both of data and digest, a digest of the wrong length, an unknown algorithm or member',
      ...KEY_PROBLEMS,
    },
  },
  verify: {
    id: 'verify',
    summary: 'Verify a signature with any retained version (newest first), or the one named',
    permission: '`crypto.verify`',
    description:
      'A wrong signature is `valid: false` (200), not a problem. Versions below minDecryptionVersion are not tried; naming one is key-version-retired.',
    response: obj({ kid: str, version: int, valid: { type: 'boolean' } }, ['kid', 'valid']),
    example: {
      kid: 'release-signing',
      data: 'YXR0YWNrIGF0IGRhd24=',
      signature:
        'MEUCIQDx1oTqJ0sQk9yR5y0lWq3ZP9lq1uP4GxM5yQbQ0rj1rAIgS3b7w1V0B9m0c0Zp1WzH8q4mPp4uYQm1lqv7w6G3d0Q=',
    },
    answer: { kid: 'release-signing', version: 1, valid: true },
    problems: {
      400: 'validation-failed: bad base64, neither or both of data and digest, an unknown member',
      404: KEY_PROBLEMS[404],
      409: 'key-suspended, key-pending-deletion, key-revoked or key-version-retired',
      422: KEY_PROBLEMS[422],
    },
  },
  'generate-data-key': {
    id: 'generateDataKey',
    summary:
      'A fresh data key for envelope encryption, in clear and wrapped under kid (AWS KMS GenerateDataKey)',
    permission: '`crypto.generate-data-key`',
    description:
      'Encrypt locally with `plaintext` (e.g. JWE dir/A256GCM), drop it, keep `ciphertext` with the data; later `/decrypt` it (with the same context) to get the data key back.',
    response: obj({
      kid: str,
      version: int,
      plaintext: base64('the data key (16 or 32 bytes)'),
      ciphertext: jwe,
    }),
    example: { kid: 'orders', keySpec: 'AES_256', context: CTX },
    answer: dataKeyAnswer,
    problems: {
      400: 'validation-failed: a keySpec not in the list, a bad context, an unknown member',
      ...KEY_PROBLEMS,
    },
  },
  'generate-data-key-without-plaintext': {
    id: 'generateDataKeyWithoutPlaintext',
    summary: 'A fresh data key, wrapped under kid only',
    permission: '`crypto.generate-data-key`',
    description:
      'For a component that stores the wrapped key for another one to open later with `/decrypt`.',
    response: obj({ kid: str, version: int, ciphertext: jwe }),
    example: { kid: 'orders', keySpec: 'AES_128' },
    answer: { kid: 'orders', version: 2, ciphertext: CT },
    problems: {
      400: 'validation-failed: a keySpec not in the list, a bad context, an unknown member',
      ...KEY_PROBLEMS,
    },
  },
  're-encrypt': {
    id: 'reEncrypt',
    summary:
      "Re-encrypt a ciphertext under the key's newest version or another key, without the plaintext leaving the service (AWS ReEncrypt, Vault rewrap)",
    permission: '`crypto.decrypt` and `crypto.encrypt`',
    decrypts: true,
    description:
      "The target defaults to the source key's current version, and `targetContext` to `context`. The target key is checked before anything is decrypted. Failed decryptions count against the caller's decryption-failure budget on the source key (429 past it).",
    response: obj({ kid: str, version: int, ciphertext: jwe, sourceKid: str, sourceVersion: int }),
    example: { ciphertext: CT, context: CTX, targetKid: 'orders-2027' },
    answer: {
      kid: 'orders-2027',
      version: 1,
      ciphertext: CT,
      sourceKid: 'orders',
      sourceVersion: 2,
    },
    problems: {
      ...DECRYPTION,
      404: "key-not-found: the source or target kid is not in the token's tenant",
      422: 'key-usage-mismatch: the target key does not encrypt',
    },
  },
  random: {
    id: 'random',
    summary: "Random bytes from the service's CSPRNG",
    permission: '`crypto.generate-data-key`',
    description: "From node:crypto randomBytes (OpenSSL's DRBG).",
    response: obj({ data: base64('the random bytes') }),
    example: { bytes: 32 },
    answer: { data: 'sM3q3Hq8ZrQ3n0zvJx9m4G2f3b2c0q1Yw4wP3Vx6b7A=' },
    problems: {
      400: 'validation-failed: bytes not an integer from 1 to 1024, or an unknown member',
    },
  },
  'generate-mac': {
    id: 'generateMac',
    summary: "Compute an HMAC of data with the key's current version (AWS KMS GenerateMac)",
    permission: '`crypto.sign`',
    description:
      'The key must have usage `mac` (types hmac-sha256, hmac-sha384, hmac-sha512); the MAC is the full hash output (32, 48 or 64 bytes).',
    response: res({ kid: str, version: int, algorithm: macAlg, mac: base64('the MAC') }),
    example: { kid: 'webhook-mac', data: 'YXR0YWNrIGF0IGRhd24=' },
    answer: { kid: 'webhook-mac', version: 1, algorithm: 'HS256', mac: MAC },
    problems: {
      400: 'validation-failed: bad base64 or an unknown member',
      ...KEY,
      422: "key-usage-mismatch: the key's usage is not mac",
    },
  },
  'verify-mac': {
    id: 'verifyMac',
    summary:
      'Verify an HMAC with any retained version, newest first, or the one named (AWS KMS VerifyMac)',
    permission: '`crypto.verify`',
    description:
      "Each version is checked with one constant-time comparison of the full MAC. A wrong MAC is `valid: false` (200); a MAC of the wrong length (a truncated one, say) is a 400, never compared. Versions below the key's minDecryptionVersion are not tried; naming one is key-version-retired.",
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
      409: 'key-suspended, key-pending-deletion, key-revoked or key-version-retired',
      422: "key-usage-mismatch: the key's usage is not mac",
    },
  },
} satisfies Record<string, OperationDoc>;
