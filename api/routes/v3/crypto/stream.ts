/**
 * Stream re-encryption and re-signing of convert results as route rows, mounted at
 * /api/v3/crypto/stream behind the service-core bearer check. Both take the output of convert
 * exactly as it was returned and stream it: the JWE ciphertext flows through with backpressure,
 * the JWS content is hashed as it arrives.
 *
 * Tests: test/e2e/console-batch.test.ts, test/e2e/console.test.ts,
 *   test/integration/core/expensive-routes.test.ts, test/integration/core/expensive-work.test.ts,
 *   test/integration/core/kms-mac-public.test.ts, test/integration/keys/selection-and-usage.test.ts,
 *   and 17 more under test/integration/
 */
import Type from 'typebox';
import { endpoint } from '../../../rows/endpoint.ts';
import { streamMultipart } from '../../../http/streaming-multipart.ts';
import { streamedOperation } from '../../../rows/streamed-operation.ts';
import {
  DECRYPTING_429,
  JWE_EXAMPLE,
  JWE_LAYOUT,
  JWS_EXAMPLE,
  Jws,
  TargetKid,
} from '../../../schemas/streams.ts';
import { tenantKeyResolver } from '../../../../shared/keys/cms-resolver.ts';
import { callerKeyResolver } from '../../../services/crypto/decrypting-caller.ts';
import { MixedReader, mixedBoundary } from '../../../../shared/jose/mixed-reader.ts';
import { reencryptStream } from '../../../../shared/jose/reencrypt.ts';
import { startResign } from '../../../../shared/jose/resign.ts';
import { labelFor, rawBody, sendStreamed } from '../../../http/streaming.ts';
import { problem } from '../../../../shared/errors/index.ts';

const MAX_SIGNATURE_BYTES = 64 * 1024;
const MIXED = ['multipart/mixed'];
const JWS_TYPES = ['application/octet-stream', 'application/json'];

/** POST reencrypt?kid=: multipart/mixed JWE in, the same layout for the target key out. */
const reencrypt = endpoint({
  method: 'post',
  path: '/reencrypt',
  operationId: 'streamReencrypt',
  tag: 'crypto',
  summary: 'Re-encrypt a convert JWE for another key, streaming',
  description:
    'Opening the content key decrypts, hence crypto.decrypt; service-core token. Failures count against the decryption-failure budget (429 past it), and a content key that cannot be unwrapped is replaced by a random one, so it fails at the tag like any other failure. The body is the multipart/mixed result of convert exactly as returned (with its Content-Type and boundary). The content key is opened with the tenant key the recipient header names and wrapped for `kid` (RSA-OAEP-256 for RSA, ECDH-ES+A256KW for EC, AnKW for AES keys); the ciphertext and tag pass byte for byte, the tag being checked on the way. With rotateContentKey=true the content is re-encrypted under a fresh key and IV with AES-GCM of the same key size (AnCBC-HSm becomes AnGCM). A trailing JWS part passes unchanged. A tag that fails cuts the answer before its closing delimiter (or is a 400 problem when the input is small).',
  // Re-encrypting opens the content key: it decrypts, so it needs crypto.decrypt too
  // (docs/decisions.md, "Converting is decrypting").
  access: { allOf: ['crypto.stream.reencrypt', 'crypto.decrypt'] },
  budget: 'crypto.stream.reencrypt',
  negotiate: { types: MIXED, select: true },
  query: Type.Object({
    kid: TargetKid(),
    rotateContentKey: Type.Optional(Type.Boolean({ default: false })),
  }),
  request: { media: { 'multipart/mixed': {} } },
  answer: {
    status: 200,
    description: `the same layout for the target key: ${JWE_LAYOUT}`,
    content: {
      'multipart/mixed': { example: JWE_EXAMPLE.replaceAll('archive-2026#1', 'archive-2027#1') },
    },
  },
  problems: {
    400: 'decryption-failed (wrong key, bad tag), jose-malformed, validation-failed (kid missing)',
    404: 'key-not-found: the source or target kid is not a key of this tenant',
    409: 'key-suspended, key-pending-deletion, key-revoked',
    415: 'unsupported-media-type (not multipart/mixed), jose-unsupported (enc, alg, several recipients, zip, crit)',
    422: 'cms-key-unusable: the target key cannot receive a JWE; key-usage-mismatch: the source or target key is not of usage encrypt',
    429: DECRYPTING_429,
  },
  extensions: { 'x-keyward-decrypts': true },
  handle: (ctx, input) =>
    streamedOperation(ctx, input, 'crypto.stream.reencrypt', async (op) => {
      const { req, res, query } = input;
      const kid = (op.target = query.kid);
      const rotateContentKey = query.rotateContentKey ?? false;
      op.details = { rotateContentKey };
      const boundary = mixedBoundary(req.headers['content-type']);
      if (!boundary)
        throw problem(
          'unsupported_media_type',
          'send the multipart/mixed result of convert-pkcs7-to-jose exactly as it was returned, with its boundary',
        );
      const reader = new MixedReader(op.countIn(rawBody(req)), boundary);
      const result = await reencryptStream(reader, {
        resolver: callerKeyResolver(ctx, input.claims, 'stream'),
        targetKid: kid,
        rotateContentKey,
      });
      await sendStreamed(res, labelFor(req, [result.contentType]), result.body, op);
      op.details = { sourceKid: result.sourceKid, rotateContentKey };
    }),
});

/** POST resign?kid=: `signature` (the JWS object) then `file` (the content) in; a new JWS object out. */
const resign = endpoint({
  method: 'post',
  path: '/resign',
  operationId: 'streamResign',
  tag: 'crypto',
  summary: 'Re-sign a convert JWS with another key, streaming',
  description:
    'Service-core token. Parts in order: `signature` (the JWS object exactly as convert returned it) then `file` (the content it covers). The old signature is verified with the tenant key its kid names while the content streams; the answer is a new detached JWS of the same form (same b64, kid in protected) by `kid`, whose alg follows that key (the hash size and PS family of the old alg are kept where the key allows).',
  access: { anyOf: ['crypto.stream.resign'] },
  budget: 'crypto.stream.resign',
  negotiate: { types: JWS_TYPES, select: true },
  query: Type.Object({ kid: TargetKid() }),
  request: {
    media: {
      'multipart/form-data': {
        schema: Type.Object({ signature: Jws, file: Type.String({ format: 'binary' }) }),
        encoding: { signature: { contentType: 'application/json' } },
      },
    },
  },
  answer: {
    status: 200,
    description: 'the new detached JWS object',
    content: {
      'application/octet-stream': { schema: Jws },
      'application/json': { schema: Jws, example: JWS_EXAMPLE },
    },
  },
  problems: {
    400: 'jose-malformed, validation-failed (missing or misplaced part, kid missing)',
    404: 'key-not-found: the old or target kid is not a key of this tenant',
    409: 'key-suspended, key-pending-deletion, key-revoked',
    415: 'jose-unsupported (alg, crit, attached payload), unsupported-media-type',
    422: 'signature-invalid, jose-content-too-large (EdDSA over 64 MiB), cms-key-unusable (the target key cannot sign), key-usage-mismatch (the source or target key is not of usage sign)',
  },
  handle: (ctx, input) =>
    streamedOperation(ctx, input, 'crypto.stream.resign', async (op) => {
      const { req, res, query } = input;
      const kid = (op.target = query.kid);
      const form = (op.form = streamMultipart(req));
      const sig = await form.next();
      if (!sig || sig.name !== 'signature')
        throw problem(
          'validation_failed',
          'the signature part (the JWS object from convert) must come first, before the file part',
        );
      const resigning = await startResign(await sig.text(MAX_SIGNATURE_BYTES), {
        resolver: tenantKeyResolver(ctx, input.claims.tenantId, null),
        targetKid: kid,
      });
      const file = await form.next();
      if (!file || file.name !== 'file')
        throw problem(
          'validation_failed',
          'the file part (the signed content) is required after the signature part',
        );
      for await (const chunk of op.countIn(file.body)) resigning.update(chunk);
      const extra = await form.next();
      if (extra)
        throw problem(
          'validation_failed',
          `unexpected part ${extra.name.slice(0, 64)} after the file part`,
        );
      const jws = resigning.finish();
      const label = labelFor(req, JWS_TYPES);
      const body = Buffer.from(JSON.stringify(jws));
      res.status(200).type(label).send(body);
      op.bytesOut = body.length;
      op.details = { sourceKid: resigning.sourceKid };
    }),
});

/** The rows mounted at /api/v3/crypto/stream. */
export const CRYPTO_STREAM_ENDPOINTS = [reencrypt, resign];
