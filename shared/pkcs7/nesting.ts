/**
 * How deep CMS content types nest (a SignedData whose content is a SignedData, an EnvelopedData
 * inside a SignedData...): the converter opens one layer (two for a SignedData inside an
 * EnvelopedData) and hands the rest on as content, so a file nested past MAX_CMS_NESTING is
 * refused whole (`cms-nesting-too-deep`) rather than converted half-way. The layers are found in
 * the first NESTING_WINDOW bytes of a content, without consuming them: constant memory, and no
 * more time than those bytes take.
 */
import { BerReader } from '../asn1/ber-reader.ts';
import { decodeOid } from '../asn1/der.ts';
import { OID } from '../asn1/oids.ts';
import { problem } from '../errors/index.ts';
import { readHead, signedContent } from './cms-structure.ts';
import { once, type Peekable } from './peekable.ts';

/** Most CMS content types nested in one file, the outermost ContentInfo counted as level 1. */
export const MAX_CMS_NESTING = 4;
/** Bytes of a content looked at for the layers nested in it (their heads come first). */
export const NESTING_WINDOW = 16 * 1024;

/** The content types of RFC 5652 section 4 to 9, RFC 5083 and RFC 2315 section 11. */
const CMS_TYPES = new Set<string>([
  OID.signedData,
  OID.envelopedData,
  OID.signedAndEnvelopedData,
  OID.digestedData,
  OID.encryptedData,
  OID.authenticatedData,
  OID.authEnvelopedData,
]);

/** The content type of the ContentInfo these bytes start, when it is one of CMS_TYPES. */
function cmsContentTypeAt(b: Buffer): string | null {
  if (b.length < 4 || b[0] !== 0x30) return null;
  const n = b[1] === 0x80 ? 0 : b[1] > 0x80 ? b[1] & 0x7f : 0;
  if (n > 4) return null;
  const p = 2 + n;
  if (b.length < p + 2 || b[p] !== 0x06) return null;
  const len = b[p + 1];
  if (len < 1 || len > 16 || b.length < p + 2 + len) return null;
  const oid = decodeOid(b.subarray(p + 2, p + 2 + len));
  return CMS_TYPES.has(oid) ? oid : null;
}

/**
 * How many CMS layers these bytes start, counting at most `limit`: a SignedData's own content is
 * looked into (what of it the bytes hold); an encrypted layer counts one, its content unseen. A
 * layer cut by the window's end, or malformed, ends the count (the conversion tells what is wrong
 * with it when it gets there).
 */
export async function cmsLayersIn(bytes: Buffer, limit: number): Promise<number> {
  let depth = 0;
  let b = bytes;
  while (depth < limit) {
    const type = cmsContentTypeAt(b);
    if (!type) return depth;
    depth++;
    if (type !== OID.signedData) return depth;
    // Small batches: what precedes the window's end is kept when the content is cut there.
    const r = new BerReader(once(b), { batchSize: 256 });
    const inner: Buffer[] = [];
    try {
      const head = await readHead(r);
      if (!head.content) return depth;
      for await (const c of signedContent(r, head)) inner.push(c);
    } catch {
      // Cut by the window or malformed: the layers read so far are what the bytes show.
    }
    b = Buffer.concat(inner);
  }
  return depth;
}

/**
 * Refuses a content whose nested CMS layers, added to the `outer` layers around it, pass
 * MAX_CMS_NESTING. The content is only peeked: it streams on whole afterwards.
 */
export async function checkNesting(content: Peekable, outer: number): Promise<void> {
  const seen = await cmsLayersIn(await content.peek(NESTING_WINDOW), MAX_CMS_NESTING - outer + 1);
  if (outer + seen > MAX_CMS_NESTING)
    throw problem(
      'cms_nesting_too_deep',
      `the CMS content types nest deeper than ${MAX_CMS_NESTING} levels (a SignedData or an encrypted content inside another, and so on)`,
    );
}
