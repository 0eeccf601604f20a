/**
 * The forms a CMS object takes in an archive, told apart by their first
 * bytes and unwrapped while they stream: DER/BER as they are; PEM armour and bare base64 through
 * the one base64 decoder; an S/MIME entity (RFC 8551 section 3.2: application/pkcs7-mime, the
 * .p7m attachment or the whole .eml) through its transfer encoding, found through nested
 * multipart parts up to MAX_DEPTH; and a clear-signed multipart/signed (RFC 1847 section 2.1),
 * whose first part, headers included and byte for byte, is the signed content and whose second
 * part is the detached SignedData. Nothing is held whole: every bound below is a small constant.
 */
import { problem } from '../errors/index.ts';
import { decodeBase64, type Base64Fault } from '../mime/base64.ts';
import {
  ByteSource,
  decodeTransfer,
  looksLikeHeader,
  readHeaderBlock,
  type EntityFault,
} from '../mime/entity.ts';
import { parseContentType, type MediaType } from '../mime/header-params.ts';
import { MultipartScanner } from '../mime/multipart.ts';

/** The form an input was found in; der and ber are told apart by the BER reader later. */
export type ContainerForm = 'binary' | 'pem' | 'base64' | 'smime' | 'multipart-signed';

/** The CMS object inside an archive input, and for clear-signed mail the content it signs. */
export interface Container {
  form: ContainerForm;
  /** The DER/BER bytes of the CMS object. */
  cms: AsyncIterable<Buffer>;
  /**
   * multipart/signed only: the signed MIME entity, which comes before `cms` in the message and
   * must be read to its end first.
   */
  signedContent?: AsyncIterable<Buffer>;
  /** multipart/signed only: the digest names of its micalg parameter (RFC 8551 section 3.5.3.2). */
  micalg?: string[];
  /** Releases the input (its cleanup runs): after a failure, or when the answer is abandoned. */
  close(): Promise<void>;
}

/** What the readers below find; openContainer adds close(). */
type Found = Omit<Container, 'close'>;

/** Largest header block of a message or part. */
export const MAX_HEADER_BYTES = 64 * 1024;
/** Deepest multipart nesting followed to find the CMS part (the message itself is level 0). */
export const MAX_DEPTH = 4;
/** Longest PEM BEGIN line, and longest text skipped before it or before base64. */
const MAX_LINE = 128;
const MAX_LEADING_SPACE = 1024;
/**
 * Armour labels that hold a CMS object: RFC 7468's PKCS7 and CMS, the "PKCS #7 SIGNED DATA" and
 * similar labels older toolkits write, and gpgsm's `--armor` ("SIGNED MESSAGE", "ENCRYPTED
 * MESSAGE"). A Set: the label is the sender's.
 */
const PEM_LABELS: ReadonlySet<string> = new Set([
  'PKCS7',
  'CMS',
  'PKCS #7',
  'PKCS#7',
  'PKCS #7 SIGNED DATA',
  'PKCS7 SIGNED DATA',
  'PKCS #7 ENVELOPED DATA',
  'SIGNED MESSAGE',
  'ENCRYPTED MESSAGE',
]);
const PKCS7_MIME = new Set(['application/pkcs7-mime', 'application/x-pkcs7-mime']);
const PKCS7_SIGNATURE = new Set(['application/pkcs7-signature', 'application/x-pkcs7-signature']);

function base64Problem(where: string) {
  return (kind: Base64Fault, at: number) =>
    kind === 'truncated'
      ? problem('cms_base64_truncated', `the base64 of the ${where} ends inside a quartet`, {
          details: { decodedBytes: at },
        })
      : problem(
          'cms_base64_invalid',
          `the base64 of the ${where} is invalid near decoded byte ${at}`,
          {
            details: { decodedBytes: at },
          },
        );
}

function entityProblem(f: EntityFault) {
  switch (f.kind) {
    case 'headers-too-large':
      return problem(
        'cms_mime_header_too_large',
        `a MIME header block is larger than ${f.max} bytes`,
      );
    case 'no-body':
      return problem(
        'cms_mime_no_body',
        'the MIME entity ends before its body (no blank line after its header fields)',
      );
    case 'bad-header':
      return problem(
        'cms_malformed',
        `the input looks like a MIME entity, but a header line is malformed: "${printable(f.line)}"`,
      );
    case 'base64':
      return base64Problem('S/MIME body')(f.fault, f.at);
    case 'quoted-printable':
      return problem('cms_malformed', `the quoted-printable S/MIME body is malformed: ${f.why}`);
    case 'transfer-encoding':
      return problem(
        'cms_unsupported',
        `the transfer encoding "${printable(f.name)}" is not one of base64, quoted-printable, 7bit, 8bit, binary`,
      );
  }
}

/** A short printable rendering of untrusted text for a problem detail. */
function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?').slice(0, 60);
}

const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
const BASE64_HEAD = /^[A-Za-z0-9+/=\r\n\t ]+$/;

/** What a refused input looks like, for the cms-malformed detail. */
export function describeInput(head: Buffer): string {
  const s = head.toString('latin1', 0, Math.min(head.length, 64));
  const t = s.trimStart();
  if (head.length === 0) return 'the input is empty';
  if (s.startsWith('%PDF')) return 'the input looks like a PDF document, not a CMS object';
  if (head[0] === 0x50 && head[1] === 0x4b)
    return 'the input looks like a ZIP archive, not a CMS object';
  if (head[0] === 0x1f && head[1] === 0x8b)
    return 'the input looks like gzip data, not a CMS object';
  if (t.startsWith('-----BEGIN ')) {
    const label = /^-----BEGIN ([^-\r\n]{0,40})-----/.exec(t)?.[1];
    return label !== undefined
      ? `the input is a PEM "${printable(label)}" block; only ${[...PEM_LABELS].join(', ')} blocks hold a CMS object`
      : 'the input starts like PEM, but its BEGIN line is malformed';
  }
  if (t[0] === '{' || t[0] === '[') return 'the input looks like JSON, not a CMS object';
  if (t[0] === '<') return 'the input looks like XML or HTML, not a CMS object';
  if (BASE64_HEAD.test(t))
    return 'the input looks like base64, but not of a DER/BER SEQUENCE (it would start with "MI")';
  if (/^[\x20-\x7e\t\r\n]*$/.test(s))
    return 'the input is text that is neither PEM, base64 nor a MIME entity';
  return `the input is binary data that is not DER/BER (first byte 0x${head[0].toString(16).padStart(2, '0')})`;
}

/** Finds the CMS object in an archive input. */
export async function openContainer(input: AsyncIterable<Uint8Array>): Promise<Container> {
  const src = new ByteSource(input);
  try {
    const found = await detect(src);
    return { ...found, close: () => src.close() };
  } catch (err) {
    await src.close().catch(() => {});
    throw err;
  }
}

async function detect(src: ByteSource): Promise<Found> {
  const head = await src.peek(MAX_LINE);
  if (head.length > 0 && head[0] === 0x30) return { form: 'binary', cms: src };
  // Leading blank lines and a UTF-8 BOM before text forms are common in saved files.
  let skip = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  let more = await src.peek(MAX_LEADING_SPACE + MAX_LINE);
  while (skip < more.length && skip < MAX_LEADING_SPACE && isSpace(more[skip])) skip++;
  more = more.subarray(skip);
  const text = more.toString('latin1', 0, Math.min(more.length, MAX_LINE));
  if (text.startsWith('-----BEGIN ')) return pem(src, skip, text);
  if (text.startsWith('MI') && BASE64_HEAD.test(text)) {
    await dropBytes(src, skip);
    return { form: 'base64', cms: decodeBase64(src, { fault: base64Problem('input') }) };
  }
  if (skip === 0 && looksLikeHeader(more)) return mimeMessage(src);
  throw problem('cms_malformed', describeInput(more.length ? more : head));
}

async function dropBytes(src: ByteSource, n: number): Promise<void> {
  while (n > 0) {
    const c = await src.pull();
    if (!c) return;
    if (c.length > n) src.unshift(c.subarray(n));
    n -= Math.min(n, c.length);
  }
}

/** PEM armour (RFC 7468 section 2): the BEGIN line, base64 lines, then the END line of the same label. */
async function pem(src: ByteSource, skip: number, text: string): Promise<Found> {
  const m = /^-----BEGIN ([A-Z0-9 #]{1,40})-----\r?\n/.exec(text);
  if (!m) throw problem('cms_malformed', describeInput(Buffer.from(text, 'latin1')));
  const label = m[1];
  if (!PEM_LABELS.has(label))
    throw problem('cms_malformed', describeInput(Buffer.from(text, 'latin1')));
  await dropBytes(src, skip + m[0].length);
  const end = Buffer.from(`-----END ${label}-----`, 'latin1');
  let rest: Buffer | null = null;
  // The decoder stops at the END line's first dash; a view of src it cannot close keeps the rest
  // of that line readable when a chunk ends inside it.
  const view = (async function* () {
    for (let c = await src.pull(); c; c = await src.pull()) yield c;
  })();
  const body = decodeBase64(view, {
    fault: base64Problem('PEM block'),
    onDash: (r) => (rest = r),
  });
  async function* cms(): AsyncGenerator<Buffer> {
    yield* body;
    const tail = rest as Buffer | null;
    if (!tail)
      throw problem('cms_pem_unterminated', `the PEM block has no "-----END ${label}-----" line`);
    // The END line may be split across chunks: read enough of it to name another label too.
    let got: Buffer = tail;
    while (got.length < end.length + MAX_LINE) {
      const c = await src.pull();
      if (!c) break;
      got = Buffer.concat([got, c.subarray(0, end.length + MAX_LINE - got.length)]);
    }
    if (got.subarray(0, end.length).equals(end)) return;
    // RFC 7468 section 2: the END label must be the BEGIN one; another is not a cut file.
    const other = /^-----END ([A-Z0-9 #]{0,40})-----/.exec(got.toString('latin1'));
    if (other)
      throw problem(
        'cms_pem_end_mismatch',
        `the armour opened with "-----BEGIN ${label}-----" ends with "-----END ${printable(other[1])}-----"`,
      );
    throw problem(
      'cms_pem_unterminated',
      `the PEM block has no "-----END ${label}-----" line where its base64 ends`,
    );
  }
  return { form: 'pem', cms: cms() };
}

const mimeFault = (f: EntityFault) => entityProblem(f);

/** A whole message or attachment: its header block, then what its Content-Type says. */
async function mimeMessage(src: ByteSource): Promise<Found> {
  const found = await entity(src, 0);
  if (!found)
    throw problem(
      'cms_mime_no_cms',
      'the MIME message holds no S/MIME part (application/pkcs7-mime or multipart/signed)',
    );
  return found;
}

function mediaTypeOf(headers: Map<string, string>): MediaType {
  const raw = headers.get('content-type');
  // RFC 2045 section 5.2: absent or unreadable, the type is text/plain.
  return (
    (raw && parseContentType(raw)) || {
      type: 'text',
      subtype: 'plain',
      params: Object.create(null),
    }
  );
}

/** The S/MIME content in one entity at a nesting depth, or null when it holds none. */
async function entity(src: ByteSource, depth: number): Promise<Found | null> {
  if (depth > MAX_DEPTH)
    throw problem('cms_mime_too_deep', `the MIME parts nest deeper than ${MAX_DEPTH} levels`);
  const headers = await readHeaderBlock(src, {
    maxHeaderBytes: MAX_HEADER_BYTES,
    fault: mimeFault,
  });
  const mt = mediaTypeOf(headers);
  const full = `${mt.type}/${mt.subtype}`;
  if (PKCS7_MIME.has(full) || PKCS7_SIGNATURE.has(full)) {
    const first = await src.peek(1);
    if (first.length === 0)
      throw problem('cms_mime_no_body', `the ${full} entity has an empty body`);
    return {
      form: 'smime',
      cms: decodeTransfer(headers.get('content-transfer-encoding'), src, mimeFault),
    };
  }
  if (full === 'multipart/signed') return clearSigned(src, mt);
  if (mt.type === 'multipart') return firstCmsPart(src, mt, depth);
  if (full === 'message/rfc822') return entity(src, depth + 1);
  return null;
}

function scannerFor(src: ByteSource, mt: MediaType, what: string): MultipartScanner {
  const boundary = mt.params.boundary;
  if (boundary === undefined) {
    throw what === 'multipart/signed'
      ? problem(
          'cms_multipart_signed_malformed',
          'the multipart/signed message has no boundary parameter',
        )
      : problem('cms_malformed', `the ${printable(what)} message has no boundary parameter`);
  }
  return new MultipartScanner(() => src.pull(), {
    boundary,
    lineEnds: 'any',
    parseHeaders: false,
    maxHeaderBytes: MAX_HEADER_BYTES,
    maxPreambleBytes: MAX_HEADER_BYTES,
    malformed: (why) =>
      what === 'multipart/signed'
        ? problem(
            'cms_multipart_signed_malformed',
            `the multipart/signed message is malformed: ${why}`,
          )
        : problem('cms_malformed', `the ${printable(what)} message is malformed: ${why}`),
  });
}

/** multipart/mixed and the like: the first part that holds S/MIME content, the others skipped. */
async function firstCmsPart(src: ByteSource, mt: MediaType, depth: number): Promise<Found | null> {
  const scanner = scannerFor(src, mt, `multipart/${mt.subtype}`);
  for (let part = await scanner.next(); part; part = await scanner.next()) {
    const found = await entity(new ByteSource(part.body), depth + 1);
    if (found) return found;
  }
  return null;
}

/**
 * RFC 1847 section 2.1 and RFC 8551 section 3.5.3: two parts, the signed entity as it is (its
 * header fields, blank line and body, without the line end before the next delimiter), then the
 * application/pkcs7-signature part.
 */
async function clearSigned(src: ByteSource, mt: MediaType): Promise<Found> {
  const protocol = mt.params.protocol?.toLowerCase();
  if (protocol !== undefined && !PKCS7_SIGNATURE.has(protocol))
    throw problem(
      'cms_unsupported',
      `multipart/signed with protocol "${printable(protocol)}" is not S/MIME`,
    );
  const scanner = scannerFor(src, mt, 'multipart/signed');
  const first = await scanner.next();
  if (!first)
    throw problem('cms_multipart_signed_malformed', 'the multipart/signed message has no parts');
  const micalg = (mt.params.micalg ?? '')
    .toLowerCase()
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .slice(0, 4);
  async function* cms(): AsyncGenerator<Buffer> {
    const second = await scanner.next();
    if (!second)
      throw problem(
        'cms_multipart_signed_malformed',
        'the multipart/signed message has one part; the signature part is missing',
      );
    const part = new ByteSource(second.body);
    const headers = await readHeaderBlock(part, {
      maxHeaderBytes: MAX_HEADER_BYTES,
      fault: mimeFault,
    });
    const pt = mediaTypeOf(headers);
    if (!PKCS7_SIGNATURE.has(`${pt.type}/${pt.subtype}`))
      throw problem(
        'cms_multipart_signed_malformed',
        `the second part of the multipart/signed message is ${pt.type}/${pt.subtype}, not application/pkcs7-signature`,
      );
    yield* decodeTransfer(headers.get('content-transfer-encoding'), part, mimeFault);
  }
  return { form: 'multipart-signed', cms: cms(), signedContent: first.body, micalg };
}
