/**
 * The flattened JSON serialization of a conversion's JWE (RFC 7516 section 7.2.2), for clients
 * that ask for `application/jose+json` instead of the streamed multipart/mixed answer:
 * the engine's multipart answer is read back part by part (the one multipart/mixed reader) and
 * re-serialized with the ciphertext and tag in base64url. That needs the whole ciphertext in
 * memory, so it is capped: past `maxBytes` nothing more is kept, the conversion still runs to
 * its end (so a decryption failure answers as every other), and the answer is 413, before any
 * byte of it is sent. With several targets it is the General JSON serialization (section 7.2.1),
 * with a `recipients` array. A result with a JWS part (signed and enveloped input) has no
 * flattened form and answers 406.
 */
import { problem } from '../../../shared/errors/index.ts';
import { MixedReader, mixedBoundary } from '../../../shared/jose/mixed-reader.ts';
import type { ConvertResult } from '../../../shared/pkcs7/index.ts';

/** Tag bytes per enc (RFC 7518 sections 5.2 and 5.3). */
const TAG_BYTES = new Map([
  ['A128GCM', 16],
  ['A192GCM', 16],
  ['A256GCM', 16],
  ['A128CBC-HS256', 16],
  ['A192CBC-HS384', 24],
  ['A256CBC-HS512', 32],
]);
const MAX_HEADER_BYTES = 64 * 1024;

interface GeneralHeader {
  protected: string;
  recipients: Array<{ header: Record<string, unknown>; encrypted_key: string }>;
  iv: string;
}

/** Reads a multipart JWE result whole (at most `maxBytes` of ciphertext) into flattened JSON. */
export async function flattenedJwe(result: ConvertResult, maxBytes: number): Promise<Buffer> {
  const boundary = mixedBoundary(result.contentType);
  if (!boundary) throw new Error(`not a multipart JWE: ${result.contentType}`);
  const reader = new MixedReader(result.body, boundary);
  try {
    const head = await reader.nextSmall(MAX_HEADER_BYTES);
    const header = JSON.parse(head!.data.toString()) as GeneralHeader;
    const enc = JSON.parse(Buffer.from(header.protected, 'base64url').toString()).enc as string;
    const part = await reader.next();
    if (!part) throw new Error('the JWE has no ciphertext part');
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of part.body) {
      n += c.length;
      // Past the cap nothing more is kept, but the rest is still read to its end: a decryption
      // failure must answer decryption-failed, never 413 or 400 depending on where the final
      // block fell.
      if (n <= maxBytes) chunks.push(Buffer.from(c));
    }
    if (n > maxBytes)
      throw problem(
        'payload_too_large',
        `the content is larger than ${maxBytes} bytes (CONVERT_JSON_MAX_BYTES), the most answered as one JSON JWE; ask for multipart/mixed, which streams any size`,
      );
    if (await reader.next())
      throw problem(
        'not_acceptable',
        'this input converts to a JWE and a JWS (a signed and encrypted input), which one flattened JSON JWE cannot hold; ask for multipart/mixed',
        { details: { available: ['multipart/mixed'] } },
      );
    const body = Buffer.concat(chunks);
    const tagBytes = TAG_BYTES.get(enc) ?? 16;
    const [recipient] = header.recipients;
    // Several targets (a targetKid list) have no flattened form: the General JSON one (section 7.2.1).
    const who =
      header.recipients.length === 1
        ? { header: recipient.header, encrypted_key: recipient.encrypted_key }
        : { recipients: header.recipients };
    return Buffer.from(
      JSON.stringify({
        protected: header.protected,
        ...who,
        iv: header.iv,
        ciphertext: body.subarray(0, body.length - tagBytes).toString('base64url'),
        tag: body.subarray(body.length - tagBytes).toString('base64url'),
      }),
    );
  } catch (err) {
    await reader.close().catch(() => {});
    throw err;
  }
}

/**
 * The compact serialization of a conversion's JWE (Accept: application/jose), which only HPKE
 * Integrated Encryption to one post-quantum target has (draft-ietf-jose-hpke-encrypt section 5:
 * the Encrypted Key is the encapsulated secret, the IV and tag are empty and the ciphertext is
 * HPKE's, tag included). Held whole and capped as the flattened form; any other result answers
 * 406 with the forms it has.
 */
export async function compactJwe(result: ConvertResult, maxBytes: number): Promise<Buffer> {
  const boundary = mixedBoundary(result.contentType);
  if (!boundary) throw new Error(`not a multipart JWE: ${result.contentType}`);
  const reader = new MixedReader(result.body, boundary);
  const refused = (why: string) =>
    problem('not_acceptable', `${why}; ask for multipart/mixed or application/jose+json`, {
      details: { available: ['multipart/mixed', 'application/jose+json'] },
    });
  try {
    const head = await reader.nextSmall(MAX_HEADER_BYTES);
    const header = JSON.parse(head!.data.toString()) as GeneralHeader;
    const prot = JSON.parse(Buffer.from(header.protected, 'base64url').toString()) as Record<
      string,
      unknown
    >;
    const integrated = !('enc' in prot) && header.recipients.length === 1 && header.iv === '';
    if (!integrated)
      throw refused(
        'only a conversion to one post-quantum (HPKE) target has a compact form (HPKE Integrated Encryption)',
      );
    const part = await reader.next();
    if (!part) throw new Error('the JWE has no ciphertext part');
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of part.body) {
      n += c.length;
      // As for the flattened form: read to the end whatever the size, so a decryption failure
      // answers decryption-failed.
      if (n <= maxBytes) chunks.push(Buffer.from(c));
    }
    if (n > maxBytes)
      throw problem(
        'payload_too_large',
        `the content is larger than ${maxBytes} bytes (CONVERT_JSON_MAX_BYTES), the most answered as one compact JWE; ask for multipart/mixed, which streams any size`,
      );
    if (await reader.next())
      throw refused(
        'this input converts to a JWE and a JWS (a signed and encrypted input), which one compact JWE cannot hold',
      );
    const ct = Buffer.concat(chunks).toString('base64url');
    return Buffer.from(`${header.protected}.${header.recipients[0].encrypted_key}..${ct}.`);
  } catch (err) {
    await reader.close().catch(() => {});
    throw err;
  }
}
