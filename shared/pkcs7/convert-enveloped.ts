/**
 * The conversion of an EnvelopedData, AuthEnvelopedData or SignedAndEnvelopedData (contract
 * section 5) into a multipart detached JWE, for convertPkcs7ToJose (convert.ts).
 */
import { createDecipheriv, createSecretKey } from 'node:crypto';
import { asSecretKey } from '../crypto/secret-key.ts';
import { BerReader } from '../asn1/ber-reader.ts';
import { readHead, readTail } from './cms-structure.ts';
import type { CmsHead, CmsTail } from './cms-structure.ts';
import { contentCipherOf, contentDecipher } from './content-decrypt.ts';
import type { ContentCipher } from './content-decrypt.ts';
import {
  Multipart,
  cbcPassThrough,
  gcmEncryptor,
  preservingEnc,
  protectedHeader,
} from '../jose/jwe.ts';
import type { ContentEncryptor, JweEnc } from '../jose/jwe.ts';
import type { DetachedJws } from '../jose/jws.ts';
import { SpooledJwsSigner, type GeneralJws } from '../jose/spooled-jws.ts';
import { defaultKeyManagement, wrapContentKey } from '../jose/keys.ts';
import { integratedStream, isHpkeTarget, recipientMix } from '../jose/hpke-jwe.ts';
import { OID, oidName } from '../asn1/oids.ts';
import { openContentKey } from './recipients.ts';
import { chooseRecipient, targetKeysOf } from './recipient-choice.ts';
import { looksLikeHeader } from '../mime/entity.ts';
import {
  clearSignedVerifier,
  looksLikeClearSigned,
  looksLikeOpaqueSigned,
} from './clear-signed.ts';
import { openContainer } from './container.ts';
import { Peekable } from './peekable.ts';
import { heldToEnd } from '../spool.ts';
import { checkNesting } from './nesting.ts';
import { finishSignature, signerKeyOf } from './resigning.ts';
import { ContentDigests } from './signers.ts';
import type { ConvertOptions, ConvertResult, KeyResolver, ResolvedKey } from './types.ts';
import { AppError, decryptionFailed, problem } from '../errors/index.ts';

const OCTET = 'application/octet-stream';
const JOSE = 'application/jose+json';
/** How much decrypted content is looked at for a signed entity's header block. */
const SIGNED_ENTITY_PEEK = 16 * 1024;

/**
 * The signed MIME entity the decrypted content starts, if any: clear-signed (multipart/signed)
 * or opaque-signed (application/pkcs7-mime; smime-type=signed-data). Only as much is read ahead
 * as needed: 24 bytes decide for binary content (so a small bad ciphertext still fails in the
 * body, as any other), a header block is read up to its blank line, at most SIGNED_ENTITY_PEEK.
 */
async function signedEntityAhead(plain: Peekable): Promise<'clear' | 'opaque' | null> {
  if (!looksLikeHeader(await plain.peek(24))) return null;
  for (const n of [1024, SIGNED_ENTITY_PEEK]) {
    const head = await plain.peek(n);
    if (/\r?\n\r?\n/.test(head.toString('latin1')) || head.length < n)
      return looksLikeClearSigned(head) ? 'clear' : looksLikeOpaqueSigned(head) ? 'opaque' : null;
  }
  return null;
}

const SIGNED_DATA_PREFIX = Buffer.from('06092a864886f70d010702', 'hex');

/** True when bytes start a ContentInfo whose type is signedData (what `cms -sign | cms -encrypt` makes). */
export function looksLikeSignedData(b: Buffer): boolean {
  if (b.length < 2 || b[0] !== 0x30 || b[1] === 0xff) return false;
  const p = b[1] > 0x80 ? 2 + (b[1] & 0x7f) : 2;
  return (
    b.length >= p + SIGNED_DATA_PREFIX.length &&
    b.subarray(p, p + SIGNED_DATA_PREFIX.length).equals(SIGNED_DATA_PREFIX)
  );
}

/** What is needed to verify the CMS signer and re-sign at the end of the content. */
interface Signing {
  /** Takes the next content chunk (a promise when the chunk goes to a reader beside the JWE). */
  update(chunk: Buffer): void | Promise<void>;
  finish(): Promise<DetachedJws | GeneralJws>;
  /** Drops what was spooled for the JWS, when the answer ends before finish. */
  close?(): Promise<void>;
}

/**
 * Errors of the outer structure (the ciphertext's framing: truncation, a broken wrapper, a bad
 * tail), marked as they leave the outer reader: told as they are (counted all the same); every
 * other failure after the content key is opened is the opaque decryption-failed.
 */
const outerErrors = new WeakSet<object>();

function markOuter(err: unknown): unknown {
  if (err !== null && typeof err === 'object') outerErrors.add(err);
  return err;
}

async function* outer<T>(it: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* it;
  } catch (err) {
    throw markOuter(err);
  }
}

async function outerStep<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw markOuter(err);
  }
}

function checkEnvelope(head: CmsHead, cc: ContentCipher): void {
  if (head.recipientInfos.length === 0)
    throw problem('cms_malformed', 'an encrypted message without recipients');
  if (!head.content)
    throw problem(
      'cms_unsupported',
      'encrypted content outside the message (detached) is not supported',
    );
  // RFC 5084 section 1: GCM belongs in AuthEnvelopedData, and AuthEnvelopedData needs an AEAD.
  if ((head.type === 'authEnvelopedData') !== (cc.spec.mode === 'gcm')) {
    throw problem(
      'cms_unsupported',
      `${oidName(head.contentEncryption!.algorithm)} in ${head.type} is not supported`,
    );
  }
}

/**
 * An EnvelopedData, AuthEnvelopedData or SignedAndEnvelopedData as a multipart detached JWE. The
 * steps: everything the plaintext does not decide is settled first (`envelopeKeys`), then the
 * content key is opened and the content taken in one of two modes, `preservedCiphertext` (the
 * AES-CBC ciphertext kept as it is) or `decryptedContent` (decrypted, then re-encrypted), which
 * finds what the plaintext holds: a nested SignedData (`nestedSignedData`), a clear-signed entity
 * (clearSignedVerifier), the signature of a SignedAndEnvelopedData (`envelopeSignature`) or
 * plain data. `jweAnswer` writes the JWE; `DecryptionOutcome` keeps every failure from the
 * content key on opaque and counted once.
 */
export async function convertEnveloped(
  reader: BerReader,
  head: CmsHead,
  opts: ConvertOptions,
): Promise<ConvertResult> {
  const { metadata, resolver } = opts;
  // Converting encrypted content decrypts it: refused before anything else without crypto.decrypt.
  await resolver.admitDecryption?.();
  const cc = contentCipherOf(head.contentEncryption!);
  checkEnvelope(head, cc);
  const preserve = metadata.contentEncryption === 'preserve';
  if (preserve) checkPreservable(head, cc);
  const keys = await envelopeKeys(head, opts);
  const enc: JweEnc = preserve
    ? preservingEnc(cc.spec.keyLength)
    : ((metadata.contentEncryption as JweEnc | undefined) ??
      (cc.spec.aesBits ? (`A${cc.spec.aesBits}GCM` as JweEnc) : 'A256GCM'));
  // One post-quantum target and a compact answer: HPKE seals the content itself (Integrated).
  const integrated =
    opts.integrated === true &&
    !preserve &&
    keys.targets.length === 1 &&
    isHpkeTarget(keys.targets[0])
      ? integratedStream(keys.targets[0])
      : null;
  if (integrated && metadata.contentEncryption !== undefined)
    throw problem(
      'cms_bad_metadata',
      'a compact answer to one post-quantum target is HPKE Integrated Encryption, which has no separate contentEncryption; leave it out, or ask for multipart/mixed',
    );
  const protectedB64 = integrated?.protectedB64 ?? protectedHeader(enc, keys.mixed);
  const aad = Buffer.from(protectedB64, 'ascii');
  const fresh = preserve ? null : (integrated?.encryptor ?? gcmEncryptor(enc, aad));
  // A target or key management that cannot carry the JWE key is a plain problem, found now.
  let recipients: unknown[] = integrated
    ? [{ encrypted_key: integrated.ek.toString('base64url') }]
    : keys.wrapFor(fresh ? fresh.cek : Buffer.alloc(2 * cc.spec.keyLength), enc);

  const kid = keys.recipientKey.kid;
  const { cek: cmsKey, rejected } = await openContentKey(
    keys.ri,
    keys.recipientKey,
    resolver,
    cc.spec.keyLength,
  );
  const outcome = new DecryptionOutcome(resolver, kid, rejected);
  let plaintext: Plaintext;
  try {
    if (preserve) {
      plaintext = preservedCiphertext(reader, head, cc, cmsKey, aad);
      recipients = keys.wrapFor(plaintext.encryptor.cek, enc);
    } else {
      plaintext = await decryptedContent(reader, head, cc, cmsKey, fresh!, keys.signerKey, opts);
    }
  } catch (err) {
    throw await outcome.failed(err);
  }
  return jweAnswer(reader, plaintext, { protectedB64, recipients, rejected, outcome });
}

/** Preserve keeps only the AES-CBC ciphertext of an EnvelopedData holding data. */
function checkPreservable(head: CmsHead, cc: ContentCipher): void {
  if (head.type !== 'envelopedData' || cc.spec.aesBits === 0 || head.contentType === OID.signedData)
    throw problem(
      'cms_unsupported',
      'preserve keeps only the AES-CBC ciphertext of an EnvelopedData holding data',
    );
}

/**
 * Everything the plaintext does not decide, settled before the content key is opened, so its
 * problems stay specific: keys, target, key management, the signer of a SignedAndEnvelopedData
 * (its algorithms are in the outer head).
 */
async function envelopeKeys(head: CmsHead, opts: ConvertOptions) {
  const { metadata, resolver } = opts;
  const chosen = await chooseRecipient(head.recipientInfos, resolver, {
    recipientKid: metadata.recipientKid,
    password:
      metadata.password === undefined ? undefined : createSecretKey(metadata.password, 'utf8'),
  });
  const { ri, key: recipientKey } = chosen;
  const targets = await targetKeysOf(resolver, metadata.targetKid, chosen, head.recipientInfos);
  const mixed = recipientMix(targets, metadata.allowMixedRecipients === true);
  // One content key, wrapped for each target (RFC 7516 section 7.2.1, one recipient each).
  const wrapFor = (cek: Buffer, enc: JweEnc) =>
    targets.map((t) =>
      wrapContentKey(t, cek, metadata.keyManagement ?? defaultKeyManagement(t), enc),
    );
  const signerKey = await signerKeyOf(opts);
  return { ri, recipientKey, targets, wrapFor, signerKey, mixed };
}

/**
 * From here on the plaintext is read: every failure of it is the one opaque decryption-failed,
 * and every failure at all keeps the reserved point of the caller's budget. A failure of the
 * ciphertext's own framing (truncation, a broken PEM or MIME wrapper, a bad tail) keeps its
 * problem, as it says nothing the caller did not send, but is counted too: which comes first,
 * it or a failure inside a nested plaintext, can depend on the plaintext. Only an input that
 * broke off (the client or the storage went away: not an AppError) is no answer and not counted.
 * The first outcome settles it; what follows changes nothing.
 */
class DecryptionOutcome {
  readonly #resolver: KeyResolver;
  readonly #kid: string;
  readonly #rejected: Error | undefined;
  #settled = false;

  constructor(resolver: KeyResolver, kid: string, rejected: Error | undefined) {
    this.#resolver = resolver;
    this.#kid = kid;
    this.#rejected = rejected;
  }

  /** The error to tell for `err`, counted as the answer's outcome when it is the first. */
  async failed(err: unknown): Promise<unknown> {
    if (this.#settled) return err;
    this.#settled = true;
    const framing = err !== null && typeof err === 'object' && outerErrors.has(err);
    if (framing && !(err instanceof AppError)) {
      await this.#resolver.decryptionSucceeded?.(this.#kid).catch(() => {});
      return err;
    }
    await this.#resolver.decryptionFailed?.(this.#kid).catch(() => {});
    if (framing) return err;
    const rejected = this.#rejected;
    return decryptionFailed(rejected ? new Error(rejected.message, { cause: err }) : err);
  }

  /** Completed, or left by the client before its end: no failure to count, the point goes back. */
  async ended(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await this.#resolver.decryptionSucceeded?.(this.#kid).catch(() => {});
  }
}

/** The content as one mode hands it to the JWE writer. */
interface Plaintext {
  encryptor: ContentEncryptor;
  source: AsyncIterable<Buffer>;
  /** The CMS signature checked beside the content and re-signed as a JWS, if there is one. */
  signing: Signing | null;
  /** A nested SignedData's reader, closed with the answer when it ends early. */
  inner: BerReader | null;
  /** True just before the last piece of plaintext is handed on, once padding and tag checked out. */
  ending(): boolean;
  /** The answer is produced to its end before any of it is handed on (see `heldToEnd`). */
  held?: boolean;
}

/**
 * Preserve: the ciphertext is kept as it is, whatever it holds: nothing of the plaintext is
 * looked at before the end, where the final block's padding is checked (a nested SignedData
 * stays inside, unverified, as preserve means).
 */
function preservedCiphertext(
  reader: BerReader,
  head: CmsHead,
  cc: ContentCipher,
  cmsKey: Buffer,
  aad: Buffer,
): Plaintext {
  return {
    encryptor: cbcPassThrough(cmsKey, cc.iv, aad),
    source: (async function* () {
      yield* outer(reader.octets(head.content!));
      await outerStep(readTail(reader, head));
    })(),
    signing: null,
    inner: null,
    ending: () => false,
  };
}

/** Decrypted and re-encrypted under `encryptor`, with what the plaintext holds found first. */
async function decryptedContent(
  reader: BerReader,
  head: CmsHead,
  cc: ContentCipher,
  cmsKey: Buffer,
  encryptor: ContentEncryptor,
  signerKey: ResolvedKey | null,
  opts: ConvertOptions,
): Promise<Plaintext> {
  const decipher = contentDecipher(cc, cmsKey);
  let outerTail: CmsTail | null = null;
  let finalReached = false;
  const plain = new Peekable(
    (async function* () {
      // OpenSSL keeps the last CBC block until final() has checked its padding (GCM's tag
      // is checked there too): nothing of the end passes before the check does.
      for await (const c of outer(reader.octets(head.content!, { reuse: true }))) {
        const p = decipher.update(c); // consumed here, before the next chunk
        if (p.length) yield p;
      }
      outerTail = await outerStep(readTail(reader, head));
      // RFC 5083 section 2.1: authAttrs are GCM AAD, which must come before the content to stream.
      if (outerTail.authAttrs)
        throw markOuter(
          problem('cms_unsupported', 'AuthEnvelopedData with authAttrs is not supported'),
        );
      const last = decipher.final(outerTail.mac);
      finalReached = true;
      if (last.length) yield last;
    })(),
    { owned: true },
  );
  const ending = () => finalReached;
  const b64 = opts.metadata.b64 ?? false;
  const enveloped = head.type !== 'signedAndEnvelopedData';
  if (
    enveloped &&
    (head.contentType === OID.signedData ||
      (head.contentType === OID.data && looksLikeSignedData(await plain.peek(24))))
  )
    return { encryptor, ending, ...(await nestedSignedData(plain, b64, signerKey, opts)) };
  const entity = enveloped && head.contentType === OID.data ? await signedEntityAhead(plain) : null;
  if (entity === 'clear') {
    // Signed-then-encrypted mail (RFC 8551 section 3.7): the JWE holds the clear-signed
    // entity as the CMS carries it; its signature is verified and a JWS of the signed part
    // is added as for a nested SignedData.
    return { encryptor, ending, source: plain, signing: clearSignedVerifier(opts), inner: null };
  }
  if (entity === 'opaque') {
    // Outlook's signed-then-encrypted mail: the SignedData inside its S/MIME entity is the nested
    // SignedData once its transfer encoding is undone; converted as that. Its answer is held to
    // the end: a tampered block makes the base64 text or MIME head around the SignedData fail
    // where it lies, and that place must not show (docs/api.md, decryption failures).
    const mime = async () => (await openContainer(plain)).cms;
    const nested = await nestedSignedData(plain, b64, signerKey, opts, mime);
    return { encryptor, ending, held: true, ...nested };
  }
  const signing = enveloped
    ? null
    : envelopeSignature(head, cc, cmsKey, b64, signerKey, opts, () => outerTail!);
  return { encryptor, ending, source: plain, signing, inner: null };
}

/**
 * A SignedData inside the plaintext (what `cms -sign | cms -encrypt` makes): its content is
 * the JWE's, its signature verified and re-signed. A failure found in it is told at the end, as
 * every failure of the plaintext is: the rest is read (and its padding checked)
 * without passing anything on.
 */
async function nestedSignedData(
  plain: Peekable,
  b64: boolean,
  signerKey: ResolvedKey | null,
  opts: ConvertOptions,
  unwrap?: () => Promise<AsyncIterable<Buffer>>,
): Promise<Pick<Plaintext, 'source' | 'signing' | 'inner'>> {
  let r: BerReader | null = null;
  try {
    // The S/MIME entity around an opaque-signed SignedData, when there is one, is read through.
    const reader = new BerReader(unwrap ? await unwrap() : plain);
    r = reader;
    const innerHead = await readHead(reader);
    if (innerHead.type !== 'signedData' || !innerHead.content)
      throw problem(
        'cms_unsupported',
        'the encrypted content is not a SignedData with its content',
      );
    const content = new Peekable(reader.octets(innerHead.content));
    await checkNesting(content, 2);
    const source = (async function* () {
      try {
        yield* content;
      } catch (err) {
        // A failure inside the nested content is told at the end too.
        for await (const _ of plain) void _;
        throw err;
      }
    })();
    const signing = resigning(innerHead, b64, async (digests, jws) =>
      finishSignature({
        tail: await readTail(reader, innerHead),
        eContentType: innerHead.contentType,
        digests: digests.digest(),
        jws,
        key: signerKey,
        resolver: opts.resolver,
        verify: opts.metadata.verify,
        checkSigners: opts.checkSigners,
      }),
    );
    return { source, signing, inner: reader };
  } catch (err) {
    const source = (async function* () {
      for await (const _ of plain) void _;
      yield* []; // nothing of it is passed on
      throw err;
    })();
    return { source, signing: null, inner: r };
  }
}

/**
 * The signature of a SignedAndEnvelopedData (PKCS#7 version 1.5): over the plaintext, with the
 * signer's encrypted digest decrypted under the content key, its algorithms in the outer head
 * and its SignerInfos in the outer tail (`tail`, read once the content has been).
 */
function envelopeSignature(
  head: CmsHead,
  cc: ContentCipher,
  cmsKey: Buffer,
  b64: boolean,
  signerKey: ResolvedKey | null,
  opts: ConvertOptions,
  tail: () => CmsTail,
): Signing {
  const decryptSignature = (sig: Buffer) => {
    const d = createDecipheriv(cc.spec.cipher, asSecretKey(cmsKey), cc.iv);
    return Buffer.concat([d.update(sig), d.final()]);
  };
  return resigning(head, b64, async (digests, jws) =>
    finishSignature({
      tail: tail(),
      eContentType: head.contentType,
      digests: digests.digest(),
      jws,
      key: signerKey,
      resolver: opts.resolver,
      verify: opts.metadata.verify,
      checkSigners: opts.checkSigners,
      decryptSignature,
    }),
  );
}

/**
 * The content digested for the CMS signature and spooled for its JWS as it passes; `finish`
 * checks the one and makes the other once the content has been read.
 */
function resigning(
  head: Pick<CmsHead, 'digestAlgorithms'>,
  b64: boolean,
  finish: (digests: ContentDigests, jws: SpooledJwsSigner) => Promise<DetachedJws | GeneralJws>,
): Signing {
  const digests = new ContentDigests(head.digestAlgorithms.map((a) => a.algorithm));
  const jws = new SpooledJwsSigner({ b64 });
  return {
    update: (c) => {
      digests.update(c);
      return jws.update(c);
    },
    close: () => jws.close(),
    finish: () => finish(digests, jws),
  };
}

/**
 * The multipart detached JWE: its header, the content encrypted as it is pulled, the JWE tag
 * only once the CMS signature, padding and tag checked out, and the JWS of the signature last.
 */
function jweAnswer(
  reader: BerReader,
  plaintext: Plaintext,
  o: {
    protectedB64: string;
    recipients: unknown[];
    rejected: Error | undefined;
    outcome: DecryptionOutcome;
  },
): ConvertResult {
  const { encryptor, source, signing: sign, inner, ending } = plaintext;
  const { rejected, outcome } = o;
  const header = JSON.stringify({
    protected: o.protectedB64,
    recipients: o.recipients,
    iv: encryptor.iv.toString('base64url'),
  });
  const mp = new Multipart();
  async function* body(): AsyncGenerator<Buffer> {
    let done = false;
    try {
      yield Buffer.concat([mp.part(JOSE), Buffer.from(header), mp.part(OCTET)]);
      // With a signature to check, the last piece's output waits for it too: a bad padding and a
      // bad signature then end the answer at the same byte.
      // A signature that fails on the way is told at the end, where a bad padding is.
      let last: Buffer | null = null;
      let failed: { err: unknown } | null = null;
      for await (const chunk of source) {
        if (sign && !failed) {
          try {
            const pending = sign.update(chunk);
            if (pending) await pending;
          } catch (err) {
            failed = { err };
          }
        }
        const out = encryptor.update(chunk);
        if (sign && ending()) last = out;
        else if (out.length) yield out;
      }
      if (failed) throw failed.err;
      // A content key that stood in for one that could not be unwrapped fails here, at the end
      // like a bad padding, even when its garbage happened to pad well (1 in 256 for CBC).
      if (rejected) throw decryptionFailed(rejected);
      // The CMS signature, padding and tag are all checked before the JWE tag exists.
      const jws = sign ? await sign.finish() : null;
      const { rest, tag } = encryptor.final();
      yield Buffer.concat([...(last ? [last] : []), rest, tag]);
      if (jws) yield Buffer.concat([mp.part(JOSE), Buffer.from(JSON.stringify(jws))]);
      done = true;
      yield mp.close();
    } finally {
      if (!done) {
        await inner?.close().catch(() => {});
        await reader.close().catch(() => {});
        await sign?.close?.().catch(() => {});
      }
    }
  }
  async function* guarded(): AsyncGenerator<Buffer> {
    try {
      yield* body();
    } catch (err) {
      throw await outcome.failed(err);
    } finally {
      await outcome.ended();
    }
  }
  return {
    contentType: mp.contentType,
    body: plaintext.held ? heldToEnd(guarded()) : guarded(),
  };
}
