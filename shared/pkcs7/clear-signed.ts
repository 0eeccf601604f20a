/**
 * Clear-signed mail (RFC 1847, RFC 8551 section 3.5.3) to a detached JWS: the signed MIME entity
 * comes before the signature in the message, so it is hashed as it streams, with the digests its
 * micalg parameter names (all common ones when it names none), and spooled for the JWS, as for
 * an attached SignedData (shared/jose/spooled-jws.ts). The detached
 * SignedData that follows is then read, its signer verified over those digests, and the JWS
 * signed: over the signed entity's bytes exactly as the message carries them.
 */
import { BerReader } from '../asn1/ber-reader.ts';
import { OID, oidName } from '../asn1/oids.ts';
import type { DetachedJws } from '../jose/jws.ts';
import { SpooledJwsSigner, type GeneralJws } from '../jose/spooled-jws.ts';
import { problem } from '../errors/index.ts';
import { parseContentType } from '../mime/header-params.ts';
import { readHead, readTail } from './cms-structure.ts';
import { openContainer, type Container } from './container.ts';
import { finishSignature, signedResult, signerKeyOf } from './resigning.ts';
import { ContentDigests, describeSigner } from './signers.ts';
import type { ConvertOptions, ConvertResult } from './types.ts';

/** RFC 8551 section 3.5.3.2 micalg names, with the hash each sizes the JWS alg by. */
const MICALG = new Map<string, { oid: string; hash: string }>([
  ['sha-1', { oid: OID.sha1, hash: 'sha1' }],
  ['sha1', { oid: OID.sha1, hash: 'sha1' }],
  ['sha-224', { oid: OID.sha224, hash: 'sha224' }],
  ['sha-256', { oid: OID.sha256, hash: 'sha256' }],
  ['sha-384', { oid: OID.sha384, hash: 'sha384' }],
  ['sha-512', { oid: OID.sha512, hash: 'sha512' }],
]);
const FALLBACK = ['sha-256', 'sha-384', 'sha-512', 'sha-1'];

/** The digests to compute for a micalg list: the named ones, or every common one. */
export function micalgDigests(micalg: readonly string[] | undefined): {
  oids: string[];
  hashes: string[];
} {
  const known = (micalg ?? []).filter((m) => MICALG.has(m));
  const names = known.length ? known : FALLBACK;
  return {
    oids: names.map((n) => MICALG.get(n)!.oid),
    hashes: names.map((n) => MICALG.get(n)!.hash),
  };
}

/** Converts a multipart/signed container into the detached JWS of its signed entity. */
export async function convertClearSigned(
  container: Container,
  opts: ConvertOptions,
): Promise<ConvertResult> {
  if (opts.content) {
    await container.close().catch(() => {});
    throw problem(
      'cms_bad_metadata',
      'a content part was given for a clear-signed message, which carries its signed content',
    );
  }
  // multipart/signed carries a SignedData (checked when it is read): callers that route the
  // answer by input type (the jobs) learn it before the content streams.
  opts.onInputType?.('signedData');
  const reader = { close: async () => {} };
  // A failure while the entity streams (before the SignedData reader exists) still releases the input.
  return signedResult(resignClearSigned(container, opts, reader), opts.withContent === true, () =>
    reader.close().finally(() => container.close()),
  );
}

/**
 * Hashes the signed entity of a multipart/signed container, yielding it as it passes, verifies
 * its detached SignedData over it and returns the JWS over the same bytes. `handle.close` ends
 * the SignedData reader once it exists (a failure or an abandoned answer).
 */
export async function* resignClearSigned(
  container: Container,
  opts: ConvertOptions,
  handle: { close: () => Promise<void> },
): AsyncGenerator<Buffer, DetachedJws | GeneralJws> {
  const { oids } = micalgDigests(container.micalg);
  const key = await signerKeyOf(opts);
  const jws = new SpooledJwsSigner({ b64: opts.metadata.b64 ?? false });
  handle.close = () => jws.close();
  const digests = new ContentDigests(oids);
  for await (const chunk of container.signedContent!) {
    digests.update(chunk);
    await jws.update(chunk);
    yield chunk;
  }
  const reader = new BerReader(container.cms);
  handle.close = () => Promise.all([reader.close(), jws.close()]).then(() => {});
  const head = await readHead(reader);
  if (head.type !== 'signedData' || head.content)
    throw problem(
      'cms_multipart_signed_malformed',
      head.type !== 'signedData'
        ? `the signature part holds a ${head.type}, not a SignedData`
        : 'the signature part holds a SignedData with its own content; clear-signed mail signs the first part',
    );
  const tail = await readTail(reader, head);
  const computed = digests.digest();
  for (const s of tail.signers) {
    const signer = describeSigner(s);
    if (!signer.unsupported && !computed.has(signer.digestOid))
      throw problem(
        'cms_multipart_signed_malformed',
        `the signer digests with ${oidName(signer.digestOid)}, which the micalg parameter (${(container.micalg ?? []).join(',') || 'absent'}) does not name`,
      );
  }
  return await finishSignature({
    tail,
    eContentType: head.contentType,
    digests: computed,
    jws,
    key,
    resolver: opts.resolver,
    verify: opts.metadata.verify,
    checkSigners: opts.checkSigners,
  });
}

/** True when bytes start a MIME entity whose Content-Type is an S/MIME multipart/signed. */
export function looksLikeClearSigned(head: Buffer): boolean {
  const text = head.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  if (end === -1) return false;
  const block = text.slice(0, end).replace(/\r?\n[ \t]+/g, ' ');
  return /^content-type:[ \t]*multipart\/signed\b.*protocol="?application\/(x-)?pkcs7-signature/im.test(
    block,
  );
}

/**
 * True when bytes start a MIME entity holding an opaque-signed SignedData (RFC 8551 section
 * 3.5.2: application/pkcs7-mime with smime-type=signed-data), the form Outlook encrypts.
 */
export function looksLikeOpaqueSigned(head: Buffer): boolean {
  const text = head.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  if (end === -1) return false;
  const block = text.slice(0, end).replace(/\r?\n[ \t]+/g, ' ');
  const raw = /^content-type:[ \t]*(.*)$/im.exec(block)?.[1];
  const mt = raw === undefined ? undefined : parseContentType(raw.trim());
  return (
    mt !== undefined &&
    mt.type === 'application' &&
    (mt.subtype === 'pkcs7-mime' || mt.subtype === 'x-pkcs7-mime') &&
    mt.params['smime-type']?.toLowerCase() === 'signed-data'
  );
}

/**
 * Hands the chunks a producer already reads (the decrypted content on its way into the JWE) to
 * a pull-based reader running beside it, one chunk at a time: push waits until the reader took
 * the chunk, so nothing queues up. Once the reader is done (or failed), pushes are dropped.
 */
class Feed implements AsyncIterable<Buffer> {
  #waiting: ((r: IteratorResult<Buffer>) => void) | null = null;
  #taken: (() => void) | null = null;
  #pending: Buffer | null = null;
  #ended = false;
  #detached = false;

  /** Offers one chunk; resolves when the reader took it (or at once when it stopped reading). */
  push(chunk: Buffer): Promise<void> {
    if (this.#detached) return Promise.resolve();
    return new Promise((resolve) => {
      this.#taken = resolve;
      if (this.#waiting) {
        const w = this.#waiting;
        this.#waiting = null;
        this.#taken = null;
        w({ value: chunk, done: false });
        resolve();
      } else this.#pending = chunk;
    });
  }

  end(): void {
    this.#ended = true;
    this.#waiting?.({ value: undefined, done: true });
    this.#waiting = null;
  }

  /** The reader stopped: release a waiting producer and drop what comes. */
  detach(): void {
    this.#detached = true;
    this.#pending = null;
    this.#taken?.();
    this.#taken = null;
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: () => {
        if (this.#pending) {
          const c = this.#pending;
          this.#pending = null;
          const t = this.#taken;
          this.#taken = null;
          t?.();
          return Promise.resolve({ value: c, done: false });
        }
        if (this.#ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.#waiting = resolve));
      },
      return: () => {
        this.detach();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

/**
 * Verifies a clear-signed entity that arrives chunk by chunk (the plaintext of an EnvelopedData,
 * RFC 8551 section 3.7 signed-then-encrypted mail) and answers the JWS over its signed part.
 */
export function clearSignedVerifier(opts: ConvertOptions): {
  update(chunk: Buffer): Promise<void>;
  finish(): Promise<DetachedJws | GeneralJws>;
} {
  const feed = new Feed();
  const task = (async () => {
    try {
      const container = await openContainer(feed);
      if (!container.signedContent)
        throw problem('cms_malformed', 'the encrypted entity is not a clear-signed message');
      const handle = { close: async () => {} };
      const gen = resignClearSigned(container, opts, handle);
      try {
        for (let r = await gen.next(); ; r = await gen.next()) if (r.done) return r.value;
      } catch (err) {
        await handle.close().catch(() => {});
        throw err;
      }
    } finally {
      feed.detach();
    }
  })();
  // A failure is reported by finish (or by the next update); never unhandled meanwhile.
  let failed: unknown = null;
  task.catch((err: unknown) => (failed = err ?? new Error('clear-signed verification failed')));
  return {
    async update(chunk) {
      await feed.push(chunk);
      if (failed) throw failed;
    },
    async finish() {
      feed.end();
      return task;
    },
  };
}
