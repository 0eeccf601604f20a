/**
 * What the runtime operation rows share across their paths (/api/v3/crypto, the PQC API and the
 * legacy /api/crypto): per operation, its item schema (api/services/crypto/bodies.ts), its answer
 * as a TypeBox schema, its examples and problems; and `operationRow`, which makes a row of one
 * at a path, with the access, budget and handler the route file gives. Each row takes a single
 * request or a batch `{items: [...]}` of up to 1000, answered `{results: [...]}` in order
 * (api/rows/endpoint.ts `batch`). Unknown JSON members answer 400 naming the member.
 *
 * Tests: test/integration/core/crypto.test.ts, test/integration/http/lane-parity.test.ts
 */
import Type, { type Static, type TObject, type TSchema } from 'typebox';
import { endpoint, type Access, type Endpoint } from '../../rows/endpoint.ts';
import type { AppContext } from '../../context.ts';
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
} from '../../services/crypto/bodies.ts';

/** A string member of an answer. */
export const Str = () => Type.String();
/** A base64 member of an answer. */
export const Base64Answer = (description: string) =>
  Type.String({ contentEncoding: 'base64', description });
/** A key version in an answer. */
export const VersionAnswer = (description?: string) =>
  Type.Integer({ minimum: 1, ...(description ? { description } : {}) });
const Jwe = () =>
  Type.String({
    pattern: '^[\\w-]+\\.[\\w-]*\\.[\\w-]+\\.[\\w-]+\\.[\\w-]+$',
    description:
      'compact JWE (RFC 7516); its protected header names `kid` "<kid>#<version>" and `ver`, and `ctx` when a context is bound',
  });
/** A closed answer: nothing but these members. */
export const Answer = <P extends Parameters<typeof Type.Object>[0]>(properties: P) =>
  Type.Object(properties, { additionalProperties: false });
/** An open answer: a member may be added without breaking a client. */
const OpenAnswer = <P extends Parameters<typeof Type.Object>[0]>(properties: P) =>
  Type.Object(properties);

/** The problems every runtime operation may answer (a legacy one: LEGACY_COMMON). */
export const COMMON = {
  401: 'missing, invalid or expired bearer token, or the wrong audience',
  403: 'the role lacks the permission',
  413: 'the body is over JSON_LIMIT_BYTES (64 KiB by default); use the stream endpoints for large data',
  415: 'not application/json',
  429: 'rate limit reached; see Retry-After',
};
/**
 * The problems of a legacy operation: a missing role is 401, never 403, and the
 * legacy API has no rate limit of its own.
 */
export const LEGACY_COMMON = {
  401: 'missing or invalid legacy bearer token, or the token lacks the legacy role (insufficient_scope)',
  413: COMMON[413],
  415: COMMON[415],
};
const KEY_PROBLEMS = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended, key-pending-deletion or key-revoked: the key is not active',
  422: "key-usage-mismatch: the key's usage or type does not allow this operation",
};

/** What one runtime operation takes, answers and may refuse, whatever path serves it. */
export interface OperationContract<B extends TObject = TObject, R extends TSchema = TSchema> {
  summary: string;
  description: string;
  /** One item: the batch form is derived from it. */
  body: B;
  /** The answer to one item. */
  answer: R;
  examples: { request: unknown; answer: unknown };
  problems: Readonly<Record<number, string>>;
  /** The operation decrypts content: the generated oracle test drives it (x-keyward-decrypts). */
  decrypts?: true;
}

const contract = <B extends TObject, R extends TSchema>(c: OperationContract<B, R>) => c;

const CT =
  'eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoib3JkZXJzIzIiLCJ2ZXIiOjJ9..2e3Zq0CNqjNyrEgc.X2Vi1w.G9tU0v5pC2m6x-ZlKq3mCw';
const CTX = { tenant: 'acme', purpose: 'invoices' };
const DECRYPTION = {
  400: 'validation-failed (bad base64, context, or an unknown member) or decryption-failed (opaque: a wrong context, a tampered or foreign ciphertext)',
  404: KEY_PROBLEMS[404],
  409: "key-suspended, key-pending-deletion, key-revoked, or key-version-retired: the version is below the key's minDecryptionVersion",
  422: KEY_PROBLEMS[422],
};
const KEY = {
  404: "key-not-found: no such kid in the token's tenant",
  409: 'key-suspended, key-pending-deletion or key-revoked: the key is not active',
};
const MAC = 'q8v3Jb2ZK0e5bJY3m8C1dGvJmX0cQ4mJ7dBqkq0vJ5E=';
const SIGNATURE =
  'MEUCIQDx1oTqJ0sQk9yR5y0lWq3ZP9lq1uP4GxM5yQbQ0rj1rAIgS3b7w1V0B9m0c0Zp1WzH8q4mPp4uYQm1lqv7w6G3d0Q=';
const MAC_ALGORITHM = Type.Unsafe<'HS256' | 'HS384' | 'HS512'>({
  enum: ['HS256', 'HS384', 'HS512'],
  description: 'HMAC with SHA-256, SHA-384 or SHA-512 (RFC 7518 section 3.2)',
});

export const EncryptAnswer = Answer({ kid: Str(), version: VersionAnswer(), ciphertext: Jwe() });
export const DecryptAnswer = Answer({
  kid: Str(),
  version: VersionAnswer(),
  data: Base64Answer('the plaintext'),
});
export const SignAnswer = Answer({
  kid: Str(),
  version: VersionAnswer(),
  algorithm: Str(),
  signature: Base64Answer('the raw signature'),
  jws: Type.Optional(
    Type.String({
      pattern: '^[\\w-]+\\.[\\w-]*\\.[\\w-]+$',
      description:
        'with output jws: the compact JWS of data (RFC 7515; alg as `algorithm`, such as ML-DSA-65 of RFC 9964, kid "<kid>#<version>")',
    }),
  ),
});
export const VerifyAnswer = Answer({
  kid: Str(),
  version: Type.Optional(VersionAnswer()),
  valid: Type.Boolean(),
  header: Type.Optional(
    Answer({
      alg: Str(),
      kid: Type.Optional(Str()),
    }),
  ),
});
export const DataKeyAnswer = Answer({
  kid: Str(),
  version: VersionAnswer(),
  plaintext: Base64Answer('the data key (16 or 32 bytes)'),
  ciphertext: Jwe(),
});
const WrappedDataKeyAnswer = EncryptAnswer;
export const ReEncryptAnswer = Answer({
  kid: Str(),
  version: VersionAnswer(),
  ciphertext: Jwe(),
  sourceKid: Str(),
  sourceVersion: VersionAnswer(),
});
export const RandomAnswer = Answer({ data: Base64Answer('the random bytes') });
export const MacAnswer = OpenAnswer({
  kid: Str(),
  version: VersionAnswer(),
  algorithm: MAC_ALGORITHM,
  mac: Base64Answer('the MAC'),
});
export const VerifyMacAnswer = OpenAnswer({
  kid: Str(),
  version: Type.Optional(VersionAnswer('the version that matched; absent when none did')),
  valid: Type.Boolean(),
});

/** The contract of each runtime operation by path segment; the PQC and legacy paths reuse some. */
export const OPERATIONS = {
  encrypt: contract({
    summary: "Encrypt data to a compact JWE under the key's current version",
    description:
      'AES keys use dir/A128GCM or A256GCM, RSA keys RSA-OAEP-256, EC keys ECDH-ES+A256KW, each with A256GCM content.',
    body: EncryptBody,
    answer: EncryptAnswer,
    examples: {
      request: { kid: 'orders', data: 'YXR0YWNrIGF0IGRhd24=', context: CTX },
      answer: { kid: 'orders', version: 2, ciphertext: CT },
    },
    problems: {
      400: 'validation-failed: bad base64, a bad context, or an unknown member (e.g. `aad`)',
      ...KEY_PROBLEMS,
    },
  }),
  decrypt: contract({
    summary: 'Decrypt a compact JWE with the key version its header names',
    decrypts: true,
    description:
      "Any retained version at or above the key's minDecryptionVersion decrypts; headers naming `kid` without `#` plus `ver` (older ciphertexts) are accepted. Failed decryptions count against the caller's decryption-failure budget on the key (DECRYPT_FAILURE_BUDGET per DECRYPT_FAILURE_WINDOW_SECONDS, shared with conversion, stream re-encrypt and jobs): past it every decryption with the key answers 429 with Retry-After until the window ends.",
    body: DecryptBody,
    answer: DecryptAnswer,
    examples: {
      request: { ciphertext: CT, context: CTX },
      answer: { kid: 'orders', version: 2, data: 'YXR0YWNrIGF0IGRhd24=' },
    },
    problems: DECRYPTION,
  }),
  sign: contract({
    summary: 'Sign data, or a precomputed digest (AWS KMS Sign)',
    description:
      "Exactly one of `data` and `digest`; `algorithm` defaults to the key's JWS algorithm.",
    body: SignBody,
    answer: SignAnswer,
    examples: {
      request: { kid: 'release-signing', data: 'YXR0YWNrIGF0IGRhd24=' },
      answer: { kid: 'release-signing', version: 1, algorithm: 'ES256', signature: SIGNATURE },
    },
    problems: {
      400: 'validation-failed: neither or both of data and digest, a digest of the wrong length, an unknown algorithm or member, output jws with a digest',
      ...KEY_PROBLEMS,
    },
  }),
  verify: contract({
    summary: 'Verify a signature with any retained version (newest first), or the one named',
    description:
      "A wrong signature is `valid: false` (200), not a problem. Versions below minDecryptionVersion are not tried; naming one is key-version-retired. With `jws` (a compact JWS, as `/sign` with `output: \"jws\"` answers it) the JWS is verified instead: a valid one answers `header`, its protected header's `alg` and `kid`; a JWS whose `alg` the key does not sign with, whose `kid` is not the key's (another key's or another tenant's), or with a `crit` header is `valid: false`, the same answer as a wrong signature. A key imported to verify only (a certificate or public JWK without its private key) verifies too.",
    body: VerifyBody,
    answer: VerifyAnswer,
    examples: {
      request: { kid: 'release-signing', data: 'YXR0YWNrIGF0IGRhd24=', signature: SIGNATURE },
      answer: { kid: 'release-signing', version: 1, valid: true },
    },
    problems: {
      400: 'validation-failed: bad base64, neither or both of data and digest, no signature, an unknown member; a jws that is not three base64url parts with a JSON header naming alg, or jws with data, digest, signature or algorithm',
      404: KEY_PROBLEMS[404],
      409: 'key-suspended, key-pending-deletion, key-revoked or key-version-retired',
      422: KEY_PROBLEMS[422],
    },
  }),
  'generate-data-key': contract({
    summary:
      'A fresh data key for envelope encryption, in clear and wrapped under kid (AWS KMS GenerateDataKey)',
    description:
      'Encrypt locally with `plaintext` (e.g. JWE dir/A256GCM), drop it, keep `ciphertext` with the data; later `/decrypt` it (with the same context) to get the data key back.',
    body: DataKeyBody,
    answer: DataKeyAnswer,
    examples: {
      request: { kid: 'orders', keySpec: 'AES_256', context: CTX },
      answer: {
        kid: 'orders',
        version: 2,
        plaintext: 'q1N4ve3m3Mmw0Q2oLr7H8wJ0Xk3c1S0b3mXyq3M5c8E=',
        ciphertext: CT,
      },
    },
    problems: {
      400: 'validation-failed: a keySpec not in the list, a bad context, an unknown member',
      ...KEY_PROBLEMS,
    },
  }),
  'generate-data-key-without-plaintext': contract({
    summary: 'A fresh data key, wrapped under kid only',
    description:
      'For a component that stores the wrapped key for another one to open later with `/decrypt`.',
    body: DataKeyBody,
    answer: WrappedDataKeyAnswer,
    examples: {
      request: { kid: 'orders', keySpec: 'AES_128' },
      answer: { kid: 'orders', version: 2, ciphertext: CT },
    },
    problems: {
      400: 'validation-failed: a keySpec not in the list, a bad context, an unknown member',
      ...KEY_PROBLEMS,
    },
  }),
  're-encrypt': contract({
    summary:
      "Re-encrypt a ciphertext under the key's newest version or another key, without the plaintext leaving the service (AWS ReEncrypt, Vault rewrap)",
    decrypts: true,
    description:
      "The target defaults to the source key's current version, and `targetContext` to `context`. The target key is checked before anything is decrypted. Failed decryptions count against the caller's decryption-failure budget on the source key (429 past it).",
    body: ReEncryptBody,
    answer: ReEncryptAnswer,
    examples: {
      request: { ciphertext: CT, context: CTX, targetKid: 'orders-2027' },
      answer: {
        kid: 'orders-2027',
        version: 1,
        ciphertext: CT,
        sourceKid: 'orders',
        sourceVersion: 2,
      },
    },
    problems: {
      ...DECRYPTION,
      404: "key-not-found: the source or target kid is not in the token's tenant",
      422: 'key-usage-mismatch: the target key does not encrypt',
    },
  }),
  random: contract({
    summary: "Random bytes from the service's CSPRNG",
    description: "From node:crypto randomBytes (OpenSSL's DRBG).",
    body: RandomBody,
    answer: RandomAnswer,
    examples: {
      request: { bytes: 32 },
      answer: { data: 'sM3q3Hq8ZrQ3n0zvJx9m4G2f3b2c0q1Yw4wP3Vx6b7A=' },
    },
    problems: {
      400: 'validation-failed: bytes not an integer from 1 to 1024, or an unknown member',
    },
  }),
  'generate-mac': contract({
    summary: "Compute an HMAC of data with the key's current version (AWS KMS GenerateMac)",
    description:
      'The key must have usage `mac` (types hmac-sha256, hmac-sha384, hmac-sha512); the MAC is the full hash output (32, 48 or 64 bytes).',
    body: GenerateMacBody,
    answer: MacAnswer,
    examples: {
      request: { kid: 'webhook-mac', data: 'YXR0YWNrIGF0IGRhd24=' },
      answer: { kid: 'webhook-mac', version: 1, algorithm: 'HS256', mac: MAC },
    },
    problems: {
      400: 'validation-failed: bad base64 or an unknown member',
      ...KEY,
      422: "key-usage-mismatch: the key's usage is not mac",
    },
  }),
  'verify-mac': contract({
    summary:
      'Verify an HMAC with any retained version, newest first, or the one named (AWS KMS VerifyMac)',
    description:
      "Each version is checked with one constant-time comparison of the full MAC. A wrong MAC is `valid: false` (200); a MAC of the wrong length (a truncated one, say) is a 400, never compared. Versions below the key's minDecryptionVersion are not tried; naming one is key-version-retired.",
    body: VerifyMacBody,
    answer: VerifyMacAnswer,
    examples: {
      request: { kid: 'webhook-mac', data: 'YXR0YWNrIGF0IGRhd24=', mac: MAC },
      answer: { kid: 'webhook-mac', version: 1, valid: true },
    },
    problems: {
      400: "validation-failed: bad base64, a MAC that is not the algorithm's full length, a version that is not a positive integer, or an unknown member",
      404: KEY[404],
      409: 'key-suspended, key-pending-deletion, key-revoked or key-version-retired',
      422: "key-usage-mismatch: the key's usage is not mac",
    },
  }),
};

/** Where and how a path serves an operation contract. */
export interface OperationAt<B extends TObject> {
  /** Below the mount, e.g. '/encrypt'. */
  path: string;
  operationId: string;
  tag: string;
  access: Access;
  /** The rate-limit endpoint and the audit action. */
  budget: string;
  /** The operation on one checked item, in the token's tenant. */
  run: (ctx: AppContext, tenantId: string, item: Static<B>) => Promise<object>;
  /** Runs on the runtime lane too. */
  lane?: true;
}

/** A runtime operation row: a contract served at a path. */
export function operationRow<B extends TObject>(
  c: OperationContract<B>,
  at: OperationAt<B>,
): Endpoint {
  return endpoint({
    method: 'post',
    path: at.path,
    operationId: at.operationId,
    tag: at.tag,
    summary: c.summary,
    description: c.description,
    access: at.access,
    budget: at.budget,
    body: c.body,
    batch: true,
    ...(at.lane ? { lane: true } : {}),
    answer: { status: 200, description: 'the result, or one result per item', schema: c.answer },
    problems: { ...c.problems, ...('legacyRole' in at.access ? LEGACY_COMMON : COMMON) },
    examples: c.examples,
    ...(c.decrypts ? { extensions: { 'x-keyward-decrypts': true } } : {}),
    handle: (ctx, { claims, body }) => at.run(ctx, claims!.tenantId, body),
  });
}
