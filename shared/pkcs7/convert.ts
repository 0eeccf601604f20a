/**
 * convertPkcs7ToJose: the streaming PKCS#7/CMS to JOSE conversion.
 *
 * Everything that can be known before the content (type, keys, content key) is settled before the
 * function returns, so those failures are plain problems. The body is a pull-based generator: it
 * reads input only as fast as its output is consumed, and problems found later (truncation,
 * padding, tag, signature) are thrown from it before the JWE tag and the closing delimiter, so a
 * cut response never looks whole.
 *
 * SignedData output is one small JSON object after the whole content, so that conversion runs to
 * its end before returning and every SignedData failure is a plain problem.
 */
import { BerReader } from '../asn1/ber-reader.ts';
import { readHead, readTail, signedContent } from './cms-structure.ts';
import { certificatesJwkSet } from './certificates.ts';
import type { CmsHead, CmsTail } from './cms-structure.ts';
import type { DetachedJws } from '../jose/jws.ts';
import { SpooledJwsSigner, type GeneralJws } from '../jose/spooled-jws.ts';
import { checkTargetKids } from './recipient-choice.ts';
import { openContainer } from './container.ts';
import { convertClearSigned } from './clear-signed.ts';
import { once, Peekable } from './peekable.ts';
import { checkNesting } from './nesting.ts';
import { finishSignature, signedResult, signerKeyOf } from './resigning.ts';
import { ContentDigests, describeSigner } from './signers.ts';
import { convertEnveloped } from './convert-enveloped.ts';
import type { ConvertMetadata, ConvertOptions, ConvertResult } from './types.ts';
import { problem } from '../errors/index.ts';

const ENCS = new Set(['A128GCM', 'A192GCM', 'A256GCM', 'preserve']);

async function* buffers(input: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  for await (const c of input)
    yield Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
}

function checkMetadata(m: ConvertMetadata): void {
  if (m.contentEncryption !== undefined && !ENCS.has(m.contentEncryption)) {
    throw problem(
      'cms_bad_metadata',
      'contentEncryption must be A128GCM, A192GCM, A256GCM or preserve',
    );
  }
  for (const k of ['b64', 'allowMixedRecipients'] as const) {
    if (m[k] !== undefined && typeof m[k] !== 'boolean')
      throw problem('cms_bad_metadata', `${k} must be a boolean`);
  }
  if (m.verify !== undefined && m.verify !== 'signature' && m.verify !== 'chain')
    throw problem('cms_bad_metadata', 'verify must be signature or chain');
  for (const k of ['signerKid', 'recipientKid', 'keyManagement'] as const) {
    if (m[k] !== undefined && (typeof m[k] !== 'string' || m[k] === ''))
      throw problem('cms_bad_metadata', `${k} must be a non-empty string`);
  }
  if (m.targetKid !== undefined) checkTargetKids(m.targetKid);
  if (m.password !== undefined && (typeof m.password !== 'string' || m.password === ''))
    throw problem('cms_bad_metadata', 'password must be a non-empty string');
}

async function convertSigned(
  reader: BerReader,
  head: CmsHead,
  opts: ConvertOptions,
): Promise<ConvertResult> {
  const { metadata, resolver } = opts;
  const key = await signerKeyOf(opts);
  let tail: CmsTail | null = null;
  let source: AsyncIterable<Buffer>;
  if (head.content) {
    if (opts.content)
      throw problem(
        'cms_bad_metadata',
        'a content part was given for a SignedData that carries its content',
      );
    // Only hashed below, unless the content is handed on as well (then each chunk is its own).
    const content = new Peekable(signedContent(reader, head, { reuse: !opts.withContent }));
    // Refused before anything is read past its nested heads (nothing converted half-way).
    await checkNesting(content, 1);
    source = content;
  } else {
    tail = await readTail(reader, head);
    // A certificates-only SignedData (.p7b) signs nothing: its certificates as a JWK Set.
    if (tail.signers.length === 0 && !opts.content) {
      await reader.close();
      // A JWK Set has no content to stream beside it (jobs, Accept: multipart/mixed).
      if (opts.withContent)
        throw problem(
          'cms_unsupported',
          'a certificates-only SignedData (.p7b) signs no content; the streaming convert endpoint answers its certificates as a JWK Set',
        );
      const set = Buffer.from(JSON.stringify(certificatesJwkSet(tail.certificates)));
      return { contentType: 'application/jwk-set+json', body: once(set) };
    }
    if (!opts.content)
      throw problem(
        'cms_bad_metadata',
        'a detached SignedData needs the signed content as the content part',
      );
    // Detached: the SignerInfos are known before the content, so unusable ones fail at once.
    for (const s of tail.signers) {
      const desc = describeSigner(s);
      if (desc.unsupported)
        throw problem('cms_unsupported', `${desc.unsupported} is not supported`);
    }
    const content = new Peekable(buffers(opts.content));
    await checkNesting(content, 1);
    source = content;
  }
  const jws = new SpooledJwsSigner({ b64: metadata.b64 ?? false });
  const digests = new ContentDigests(head.digestAlgorithms.map((a) => a.algorithm));
  const known = tail;
  async function* run(): AsyncGenerator<Buffer, DetachedJws | GeneralJws> {
    try {
      for await (const chunk of source) {
        digests.update(chunk);
        await jws.update(chunk);
        yield chunk;
      }
      return await finishSignature({
        tail: known ?? (await readTail(reader, head)),
        eContentType: head.contentType,
        digests: digests.digest(),
        jws,
        key,
        resolver,
        verify: metadata.verify,
        checkSigners: opts.checkSigners,
      });
    } finally {
      await jws.close();
    }
  }
  return signedResult(run(), opts.withContent === true, () => reader.close());
}

/**
 * The result with its input released once the body ends, whether it completed, failed or was
 * abandoned: an archive form may leave bytes after the CMS object (text after a PEM END line, a
 * mail's later parts and epilogue) that nobody reads, and a storage stream must still close.
 */
function releasing(result: ConvertResult, container: { close(): Promise<void> }): ConvertResult {
  async function* body(): AsyncGenerator<Buffer> {
    try {
      yield* result.body;
    } finally {
      await container.close().catch(() => {});
    }
  }
  return { contentType: result.contentType, body: body() };
}

/** Converts a PKCS#7/CMS stream into a detached JWS or a multipart detached JWE. */
export async function convertPkcs7ToJose(
  input: AsyncIterable<Uint8Array>,
  opts: ConvertOptions,
): Promise<ConvertResult> {
  const o: ConvertOptions = { ...opts, metadata: opts.metadata ?? {} };
  checkMetadata(o.metadata);
  const container = await openContainer(input);
  if (container.signedContent) return releasing(await convertClearSigned(container, o), container);
  const reader = new BerReader(container.cms);
  try {
    const head = await readHead(reader);
    o.onInputType?.(head.type);
    return releasing(
      head.type === 'signedData'
        ? await convertSigned(reader, head, o)
        : await convertEnveloped(reader, head, o),
      container,
    );
  } catch (err) {
    await reader.close().catch(() => {});
    await container.close().catch(() => {});
    throw err;
  }
}
