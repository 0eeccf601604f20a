/**
 * The request bodies of the runtime operations, one TypeBox schema each:
 * the operation core (api/rows/operation.ts) checks every body, and each item of a batch, against
 * it before the operation runs (unknown members refused naming the member), and the OpenAPI
 * operation is generated from it (api/openapi/endpoints.ts). What a schema cannot say (base64
 * that decodes, 8 KiB of context, exactly one of data and digest) the operation checks.
 */
import Type, { type Static, type TObject, type TProperties } from 'typebox';
import { KID } from '../../../shared/ids.ts';
import { refusedAs } from '../../../shared/validation/refusal.ts';

/** A closed request object: a member it does not know is a 400 naming it. */
const body = <P extends TProperties>(properties: P) =>
  Type.Object(properties, { additionalProperties: false });

export const Kid = Type.String({
  pattern: KID.source,
  description: 'the key id, as created',
  ...refusedAs('must be 1 to 128 characters of A-Z a-z 0-9 . _ : -'),
});

export const Base64 = (description: string) =>
  Type.String({ contentEncoding: 'base64', description, ...refusedAs('must be a base64 string') });

/** A key version named by the caller: a positive integer, nothing else (no "2", [2] or true). */
export const Version = (description?: string) =>
  Type.Integer({
    minimum: 1,
    ...(description ? { description } : {}),
    ...refusedAs('must be a positive integer'),
  });

/**
 * A compact JWE as a request member. Only its size is checked here: one that is not well formed
 * is decryption-failed like any other that does not open, so no answer tells them apart.
 */
const Ciphertext = Type.String({
  maxLength: 200_000,
  description:
    'compact JWE (RFC 7516); its protected header names `kid` "<kid>#<version>" and `ver`, and `ctx` when a context is bound. One that is not well formed is decryption-failed.',
  ...refusedAs('must be a compact JWE string'),
});

export const MAX_CONTEXT_MEMBERS = 64;
/**
 * An encryption context (AWS KMS EncryptionContext): at most 64 string members; their 8 KiB bound
 * is checked with the digest (runtime.ts encryptionContext).
 */
const Context = (what: string) =>
  Type.Unsafe<Record<string, string>>({
    type: 'object',
    maxProperties: MAX_CONTEXT_MEMBERS,
    additionalProperties: { type: 'string' },
    description: `${what}: at most 64 string members, 8 KiB in all (AWS KMS EncryptionContext). Bound into the JWE header as an HMAC-SHA-256 digest under a service key, never stored in clear; member order does not matter. Decryption needs the same context: a wrong, missing or extra one is decryption-failed.`,
    ...refusedAs(`must be an object of at most ${MAX_CONTEXT_MEMBERS} string members`),
  });

export const EncryptBody = body({
  kid: Kid,
  data: Base64('the plaintext'),
  context: Type.Optional(Context('optional context')),
});

export const DecryptBody = body({
  ciphertext: Ciphertext,
  context: Type.Optional(Context('the context given at encryption')),
});

export const SignBody = body({
  kid: Kid,
  data: Type.Optional(Base64('the message')),
  digest: Type.Optional(Base64('the message digest')),
  algorithm: Type.Optional(
    Type.String({ examples: ['RS256', 'PS256', 'ES256', 'EdDSA', 'ML-DSA-65'] }),
  ),
  output: Type.Optional(
    Type.Literal('jws', {
      description:
        'jws: sign `data` as the payload of a compact JWS (RFC 7515) whose protected header is `{alg, kid: "<kid>#<version>"}`, answered as `jws`; the answer\'s `signature` is then the JWS signature over its signing input. Not with `digest`.',
    }),
  ),
});

export const VerifyBody = body({
  kid: Kid,
  data: Type.Optional(Base64('the message')),
  digest: Type.Optional(Base64('the message digest')),
  signature: Type.Optional(Base64('the raw signature; required unless `jws` is given')),
  jws: Type.Optional(
    Type.String({
      maxLength: 65536,
      description:
        'a compact JWS (RFC 7515) to verify instead of `data`/`digest` and `signature`, as `/sign` with `output: "jws"` answers it: its protected header\'s `alg` must be one the key signs with (ML-DSA-65 for an ML-DSA-65 key, ES256 for a P-256 key...) and its `kid`, when present, the key\'s `<kid>` or `<kid>#<version>`; any other header verifies as `valid: false`, the same as a wrong signature. Not with `data`, `digest`, `signature` or `algorithm`.',
      ...refusedAs('must be a compact JWS string'),
    }),
  ),
  algorithm: Type.Optional(Type.String()),
  version: Type.Optional(Version()),
});

export const KEY_SPECS = ['AES_256', 'AES_128'] as const;
export const DataKeyBody = body({
  kid: Kid,
  keySpec: Type.Enum(KEY_SPECS, {
    description: "the data key's size",
    ...refusedAs(`must be one of ${KEY_SPECS.join(', ')}`),
  }),
  context: Type.Optional(Context('bound to the wrapped data key')),
});

export const ReEncryptBody = body({
  ciphertext: Ciphertext,
  context: Type.Optional(Context('the context the ciphertext was sealed under')),
  targetKid: Type.Optional(Kid),
  targetContext: Type.Optional(Context('the context to bind to the new ciphertext')),
});

export const MAX_RANDOM_BYTES = 1024;
export const RandomBody = body({
  bytes: Type.Integer({
    minimum: 1,
    maximum: MAX_RANDOM_BYTES,
    ...refusedAs(`must be an integer from 1 to ${MAX_RANDOM_BYTES}`),
  }),
});

export const GenerateMacBody = body({ kid: Kid, data: Base64('the message') });

export const VerifyMacBody = body({
  kid: Kid,
  data: Base64('the message'),
  mac: Base64('the MAC, full length'),
  version: Type.Optional(Version('check this version only')),
});

export const EncapsulateBody = body({ kid: Kid });

export const DecapsulateBody = body({
  kid: Kid,
  ciphertext: Base64('the KEM ciphertext'),
  version: Type.Optional(Version('the version encapsulated to; default the current one')),
});

export const MAX_BATCH = 1000;
/** The batch form of an operation: `{items: [...]}`, 1 to 1000 bodies, each answered on its own. */
export const BatchOf = (item: TObject | ReturnType<typeof Type.Unknown>) =>
  body({
    items: Type.Array(item, {
      minItems: 1,
      maxItems: MAX_BATCH,
      ...refusedAs(`must hold 1 to ${MAX_BATCH} entries`),
    }),
  });

export type EncryptBody = Static<typeof EncryptBody>;
export type DecryptBody = Static<typeof DecryptBody>;
export type SignBody = Static<typeof SignBody>;
export type VerifyBody = Static<typeof VerifyBody>;
export type DataKeyBody = Static<typeof DataKeyBody>;
export type ReEncryptBody = Static<typeof ReEncryptBody>;
export type RandomBody = Static<typeof RandomBody>;
export type GenerateMacBody = Static<typeof GenerateMacBody>;
export type VerifyMacBody = Static<typeof VerifyMacBody>;
export type EncapsulateBody = Static<typeof EncapsulateBody>;
export type DecapsulateBody = Static<typeof DecapsulateBody>;
