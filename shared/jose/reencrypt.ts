/**
 * Stream re-encryption of a convert result: the multipart/mixed detached JWE comes
 * in as convert wrote it and goes out in the same layout for the target key.
 *
 * By default only the content key is re-wrapped and the ciphertext passes through byte for byte;
 * its tag is still checked on the way (with the content key the source key opened), so a
 * ciphertext that does not belong to the header, or a wrong source key, cuts the answer before
 * the tag and the closing delimiter. With rotateContentKey the content is decrypted and
 * encrypted again under a fresh key with AES-GCM of the same key size (RFC 7518 section 5.3);
 * the old tag is checked before the new one is given out, so nothing whole leaves unchecked.
 * A trailing JWS part (EnvelopedData of SignedData) covers the plaintext and passes unchanged.
 */
import { createDecipheriv, timingSafeEqual } from 'node:crypto';
import { asSecretKey } from '../crypto/secret-key.ts';
import type { Decipheriv, DecipherGCM } from 'node:crypto';
import { AppError, decryptionFailed, problem } from '../errors/index.ts';
import { ENCS, Multipart, cbcHsTag, gcmEncryptor, protectedHeader } from './jwe.ts';
import type { ContentEncryptor } from './jwe.ts';
import { keyByKid, unwrapContentKey, wrapContentKey } from './keys.ts';
import type { MixedReader } from './mixed-reader.ts';
import type { KidResolver, ResolvedKey } from './types.ts';

const JOSE = 'application/jose+json';
const OCTET = 'application/octet-stream';
const SMALL_PART = 64 * 1024;

export interface ReencryptOptions {
  resolver: KidResolver;
  /** Who the new JWE is for. */
  targetKid: string;
  rotateContentKey: boolean;
}

export interface ReencryptResult {
  contentType: string;
  sourceKid: string;
  body: AsyncIterable<Buffer>;
}

const malformed = (why: string) => problem('jose_malformed', why);

function b64u(v: unknown, what: string): Buffer {
  if (typeof v !== 'string' || !/^[A-Za-z0-9_-]*$/.test(v))
    throw malformed(`${what} is not base64url`);
  return Buffer.from(v, 'base64url');
}

interface JweHead {
  protectedB64: string;
  enc: string;
  /** One per recipient, in order: the joint header (protected and per-recipient) and its key. */
  recipients: Array<{ header: Record<string, unknown>; encryptedKey: Buffer }>;
  iv: Buffer;
}

/** At most this many recipients are read (what convert writes for a targetKid list). */
const MAX_RECIPIENTS = 16;

/** Part 1 of the layout: `{protected, recipients: [...], iv}` (RFC 7516 section 7.2.1). */
function parseHead(data: Buffer): JweHead {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(data.toString('utf8'));
  } catch {
    throw malformed('the first part is not JSON');
  }
  if (!o || typeof o !== 'object' || Array.isArray(o))
    throw malformed('the first part is not a JSON object');
  if (o.aad !== undefined || o.unprotected !== undefined)
    throw problem('jose_unsupported', 'aad and unprotected headers are not supported');
  const recipients = o.recipients;
  if (!Array.isArray(recipients) || recipients.length < 1 || recipients.length > MAX_RECIPIENTS)
    throw problem('jose_unsupported', `1 to ${MAX_RECIPIENTS} recipients are supported`);
  let prot: Record<string, unknown>;
  try {
    prot = JSON.parse(b64u(o.protected, 'protected').toString('utf8'));
  } catch (err) {
    throw (err as { code?: string }).code
      ? err
      : malformed('protected is not a base64url JSON object');
  }
  if (!prot || typeof prot !== 'object') throw malformed('protected is not a JSON object');
  // RFC 7516 section 4.1.13: a crit we do not understand, or compression, cannot be honoured.
  if (prot.zip !== undefined || prot.crit !== undefined)
    throw problem('jose_unsupported', 'zip and crit are not supported');
  const enc = String(prot.enc);
  // hasOwn: the header is the sender's, and "constructor" must not find Object's.
  if (!ENCS.has(enc)) throw problem('jose_unsupported', `enc ${enc.slice(0, 32)} is not supported`);
  return {
    protectedB64: o.protected as string,
    enc,
    recipients: recipients.map((x: unknown) => {
      const r = (x ?? {}) as Record<string, unknown>;
      const header = { ...prot, ...((r.header as Record<string, unknown>) ?? {}) };
      if (typeof header.kid !== 'string' || !header.kid)
        throw malformed('a recipient names no kid');
      return { header, encryptedKey: b64u(r.encrypted_key, 'encrypted_key') };
    }),
    iv: b64u(o.iv, 'iv'),
  };
}

/**
 * The first recipient, in order, whose key the tenant holds, chosen by kid alone (nothing is
 * tried, so a failure says nothing of which recipient it was); none: the last one's key-not-found.
 */
async function heldRecipient(
  head: JweHead,
  resolver: ReencryptOptions['resolver'],
): Promise<{ recipient: JweHead['recipients'][number]; source: ResolvedKey }> {
  for (const [i, recipient] of head.recipients.entries()) {
    try {
      const source = await keyByKid(resolver, recipient.header.kid as string, 'encrypt');
      return { recipient, source };
    } catch (err) {
      if (i === head.recipients.length - 1 || (err as { code?: string }).code !== 'key_not_found')
        throw err;
    }
  }
  throw new Error('unreachable: a head has at least one recipient');
}

/** Checks (and on rotation decrypts) the old ciphertext as it streams by; final() checks the tag. */
interface Opener {
  update(ct: Buffer): Buffer;
  final(tag: Buffer): Buffer;
}

function opener(head: JweHead, cek: Buffer, wantPlaintext: boolean): Opener {
  const spec = ENCS.get(head.enc)!;
  const aad = Buffer.from(head.protectedB64, 'ascii');
  const cbc = spec.cbc;
  if (!cbc) {
    if (head.iv.length !== 12) throw malformed('a GCM iv has 96 bits');
    const d = createDecipheriv(
      `aes-${cek.length * 8}-gcm`,
      asSecretKey(cek),
      head.iv,
    ) as DecipherGCM;
    d.setAAD(aad);
    return {
      update: (ct) => d.update(ct),
      final(tag) {
        try {
          d.setAuthTag(tag);
          return d.final();
        } catch (err) {
          throw decryptionFailed(err);
        }
      },
    };
  }
  // RFC 7518 section 5.2.2.2: MAC_KEY then ENC_KEY; the tag is HMAC(AAD || IV || C || AL) cut in half.
  if (head.iv.length !== 16) throw malformed('a CBC iv has 128 bits');
  const half = cek.length / 2;
  const mac = cbcHsTag(cbc.hash, cek.subarray(0, half), aad, head.iv);
  const d: Decipheriv | null = wantPlaintext
    ? createDecipheriv(`aes-${cbc.bits}-cbc`, asSecretKey(cek.subarray(half)), head.iv)
    : null;
  return {
    update(ct) {
      mac.update(ct);
      return d ? d.update(ct) : ct;
    },
    final(tag) {
      const expected = mac.tag();
      if (tag.length !== expected.length || !timingSafeEqual(tag, expected))
        throw decryptionFailed(new Error('CBC-HS tag mismatch'));
      try {
        return d ? d.final() : Buffer.alloc(0);
      } catch (err) {
        throw decryptionFailed(err);
      }
    },
  };
}

/** Reads part 1, opens the content key, and returns the streamed answer for the target key. */
export async function reencryptStream(
  reader: MixedReader,
  opts: ReencryptOptions,
): Promise<ReencryptResult> {
  const first = await reader.nextSmall(SMALL_PART);
  if (!first || first.contentType.split(';')[0] !== JOSE)
    throw malformed('the first part must be application/jose+json');
  const head = parseHead(first.data);
  const spec = ENCS.get(head.enc)!;
  const { recipient: from, source } = await heldRecipient(head, opts.resolver);
  const target = await keyByKid(opts.resolver, opts.targetKid, 'encrypt');
  // Re-encrypting opens the content key: the caller must be admitted to decrypt with the source.
  // Its point of the budget is kept on a failed decryption and given back otherwise.
  await opts.resolver.admitDecryption?.(source.kid);
  let settled = false;
  const settle = async (failed: boolean) => {
    if (settled) return;
    settled = true;
    const r = opts.resolver;
    await (failed ? r.decryptionFailed?.(source.kid) : r.decryptionSucceeded?.(source.kid))?.catch(
      () => {},
    );
  };
  let cek: Buffer;
  let second: Awaited<ReturnType<MixedReader['next']>>;
  let open: Opener;
  let fresh: ContentEncryptor | null;
  let recipient: ReturnType<typeof wrapContentKey>;
  const rotate = opts.rotateContentKey;
  const protectedB64 = rotate ? protectedHeader(spec.gcm) : head.protectedB64;
  try {
    cek = unwrapContentKey(source, from.header, from.encryptedKey, spec.cek, head.enc);
    second = await reader.next();
    if (!second || second.contentType.split(';')[0] !== OCTET)
      throw malformed('the second part must be application/octet-stream');
    open = opener(head, cek, rotate);
    fresh = rotate ? gcmEncryptor(spec.gcm, Buffer.from(protectedB64, 'ascii')) : null;
    recipient = wrapContentKey(
      target,
      fresh ? fresh.cek : cek,
      undefined,
      rotate ? spec.gcm : head.enc,
    );
  } catch (err) {
    await settle(false); // a key of the wrong kind or a malformed form: nothing was decrypted
    throw err;
  }
  const header = JSON.stringify({
    protected: protectedB64,
    recipients: [recipient],
    iv: (fresh ? fresh.iv : head.iv).toString('base64url'),
  });
  const mp = new Multipart();
  const tagBytes = spec.tag;

  async function* body(): AsyncGenerator<Buffer> {
    let done = false;
    try {
      yield Buffer.concat([mp.part(JOSE), Buffer.from(header), mp.part(OCTET)]);
      // The tag is the last tagBytes of the part; everything before it is ciphertext.
      let tail: Buffer = Buffer.alloc(0);
      for await (const chunk of second!.body) {
        let ct: Buffer;
        if (chunk.length >= tagBytes) {
          ct = tail.length
            ? Buffer.concat([tail, chunk.subarray(0, chunk.length - tagBytes)])
            : chunk.subarray(0, chunk.length - tagBytes);
          tail = chunk.subarray(chunk.length - tagBytes);
        } else {
          const all = Buffer.concat([tail, chunk]);
          ct = all.subarray(0, Math.max(0, all.length - tagBytes));
          tail = all.subarray(ct.length);
        }
        if (!ct.length) continue;
        const plain = open.update(ct);
        const next = fresh ? fresh.update(plain) : ct;
        if (next.length) yield next;
      }
      if (tail.length !== tagBytes)
        throw decryptionFailed(new Error('the ciphertext part is shorter than a tag'));
      // The old tag is checked before the new one (or the old one, passed on) leaves.
      const lastPlain = open.final(tail);
      if (fresh) {
        const rest = fresh.update(lastPlain);
        const fin = fresh.final();
        yield Buffer.concat([rest, fin.rest, fin.tag]);
      } else {
        yield tail;
      }
      const third = await reader.nextSmall(SMALL_PART);
      if (third) {
        if (third.contentType.split(';')[0] !== JOSE)
          throw malformed('a third part must be the application/jose+json JWS');
        if ((await reader.next()) !== null) throw malformed('more parts than convert writes');
        yield Buffer.concat([mp.part(JOSE), third.data]);
      }
      done = true;
      yield mp.close();
    } catch (err) {
      await settle(err instanceof AppError && err.code === 'decryption_failed');
      throw err;
    } finally {
      await settle(false);
      if (!done) await reader.close().catch(() => {});
    }
  }
  return { contentType: mp.contentType, sourceKid: source.kid, body: body() };
}
