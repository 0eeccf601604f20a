/**
 * Walks the ContentInfo structures of RFC 5652 (and RFC 2315 section 11 SignedAndEnvelopedData)
 * over a BerReader. readHead stops at the content (eContent / encryptedContent) so the caller can
 * stream it; readTail reads what follows it. Every small element is captured with a size cap and
 * decoded with the @peculiar/asn1-cms classes.
 */
import { SignerInfo } from '@peculiar/asn1-cms';
import type { RecipientInfo } from '@peculiar/asn1-cms';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { TAG, isContext, isUniversal, type BerHeader } from '../asn1/ber-header.ts';
import type { BerReader } from '../asn1/ber-reader.ts';
import { decodeOid, parseAsn, walk } from '../asn1/der.ts';
import { OID, oidName } from '../asn1/oids.ts';
import { problem } from '../errors/index.ts';
import { plainAlgorithm, plainSignerInfo } from './der-elements.ts';
import { parseRecipientInfo } from './password-recipient.ts';

/** Cap on each captured element: a SignerInfo, a RecipientInfo, a certificate, an attribute set. */
export const ELEMENT_CAP = 1024 * 1024;
/** Most certificates, signers or recipients read from one set. */
export const MAX_SET_ITEMS = 64;

export type CmsType =
  'signedData' | 'envelopedData' | 'authEnvelopedData' | 'signedAndEnvelopedData';

const TYPES: Record<string, CmsType> = {
  [OID.signedData]: 'signedData',
  [OID.envelopedData]: 'envelopedData',
  [OID.authEnvelopedData]: 'authEnvelopedData',
  [OID.signedAndEnvelopedData]: 'signedAndEnvelopedData',
};

/** Everything before the content. */
export interface CmsHead {
  type: CmsType;
  /** SignedData / SignedAndEnvelopedData digestAlgorithms, read before the content. */
  digestAlgorithms: AlgorithmIdentifier[];
  recipientInfos: RecipientInfo[];
  /** eContentType, or the EncryptedContentInfo contentType. */
  contentType: string;
  contentEncryption: AlgorithmIdentifier | null;
  /** Header of the content OCTET STRING; null when the content is absent (detached). */
  content: BerHeader | null;
  /**
   * A PKCS#7 v1.5 content of another type than OCTET STRING (RFC 2315 section 7, `content [0]
   * EXPLICIT ANY`: Authenticode's SpcIndirectDataContent, for one): its signed bytes are the
   * value of `content`, without its tag and length (RFC 2315 section 9.3). See signedContent.
   */
  contentRaw?: boolean;
}

/** A SignerInfo with the bytes it was captured from. */
export interface CapturedSigner {
  raw: Buffer;
  info: SignerInfo;
}

/** Everything after the content. */
export interface CmsTail {
  certificates: Buffer[];
  signers: CapturedSigner[];
  /** AuthEnvelopedData authAttrs (RFC 5083 section 2.1), as captured. */
  authAttrs?: Buffer;
  /** AuthEnvelopedData mac. */
  mac?: Buffer;
}

async function expect(
  r: BerReader,
  test: (h: BerHeader) => boolean,
  what: string,
): Promise<BerHeader> {
  const h = await r.readHeader();
  if (!test(h)) throw problem('cms_malformed', `expected ${what} at byte ${h.offset}`);
  return h;
}

async function readOid(r: BerReader): Promise<string> {
  const h = await expect(
    r,
    (x) => isUniversal(x, TAG.OID) && !x.constructed,
    'an OBJECT IDENTIFIER',
  );
  return decodeOid(await r.readValue(h, 64));
}

async function readInteger(r: BerReader): Promise<void> {
  const h = await expect(r, (x) => isUniversal(x, TAG.INTEGER) && !x.constructed, 'an INTEGER');
  await r.readValue(h, 8);
}

/** Captures each element of a SET (or other constructed element) whose header was just read. */
async function captureItems(r: BerReader, h: BerHeader, what: string): Promise<Buffer[]> {
  const items: Buffer[] = [];
  r.enter(h);
  while (await r.more()) {
    if (items.length >= MAX_SET_ITEMS)
      throw problem('cms_unsupported', `more than ${MAX_SET_ITEMS} ${what}`);
    items.push(await r.capture(await r.readHeader(), ELEMENT_CAP));
  }
  await r.leave();
  return items;
}

/** Reads the outer ContentInfo up to its content and names the type (RFC 5652 section 3). */
async function readContentInfo(r: BerReader): Promise<CmsType> {
  const first = await r.peekHeader();
  if (!first) throw problem('cms_malformed', 'the input is empty');
  const seq = await r.readHeader();
  if (!isUniversal(seq, TAG.SEQUENCE) || !seq.constructed)
    throw problem('cms_malformed', 'not a CMS ContentInfo');
  r.enter(seq);
  const oidHeader = (await r.more()) ? await r.readHeader() : null;
  if (!oidHeader || !isUniversal(oidHeader, TAG.OID) || oidHeader.constructed) {
    throw problem(
      'cms_malformed',
      'not a CMS ContentInfo (no content type; an X.509 certificate?)',
    );
  }
  const oid = decodeOid(await r.readValue(oidHeader, 64));
  const type = TYPES[oid];
  if (!type) throw problem('cms_unsupported', `content type ${oidName(oid)} is not supported`);
  const explicit = await expect(r, (x) => isContext(x, 0) && x.constructed, 'the [0] content');
  r.enter(explicit);
  const body = await expect(
    r,
    (x) => isUniversal(x, TAG.SEQUENCE) && x.constructed,
    `a ${type} SEQUENCE`,
  );
  r.enter(body);
  return type;
}

function parseAlgorithms(items: Buffer[]): AlgorithmIdentifier[] {
  return items.map(
    (b) =>
      plainAlgorithm(b) ?? parseAsn(b, AlgorithmIdentifier, 'digest algorithm', 'cms_malformed'),
  );
}

/** EncryptedContentInfo up to its encryptedContent [0] IMPLICIT (RFC 5652 section 6.1). */
async function readEncryptedContentInfo(
  r: BerReader,
): Promise<Pick<CmsHead, 'contentType' | 'contentEncryption' | 'content'>> {
  r.enter(
    await expect(
      r,
      (x) => isUniversal(x, TAG.SEQUENCE) && x.constructed,
      'an EncryptedContentInfo',
    ),
  );
  const contentType = await readOid(r);
  const alg = await r.capture(await r.readHeader(), ELEMENT_CAP);
  const contentEncryption =
    plainAlgorithm(alg) ??
    parseAsn(alg, AlgorithmIdentifier, 'content-encryption algorithm', 'cms_malformed');
  let content: BerHeader | null = null;
  if (await r.more()) content = await expect(r, (x) => isContext(x, 0), 'the encryptedContent [0]');
  return { contentType, contentEncryption, content };
}

/** Reads a CMS message up to the first byte of its content. */
export async function readHead(r: BerReader): Promise<CmsHead> {
  const type = await readContentInfo(r);
  const head: CmsHead = {
    type,
    digestAlgorithms: [],
    recipientInfos: [],
    contentType: OID.data,
    contentEncryption: null,
    content: null,
  };
  await readInteger(r);
  if (type === 'signedData') {
    head.digestAlgorithms = parseAlgorithms(
      await captureItems(
        r,
        await expect(r, (x) => isUniversal(x, TAG.SET), 'digestAlgorithms'),
        'digest algorithms',
      ),
    );
    r.enter(
      await expect(
        r,
        (x) => isUniversal(x, TAG.SEQUENCE) && x.constructed,
        'an EncapsulatedContentInfo',
      ),
    );
    head.contentType = await readOid(r);
    if (await r.more()) {
      r.enter(await expect(r, (x) => isContext(x, 0) && x.constructed, 'the eContent [0]'));
      // CMS writes an OCTET STRING; RFC 2315 allows any type (code signing writes a SEQUENCE).
      head.content = await r.readHeader();
      if (!isUniversal(head.content, TAG.OCTET_STRING)) {
        // Its signed bytes are its DER value: an indefinite length would have to be re-encoded
        // whole first, which no streaming conversion can do in constant memory.
        if (head.content.length < 0)
          throw problem(
            'cms_content_indefinite',
            'the PKCS#7 v1.5 content is not an OCTET STRING and has no length: its signed bytes (RFC 2315 section 9.3) are its DER encoding, which cannot be streamed from BER',
          );
        head.contentRaw = true;
      }
    }
    return head;
  }
  let h = await r.readHeader();
  if (type !== 'signedAndEnvelopedData' && isContext(h, 0)) {
    // originatorInfo (RFC 5652 section 6.1): certificates for key agreement, not needed here.
    await r.capture(h, ELEMENT_CAP);
    h = await r.readHeader();
  }
  if (!isUniversal(h, TAG.SET))
    throw problem('cms_malformed', `expected recipientInfos at byte ${h.offset}`);
  head.recipientInfos = (await captureItems(r, h, 'recipients')).map(parseRecipientInfo);
  if (type === 'signedAndEnvelopedData') {
    head.digestAlgorithms = parseAlgorithms(
      await captureItems(
        r,
        await expect(r, (x) => isUniversal(x, TAG.SET), 'digestAlgorithms'),
        'digest algorithms',
      ),
    );
  }
  Object.assign(head, await readEncryptedContentInfo(r));
  return head;
}

/**
 * The signed bytes of a SignedData's content as they stream: the OCTET STRING's octets, or the
 * value of a PKCS#7 v1.5 content of another type (RFC 2315 section 9.3), in pieces of at most
 * 64 KiB.
 */
export async function* signedContent(
  r: BerReader,
  head: CmsHead,
  opts: { reuse?: boolean } = {},
): AsyncGenerator<Buffer> {
  const h = head.content!;
  if (!head.contentRaw) {
    yield* r.octets(h, opts);
    return;
  }
  for (let left = h.length; left > 0;) {
    const n = Math.min(left, 64 * 1024);
    yield await r.read(n);
    left -= n;
  }
}

/** Leaves the content's enclosing elements once the content has been streamed. */
async function leaveContent(r: BerReader, head: CmsHead): Promise<void> {
  if (head.type === 'signedData') {
    if (head.content) {
      if (await r.more()) throw problem('cms_malformed', 'data after the eContent');
      await r.leave();
    }
    if (await r.more())
      throw problem('cms_malformed', 'data after the EncapsulatedContentInfo content');
    await r.leave();
  } else {
    if (await r.more()) throw problem('cms_malformed', 'data after the encryptedContent');
    await r.leave();
  }
}

async function readSignerParts(r: BerReader, tail: CmsTail): Promise<void> {
  let h = await r.readHeader();
  if (isContext(h, 0)) {
    tail.certificates = await captureItems(r, h, 'certificates');
    h = await r.readHeader();
  }
  if (isContext(h, 1)) {
    await r.skipBody(h); // crls: not needed for a format conversion
    h = await r.readHeader();
  }
  if (!isUniversal(h, TAG.SET))
    throw problem('cms_malformed', `expected signerInfos at byte ${h.offset}`);
  tail.signers = (await captureItems(r, h, 'signers')).map(capturedSigner);
}

/** Parsed SignerInfos by the captured bytes they came from (see capturedSigner). */
const parsedSigners = new WeakMap<Uint8Array, SignerInfo>();

/**
 * A captured SignerInfo with its parse. The signature checks receive the same captured bytes
 * when they run in place, so the parse done while reading is reused rather than done again;
 * bytes from elsewhere (a pool thread's copy) are parsed anew.
 */
export function capturedSigner(raw: Uint8Array): CapturedSigner {
  const der = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  let info = parsedSigners.get(der);
  if (!info) {
    info = plainSignerInfo(der) ?? parseAsn(der, SignerInfo, 'SignerInfo', 'cms_malformed');
    parsedSigners.set(der, info);
  }
  return { raw: der, info };
}

/** Reads everything after the content and checks the message ends where the input does. */
export async function readTail(
  r: BerReader,
  head: CmsHead,
  opts: { expectEof?: boolean } = {},
): Promise<CmsTail> {
  const tail: CmsTail = { certificates: [], signers: [] };
  await leaveContent(r, head);
  if (head.type === 'signedData' || head.type === 'signedAndEnvelopedData') {
    await readSignerParts(r, tail);
  } else if (head.type === 'envelopedData') {
    if (await r.more())
      await r.skipBody(await expect(r, (x) => isContext(x, 1), 'unprotectedAttrs'));
  } else {
    let h = await r.readHeader();
    if (isContext(h, 1)) {
      tail.authAttrs = await r.capture(h, ELEMENT_CAP);
      h = await r.readHeader();
    }
    if (!isUniversal(h, TAG.OCTET_STRING))
      throw problem('cms_malformed', `expected the mac at byte ${h.offset}`);
    tail.mac = await r.readValue(h, 64);
    if (await r.more()) await r.skipBody(await expect(r, (x) => isContext(x, 2), 'unauthAttrs'));
  }
  for (let i = 0; i < 3; i++) {
    if (await r.more()) throw problem('cms_malformed', `unexpected data at byte ${r.position}`);
    await r.leave();
  }
  if ((opts.expectEof ?? true) && !(await r.atEof()))
    throw problem('cms_malformed', `data after the end of the CMS message, at byte ${r.position}`);
  return tail;
}

/**
 * The DER of the signed attributes as signed: the [0] IMPLICIT SET with its tag set back to
 * SET OF (RFC 5652 section 5.4). Null when the SignerInfo has none.
 */
export function signedAttrsDer(signer: CapturedSigner): Buffer | null {
  const outer = walk(signer.raw);
  const fields =
    outer && outer.length === 1 ? walk(signer.raw, outer[0].valueStart, outer[0].end) : null;
  if (!fields) {
    // A BER-encoded SignerInfo: re-encode. Signers must sign DER, so this only normalises lengths.
    if (!signer.info.signedAttrs) return null;
    throw problem('cms_unsupported', 'signed attributes in BER form are not supported');
  }
  const node = fields.find((f) => f.tag === 0xa0);
  if (!node) return null;
  const der = Buffer.from(signer.raw.subarray(node.start, node.end));
  der[0] = 0x31;
  return der;
}
