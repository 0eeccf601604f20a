/**
 * convertPkcs7ToJose: the streaming PKCS#7/CMS to JOSE conversion of contract section 5.
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
import { createDecipheriv, createSecretKey } from 'node:crypto';
import { BerReader } from '../asn1/ber-reader.ts';
import { readHead, readTail, signedContent } from './cms-structure.ts';
import { certificatesJwkSet } from './certificates.ts';
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
import { OID, oidName } from '../asn1/oids.ts';
import { openContentKey } from './recipients.ts';
import { checkTargetKids, chooseRecipient, targetKeysOf } from './recipient-choice.ts';
import { openContainer } from './container.ts';
import { looksLikeHeader } from '../mime/entity.ts';
import { clearSignedVerifier, convertClearSigned, looksLikeClearSigned } from './clear-signed.ts';
import { once, Peekable } from './peekable.ts';
import { checkNesting } from './nesting.ts';
import { finishSignature, signedResult, signerKeyOf } from './resigning.ts';
import { ContentDigests, describeSigner } from './signers.ts';
import type { ConvertMetadata, ConvertOptions, ConvertResult } from './types.ts';
import { AppError, decryptionFailed, problem } from '../errors/index.ts';

const OCTET = 'application/octet-stream';
const JOSE = 'application/jose+json';
const ENCS = new Set(['A128GCM', 'A192GCM', 'A256GCM', 'preserve']);
/** How much decrypted content is looked at for a clear-signed entity's header block. */
const CLEAR_SIGNED_PEEK = 16 * 1024;

async function* buffers(input: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  for await (const c of input)
    yield Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
}

/**
 * True when the decrypted content starts a clear-signed entity. Only as much is read ahead as
 * needed: 24 bytes decide for binary content (so a small bad ciphertext still fails in the body,
 * as any other), a header block is read up to its blank line, at most CLEAR_SIGNED_PEEK.
 */
async function clearSignedAhead(plain: Peekable): Promise<boolean> {
  if (!looksLikeHeader(await plain.peek(24))) return false;
  for (const n of [1024, CLEAR_SIGNED_PEEK]) {
    const head = await plain.peek(n);
    if (/\r?\n\r?\n/.test(head.toString('latin1')) || head.length < n)
      return looksLikeClearSigned(head);
  }
  return false;
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

function checkMetadata(m: ConvertMetadata): void {
  if (m.contentEncryption !== undefined && !ENCS.has(m.contentEncryption)) {
    throw problem(
      'cms_bad_metadata',
      'contentEncryption must be A128GCM, A192GCM, A256GCM or preserve',
    );
  }
  if (m.b64 !== undefined && typeof m.b64 !== 'boolean')
    throw problem('cms_bad_metadata', 'b64 must be a boolean');
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

/** What is needed to verify the CMS signer and re-sign at the end of the content. */
interface Signing {
  /** Takes the next content chunk (a promise when the chunk goes to a reader beside the JWE). */
  update(chunk: Buffer): void | Promise<void>;
  finish(): Promise<DetachedJws | GeneralJws>;
  /** Drops what was spooled for the JWS, when the answer ends before finish. */
  close?(): Promise<void>;
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
    // A certificates-only SignedData (.p7b) signs nothing: its certificates as a JWK Set (contract 10).
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
      });
    } finally {
      await jws.close();
    }
  }
  return signedResult(run(), opts.withContent === true, () => reader.close());
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

async function convertEnveloped(
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
  if (
    preserve &&
    (head.type !== 'envelopedData' || cc.spec.aesBits === 0 || head.contentType === OID.signedData)
  ) {
    throw problem(
      'cms_unsupported',
      'preserve keeps only the AES-CBC ciphertext of an EnvelopedData holding data',
    );
  }
  // Everything the plaintext does not decide is settled before the content key is opened, so
  // its problems stay specific: keys, target, key management, the signer of a
  // SignedAndEnvelopedData (its algorithms are in the outer head).
  const { ri, key: recipientKey } = await chooseRecipient(head.recipientInfos, resolver, {
    recipientKid: metadata.recipientKid,
    password:
      metadata.password === undefined ? undefined : createSecretKey(metadata.password, 'utf8'),
  });
  const targets = await targetKeysOf(resolver, metadata.targetKid, recipientKey);
  // One content key, wrapped for each target (RFC 7516 section 7.2.1, one recipient each).
  const wrapFor = (cek: Buffer) =>
    targets.map((t) => wrapContentKey(t, cek, metadata.keyManagement ?? defaultKeyManagement(t)));
  const signerKey = await signerKeyOf(opts);
  const b64 = metadata.b64 ?? false;
  const enc: JweEnc = preserve
    ? preservingEnc(cc.spec.keyLength)
    : ((metadata.contentEncryption as JweEnc | undefined) ??
      (cc.spec.aesBits ? (`A${cc.spec.aesBits}GCM` as JweEnc) : 'A256GCM'));
  const aad = Buffer.from(protectedHeader(enc), 'ascii');
  const fresh = preserve ? null : gcmEncryptor(enc, aad);
  // A target or key management that cannot carry the JWE key is a plain problem, found now.
  let recipients = wrapFor(fresh ? fresh.cek : Buffer.alloc(2 * cc.spec.keyLength));
  let seSigner: { jws: SpooledJwsSigner } | null = null;
  if (head.type === 'signedAndEnvelopedData') seSigner = { jws: new SpooledJwsSigner({ b64 }) };

  const kid = recipientKey.kid;
  const { cek: cmsKey, rejected } = await openContentKey(
    ri,
    recipientKey,
    resolver,
    cc.spec.keyLength,
  );
  // From here on the plaintext is read: every failure of it is the one opaque decryption-failed,
  // and every failure at all keeps the reserved point of the caller's budget. A failure of the
  // ciphertext's own framing (truncation, a broken PEM or MIME wrapper, a bad tail) keeps its
  // problem, as it says nothing the caller did not send, but is counted too: which comes first,
  // it or a failure inside a nested plaintext, can depend on the plaintext. Only an input that
  // broke off (the client or the storage went away: not an AppError) is no answer and not counted.
  let settled = false;
  const opaque = async (err: unknown): Promise<unknown> => {
    if (settled) return err;
    settled = true;
    const framing = err !== null && typeof err === 'object' && outerErrors.has(err);
    if (framing && !(err instanceof AppError)) {
      await resolver.decryptionSucceeded?.(kid).catch(() => {});
      return err;
    }
    await resolver.decryptionFailed?.(kid).catch(() => {});
    if (framing) return err;
    return decryptionFailed(rejected ? new Error(rejected.message, { cause: err }) : err);
  };

  let encryptor: ContentEncryptor;
  let source: AsyncIterable<Buffer>;
  let signing: Signing | null = null;
  let inner: BerReader | null = null;
  /** Set just before the last piece of plaintext is handed on, once padding and tag checked out. */
  let finalReached = false;
  try {
    if (preserve) {
      // The ciphertext is kept as it is, whatever it holds: nothing of the plaintext is looked at
      // before the end, where the final block's padding is checked (a nested SignedData stays
      // inside, unverified, as preserve means).
      encryptor = cbcPassThrough(cmsKey, cc.iv, aad);
      recipients = wrapFor(encryptor.cek);
      source = (async function* () {
        yield* outer(reader.octets(head.content!));
        await outerStep(readTail(reader, head));
      })();
    } else {
      encryptor = fresh!;
      const decipher = contentDecipher(cc, cmsKey);
      let outerTail: CmsTail | null = null;
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
      );
      const nested =
        head.type !== 'signedAndEnvelopedData' &&
        (head.contentType === OID.signedData ||
          (head.contentType === OID.data && looksLikeSignedData(await plain.peek(24))));
      if (nested) {
        const r = (inner = new BerReader(plain));
        try {
          const innerHead = await readHead(r);
          if (innerHead.type !== 'signedData' || !innerHead.content)
            throw problem(
              'cms_unsupported',
              'the encrypted content is not a SignedData with its content',
            );
          const content = new Peekable(r.octets(innerHead.content));
          // Found in the plaintext, so told at the end as every failure of it is (contract 10).
          await checkNesting(content, 2);
          source = (async function* () {
            try {
              yield* content;
            } catch (err) {
              // A failure inside the nested content is told at the end too.
              for await (const _ of plain) void _;
              throw err;
            }
          })();
          const digests = new ContentDigests(innerHead.digestAlgorithms.map((a) => a.algorithm));
          const jws = new SpooledJwsSigner({ b64 });
          signing = {
            update: (c) => {
              digests.update(c);
              return jws.update(c);
            },
            close: () => jws.close(),
            finish: async () =>
              finishSignature({
                tail: await readTail(r, innerHead),
                eContentType: innerHead.contentType,
                digests: digests.digest(),
                jws,
                key: signerKey,
                resolver,
                verify: metadata.verify,
              }),
          };
        } catch (err) {
          // Told at the end, as every other failure is: the rest is read (and its padding
          // checked) without passing anything on.
          source = (async function* () {
            for await (const _ of plain) void _;
            yield* []; // nothing of it is passed on
            throw err;
          })();
        }
      } else {
        source = plain;
        if (
          head.type !== 'signedAndEnvelopedData' &&
          head.contentType === OID.data &&
          (await clearSignedAhead(plain))
        ) {
          // Signed-then-encrypted mail (RFC 8551 section 3.7): the JWE holds the clear-signed
          // entity as the CMS carries it; its signature is verified and a JWS of the signed part
          // is added as for a nested SignedData (contract 5).
          signing = clearSignedVerifier(opts);
        } else if (seSigner) {
          const { jws } = seSigner;
          const digests = new ContentDigests(head.digestAlgorithms.map((a) => a.algorithm));
          const decryptSignature = (sig: Buffer) => {
            const d = createDecipheriv(cc.spec.cipher, cmsKey, cc.iv);
            return Buffer.concat([d.update(sig), d.final()]);
          };
          signing = {
            update: (c) => {
              digests.update(c);
              return jws.update(c);
            },
            close: () => jws.close(),
            finish: async () =>
              finishSignature({
                tail: outerTail!,
                eContentType: head.contentType,
                digests: digests.digest(),
                jws,
                key: signerKey,
                resolver,
                verify: metadata.verify,
                decryptSignature,
              }),
          };
        }
      }
    }
  } catch (err) {
    throw await opaque(err);
  }

  const header = JSON.stringify({
    protected: protectedHeader(enc),
    recipients,
    iv: encryptor.iv.toString('base64url'),
  });
  const mp = new Multipart();
  const innerReader = inner as BerReader | null;
  const sign = signing as Signing | null;
  const ending = () => finalReached;
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
        await innerReader?.close().catch(() => {});
        await reader.close().catch(() => {});
        await signing?.close?.().catch(() => {});
      }
    }
  }
  async function* guarded(): AsyncGenerator<Buffer> {
    try {
      yield* body();
    } catch (err) {
      throw await opaque(err);
    } finally {
      // Completed, or left by the client before its end: no failure to count, the point goes back.
      if (!settled) {
        settled = true;
        await resolver.decryptionSucceeded?.(kid).catch(() => {});
      }
    }
  }
  return { contentType: mp.contentType, body: guarded() };
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

/** Converts a PKCS#7/CMS stream into a detached JWS or a multipart detached JWE (contract section 5). */
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
