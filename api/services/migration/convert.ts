/**
 * The conversion request read from its parts: `metadata` (a JSON object) first,
 * then `file`, then, for a detached SignedData only, `content`.
 *
 * The engine needs to know whether a content part exists when it starts (it refuses one for a
 * SignedData that carries its content, and needs one for a detached one), but in a streamed form
 * the content part only shows after the whole file part. A detached .p7s holds only the
 * certificates and the SignerInfo, so the file part is buffered up to DETACHED_PROBE_BYTES: when
 * it ends within that, the next part is looked at before the engine starts; a larger file part
 * streams at once and is taken to carry its content (a content part after it is refused).
 */
import type { ConversionRunner } from '../../threads/conversions.ts';
import type { ConvertMetadata, ConvertResult, KeyResolver } from '../../../shared/pkcs7/index.ts';
import { problem } from '../../../shared/errors/index.ts';
import { counted, holdHead } from '../../../shared/streams.ts';

/** The largest file part held while looking for a content part after it. */
export const DETACHED_PROBE_BYTES = 1024 * 1024;
const MAX_METADATA_BYTES = 64 * 1024;

/** The part source convert reads (api/http/streaming-multipart.ts provides it). */
export interface PartSource {
  next(): Promise<{
    name: string;
    body: AsyncIterable<Buffer>;
    text(maxBytes: number): Promise<string>;
  } | null>;
}

export interface ConversionRequest {
  metadata: ConvertMetadata;
  file: AsyncIterable<Buffer>;
  content?: AsyncIterable<Buffer>;
  /** The file part's size when it ended within the probe (held whole before the engine starts). */
  wholeBytes?: number;
  /** Fails when the form holds a part after the ones used; run once the input is consumed. */
  checkNoMoreParts(): Promise<void>;
}

/** Parses the metadata part: a JSON object, `{}` being enough. */
export function parseMetadata(text: string): ConvertMetadata {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw problem('cms_bad_metadata', 'the metadata part is not valid JSON');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw problem('cms_bad_metadata', 'the metadata part must be a JSON object');
  return value as ConvertMetadata;
}

const unexpected = (name: string) =>
  problem(
    'validation_failed',
    `unexpected part ${name.slice(0, 64)}: the form is metadata, file, then content for a detached SignedData`,
  );

/** Reads metadata and opens file (and content) as streams, in the order the form sends them. */
export async function readConversionForm(
  form: PartSource,
  count: (n: number) => void,
): Promise<ConversionRequest> {
  const first = await form.next();
  if (!first || first.name !== 'metadata')
    throw problem(
      'cms_bad_metadata',
      'the metadata part (a JSON object) must come first, before the file part',
    );
  const metadata = parseMetadata(await first.text(MAX_METADATA_BYTES));
  const filePart = await form.next();
  if (!filePart)
    throw problem('validation_failed', 'the file part (the PKCS#7/CMS file) is required');
  if (filePart.name !== 'file') throw unexpected(filePart.name);

  const head = await holdHead(counted(filePart.body, count), DETACHED_PROBE_BYTES);
  const { whole } = head;
  if (whole && head.bytes === 0) throw problem('validation_failed', 'the file part is empty');
  const file = head.stream;

  let content: AsyncIterable<Buffer> | undefined;
  if (whole) {
    const next = await form.next();
    if (next && next.name !== 'content') throw unexpected(next.name);
    if (next) content = counted(next.body, count);
  }
  return {
    metadata,
    file,
    content,
    ...(whole ? { wholeBytes: head.bytes } : {}),
    async checkNoMoreParts() {
      const extra = await form.next();
      if (extra) throw unexpected(extra.name);
    },
  };
}

/**
 * Starts the engine on a conversion request with the tenant's keys, where `runner` puts it (the
 * event loop or a conversion thread); `onInputType` learns the input's CMS type; `withContent`
 * asks a SignedData for its content beside the JWS.
 */
export async function startConversion(
  request: ConversionRequest,
  resolver: KeyResolver,
  runner: ConversionRunner,
  onInputType?: (type: string) => void,
  withContent = false,
  integrated = false,
): Promise<ConvertResult> {
  let inputType = '';
  const result = await runner.convert(
    request.file,
    {
      metadata: request.metadata,
      resolver,
      withContent,
      integrated,
      onInputType: (type) => {
        inputType = type;
        onInputType?.(type);
      },
      ...(request.content ? { content: request.content } : {}),
    },
    request.wholeBytes,
  );
  if (request.content && inputType !== 'signedData') {
    // The engine ignores `content` for enveloped inputs; a client sending one expects otherwise.
    await result.body[Symbol.asyncIterator]().return?.();
    throw problem('cms_bad_metadata', 'a content part goes only with a detached SignedData');
  }
  return result;
}
