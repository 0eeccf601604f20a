/**
 * The streaming PKCS#7/CMS endpoints as route rows, mounted at
 * /api/v3/migration/stream (both audiences; the permission decides); the analyze row is shared
 * with the unversioned alias (api/routes/shared/pkcs7-analyze.ts). The input is never buffered
 * whole: it flows from the socket through the multipart scanner into the engine, and the
 * engine's output flows to the socket with backpressure, so memory stays flat whatever the size
 * (there is no size limit).
 *
 * Tests: test/e2e/console-batch.test.ts, test/e2e/console.test.ts,
 *   test/integration/core/expensive-routes.test.ts, test/integration/core/expensive-work.test.ts,
 *   test/integration/core/kms-mac-public.test.ts, test/integration/http/unread-bodies.test.ts, and
 *   19 more under test/integration/
 */
import type { Request } from 'express';
import Type from 'typebox';
import { endpoint } from '../../../rows/endpoint.ts';
import { streamMultipart } from '../../../http/streaming-multipart.ts';
import { analyzeEndpoint } from '../../shared/pkcs7-analyze.ts';
import { streamedOperation } from '../../../rows/streamed-operation.ts';
import {
  CMS_PROBLEMS,
  DECRYPTING_429,
  JWE_EXAMPLE,
  JWE_LAYOUT,
  JWS_EXAMPLE,
  Jws,
} from '../../../schemas/streams.ts';
import { callerKeyResolver } from '../../../services/crypto/decrypting-caller.ts';
import { readConversionForm, startConversion } from '../../../services/migration/convert.ts';
import { compactJwe, flattenedJwe } from '../../../services/migration/json-jwe.ts';
import {
  RESPONSE_TYPE_HEADER,
  checkedBeforeLast,
  labelFor,
  sendStreamed,
} from '../../../http/streaming.ts';

/**
 * The response types of convert: JWS object, multipart JWE, the JWS labelled as JSON, the JSON
 * JWE, and the compact JWE of one post-quantum target.
 */
const CONVERT_TYPES = [
  'application/octet-stream',
  'multipart/mixed',
  'application/json',
  'application/jose+json',
  'application/jose',
] as const;

/**
 * True when the client asks for a SignedData's content beside its JWS: X-Response-Content-Type
 * multipart/mixed, or an Accept that prefers multipart/mixed to the JWS object's types (a bare
 * or wildcard Accept keeps the JWS-only default).
 */
function wantsSignedContent(req: Request): boolean {
  const selected = req.headers[RESPONSE_TYPE_HEADER];
  if (typeof selected === 'string' && selected.trim().toLowerCase() === 'multipart/mixed')
    return true;
  if (!req.headers.accept) return false;
  return (
    req.accepts(['application/octet-stream', 'application/json', 'multipart/mixed']) ===
    'multipart/mixed'
  );
}

/**
 * True when the client prefers the compact JWE (`application/jose`) to the other JWE forms: a
 * conversion to one post-quantum target is then written as HPKE Integrated Encryption.
 */
function wantsCompact(req: Request): boolean {
  const selected = req.headers[RESPONSE_TYPE_HEADER];
  if (typeof selected === 'string') return selected.trim().toLowerCase() === 'application/jose';
  if (!req.headers.accept) return false;
  return (
    req.accepts(['multipart/mixed', 'application/jose+json', 'application/jose']) ===
    'application/jose'
  );
}

const Binary = (description?: string) =>
  Type.String({ format: 'binary', ...(description ? { description } : {}) });

/** The `metadata` part of convert (read by services/migration/convert.ts readConversionForm). */
const Metadata = Type.Object(
  {
    signerKid: Type.Optional(
      Type.String({
        description:
          "the key that signs the JWS (a signing key of the tenant). Default: the tenant's archive signing key (key setting archiveSigning), else each CMS signer's own key found by its SignerInfo identifier. The CMS signers are always verified with their own certificates (carried in the file, or imported to verify only), never with this key",
      }),
    ),
    verify: Type.Optional(
      Type.Enum(['signature', 'chain'], {
        default: 'signature',
        description:
          "signature: each CMS signer's signature is checked with its certificate (no issuer is looked for; kw_signers x5c is that certificate alone). chain: the certificate must also lead, through the file's certificates, to one of the tenant's trust anchors (verify-only certificates with trustAnchor), be one for signing mail (keyUsage digitalSignature or nonRepudiation, extendedKeyUsage emailProtection or anyExtendedKeyUsage, RFC 8550 section 4.4), and each CA above it keep its keyCertSign, pathLenConstraint and nameConstraints; otherwise 422 cms-signer-untrusted. Validity periods are not checked (archived signatures outlive their certificates). At most 128 signature checks per conversion, signers and certificate links together (415 cms-unsupported past it)",
      }),
    ),
    recipientKid: Type.Optional(
      Type.String({
        description:
          'the CMS recipient key, picking one of several recipients; default: the first recipient, in file order, whose key the tenant holds (found by the RecipientInfo identifiers)',
      }),
    ),
    targetKid: Type.Optional(
      Type.Union(
        [
          Type.String(),
          Type.Array(Type.String(), { minItems: 1, maxItems: 16, uniqueItems: true }),
        ],
        {
          description:
            'who the new JWE is for; default every recipient of the input whose key the tenant holds for encryption, in file order, one JWE recipient each (the converted message stays readable by each mailbox that could read it; an X25519 or X448 recipient key receives no JWE: name the targets). A list of 1 to 16 distinct encryption keys gives part 1 in General JSON Serialization with one recipient per target (one content key wrapped for each)',
        },
      ),
    ),
    password: Type.Optional(
      Type.String({
        format: 'password',
        description:
          'opens a password recipient (RFC 3211 PWRI); needs targetKid; never logged or stored; jobs refuse it. A wrong password is decryption-failed',
      }),
    ),
    contentEncryption: Type.Optional(
      Type.Enum(['A128GCM', 'A192GCM', 'A256GCM', 'preserve'], {
        description:
          'default: AES-CBC of n bits becomes AnGCM, anything else A256GCM; preserve keeps the AES-CBC ciphertext byte for byte as AnCBC-HSm',
      }),
    ),
    keyManagement: Type.Optional(
      Type.String({
        description:
          'default RSA-OAEP-256 for RSA targets, ECDH-ES+A256KW for EC targets, HPKE-9-KE for X-Wing, HPKE-8-KE / HPKE-10-KE for ML-KEM + P-256 / P-384, HPKE-12-KE / HPKE-13-KE for ML-KEM-768 / ML-KEM-1024 targets (docs/post-quantum.md)',
      }),
    ),
    allowMixedRecipients: Type.Optional(
      Type.Boolean({
        description:
          'accept targets that mix post-quantum (ML-KEM and its hybrids) and classical keys, refused otherwise (422 jose-mixed-recipients); recorded in the protected header as keyward_mixed_recipients',
      }),
    ),
    b64: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'false: RFC 7797 unencoded detached payload (listed in crit)',
      }),
    ),
  },
  { description: 'JSON object, first part' },
);

/** POST convert-pkcs7-to-jose: metadata, file (and content) in; JWS object or multipart JWE out. */
const convert = endpoint({
  method: 'post',
  path: '/convert-pkcs7-to-jose',
  operationId: 'convertPkcs7ToJose',
  tag: 'migration',
  summary: 'Convert a PKCS#7/CMS file of any size to detached JOSE',
  description:
    'An encrypted input (EnvelopedData, AuthEnvelopedData, SignedAndEnvelopedData, signed-then-encrypted mail) is decrypted, so it needs crypto.decrypt as well (403 before anything is decrypted otherwise). Every failure of content decryption is one decryption-failed, the same status, body and point of the answer whatever failed (key transport padding, key length, CBC padding, tag, anything wrong in the decrypted content such as its inner signature); a key that cannot be unwrapped is replaced by a random one. Each principal has a decryption-failure budget per key (DECRYPT_FAILURE_BUDGET per DECRYPT_FAILURE_WINDOW_SECONDS, shared with runtime decrypt, stream re-encrypt and jobs): past it, 429 with Retry-After. Service-admin or service-core token. Parts in this order: `metadata` (a JSON object, `{}` is enough), `file`, and for a detached SignedData (.p7s) `content`. A file part of at most 1 MiB is read whole before the engine starts, to see whether a content part follows; a larger file part streams at once and must carry its content. SignedData answers after the whole input (signature verified before anything is signed), unless `Accept` prefers `multipart/mixed` (or X-Response-Content-Type names it): then the signed content streams as part 1 (application/octet-stream) and the JWS follows as part 2 (application/jose+json); EnvelopedData streams with backpressure. Outputs of up to 64 KiB are complete before the status line, so small bad inputs get a problem; later failures cut the response without its closing delimiter.',
  access: { anyOf: ['migration.convert'] },
  budget: 'migration.convert',
  // A password recipient's PBKDF2 (expensive-work pool, caller's budget) and a SignedData's
  // signer and chain checks (bounded per conversion, on the conversion threads).
  expensive: { kinds: ['key-derivation', 'signer-chain'] },
  negotiate: { types: CONVERT_TYPES, select: true },
  request: {
    media: {
      'multipart/form-data': {
        schema: Type.Object({
          metadata: Metadata,
          file: Binary(),
          content: Type.Optional(Binary('the signed content of a detached SignedData, third part')),
        }),
        encoding: { metadata: { contentType: 'application/json' } },
        example: {
          metadata: { targetKid: 'archive-2026', contentEncryption: 'A256GCM' },
          file: '(the .p7m file)',
        },
      },
    },
  },
  answer: {
    status: 200,
    description: `SignedData: the detached JWS object (application/octet-stream, or application/json when asked for); a certificates-only SignedData (.p7b): a JWK Set of its certificates (application/jwk-set+json, each key with its certificate as x5c; jobs and Accept: multipart/mixed answer 415 cms-unsupported for it). EnvelopedData, AuthEnvelopedData, SignedAndEnvelopedData: ${JWE_LAYOUT}`,
    content: {
      'application/octet-stream': { schema: Jws },
      'application/json': { schema: Jws, example: JWS_EXAMPLE },
      'multipart/mixed': { example: JWE_EXAMPLE },
      'application/jwk-set+json': {
        schema: Type.Object({ keys: Type.Array(Type.Object({})) }),
      },
      'application/jose': {
        schema: Type.String({
          description:
            'for Accept: application/jose: a conversion to one post-quantum target (ML-KEM or a hybrid) as one compact JWE of HPKE Integrated Encryption (alg HPKE-n, no enc, empty IV and tag), content at most CONVERT_JSON_MAX_BYTES (413 beyond); 406 for any other target list or a result with a JWS part',
        }),
      },
      'application/jose+json': {
        schema: Type.Object(
          {},
          {
            description:
              'for Accept: application/jose+json: an enveloped input as one flattened JSON JWE (RFC 7516 7.2.2: protected, header, encrypted_key, iv, ciphertext, tag), content at most CONVERT_JSON_MAX_BYTES (413 beyond; 406 for a result with a JWS part); a SignedData as its JWS object',
          },
        ),
      },
    },
  },
  problems: {
    ...CMS_PROBLEMS,
    403: 'the role lacks the permission (an encrypted input needs crypto.decrypt as well)',
    429: `${DECRYPTING_429}; for a password recipient, also the caller's budget of expensive work (EXPENSIVE_BUDGET per EXPENSIVE_WINDOW_SECONDS: its PBKDF2 costs a unit per 1,000 iterations)`,
  },
  extensions: { 'x-keyward-decrypts': true },
  handle: (ctx, input) =>
    streamedOperation(ctx, input, 'migration.convert', async (op) => {
      const { req, res } = input;
      const form = (op.form = streamMultipart(req));
      const request = await readConversionForm(form, (n) => (op.bytesIn += n));
      const result = await startConversion(
        request,
        callerKeyResolver(ctx, input.claims, 'conversion'),
        ctx.conversions,
        (type) => (op.details.inputType = type),
        wantsSignedContent(req),
        wantsCompact(req),
      );
      const resultType = result.contentType.split(';')[0];
      op.details.resultType = resultType;
      const candidates =
        resultType === 'application/octet-stream'
          ? ['application/octet-stream', 'application/json', 'application/jose+json']
          : op.details.inputType === 'signedData'
            ? [result.contentType]
            : [result.contentType, 'application/jose+json', 'application/jose'];
      let label: string;
      try {
        label = labelFor(req, candidates);
      } catch (err) {
        await result.body[Symbol.asyncIterator]().return?.();
        throw err;
      }
      if (label === 'application/jose+json' && resultType === 'multipart/mixed') {
        // Flattened JSON JWE: held whole (capped), so every failure is still a problem here.
        const json = await flattenedJwe(result, ctx.config.convertJsonMaxBytes);
        await request.checkNoMoreParts();
        res.status(200).setHeader('Content-Type', label).setHeader('Cache-Control', 'no-store');
        res.end(json);
        op.bytesOut = json.length;
        return;
      }
      if (label === 'application/jose' && resultType === 'multipart/mixed') {
        const compact = await compactJwe(result, ctx.config.convertJsonMaxBytes);
        await request.checkNoMoreParts();
        res.status(200).setHeader('Content-Type', label).setHeader('Cache-Control', 'no-store');
        res.end(compact);
        op.bytesOut = compact.length;
        return;
      }
      await sendStreamed(
        res,
        label,
        checkedBeforeLast(result.body, () => request.checkNoMoreParts()),
        op,
      );
    }),
});

/** The rows mounted at /api/v3/migration/stream. */
export const MIGRATION_STREAM_ENDPOINTS = [
  analyzeEndpoint('analyzePkcs7', 'Analyze a PKCS#7/CMS file'),
  convert,
];
