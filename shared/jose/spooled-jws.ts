/**
 * The JWS of a SignedData conversion. Its protected header records the original
 * signers, who are only known from the SignerInfos after the content, and its signing keys (the
 * archive key, or each signer's own) decide the algs; a JWS signing input starts with that header.
 * So the content is spooled as it streams (memory up to SPOOL_MEMORY, then an unlinked file of
 * this user's private temp directory) and signed once the header is known: constant memory, one
 * write and one read of the content on disk, and an alg that follows the key, never the input.
 */
import { open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { constants, createSign, sign as signOneShot } from 'node:crypto';
import type { Sign } from 'node:crypto';
import {
  EDDSA_CAP,
  SigningInputEncoder,
  holdsInput,
  type DetachedJws,
  type JwsAlg,
} from './jws.ts';
import { versionedKid } from './kid.ts';
import type { ResolvedKey } from './types.ts';
import { privateTempDir } from '../private-dir.ts';
import { problem } from '../errors/index.ts';

/** Content held in memory before it goes to the spool file. */
export const SPOOL_MEMORY = 1024 * 1024;
/**
 * Bytes per write to and read from the spool file. Two buffers of this size alternate each way,
 * so the content streams on while the last megabyte is written, and the signing pass hashes one
 * megabyte while the next is read: awaiting each ~112 KiB write before parsing on made the spool
 * the longest stretch of a SignedData conversion (bench/results/design-figures.md).
 */
const SPOOL_IO = 1024 * 1024;

/** A JWS in the General JSON Serialization with a detached payload (RFC 7515 section 7.2.1). */
export interface GeneralJws {
  signatures: DetachedJws[];
}

/** One signature to make: the key and its alg. */
export interface JwsSigning {
  key: ResolvedKey;
  alg: JwsAlg;
}

const HASH: Record<string, string> = { '256': 'sha256', '384': 'sha384', '512': 'sha512' };

/** Spools streamed content, then signs it with one or more keys under a header known at the end. */
export class SpooledJwsSigner {
  readonly b64: boolean;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #file: FileHandle | null = null;
  /** Bytes handed to writes of the spool file. */
  #size = 0;
  /** The buffer being filled, how much of it is, and the other one (written, or free). */
  #fill: Buffer | null = null;
  #filled = 0;
  #spare: Buffer | null = null;
  /** The write in flight (its failure is rethrown by the next wait). */
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(opts: { b64: boolean }) {
    this.b64 = opts.b64;
  }

  /** Takes the next content bytes (copied: the caller may reuse its buffer once this settles). */
  async update(chunk: Buffer): Promise<void> {
    if (this.#closed) throw new Error('the spool is closed');
    if (!this.#file && this.#heldBytes + chunk.length <= SPOOL_MEMORY) {
      this.#held.push(Buffer.from(chunk));
      this.#heldBytes += chunk.length;
      return;
    }
    if (!this.#file) {
      const file = await openSpool();
      // Closed while the file was opened (an aborted request): close() saw no file to close.
      if (this.#closed) {
        await file.close();
        throw new Error('the spool is closed');
      }
      this.#file = file;
      this.#fill = Buffer.allocUnsafeSlow(SPOOL_IO);
      const held = this.#held;
      this.#held = [];
      for (const b of held) await this.#stage(b);
    }
    await this.#stage(chunk);
  }

  /** Copies bytes into the buffer being filled; a full one starts its write. */
  async #stage(bytes: Buffer): Promise<void> {
    for (let at = 0; at < bytes.length;) {
      const n = bytes.copy(this.#fill!, this.#filled, at);
      this.#filled += n;
      at += n;
      if (this.#filled === SPOOL_IO) await this.#startWrite();
    }
  }

  /** Waits for the write in flight, then writes the filled buffer and fills the other. */
  async #startWrite(): Promise<void> {
    await this.#writing;
    const full = this.#fill!;
    const write = writeAll(this.#file!, full.subarray(0, this.#filled), this.#size);
    // Awaited by the next wait; marked handled so a failure waits for it rather than the process.
    write.catch(() => {});
    this.#writing = write;
    this.#size += this.#filled;
    this.#fill = this.#spare ?? Buffer.allocUnsafeSlow(SPOOL_IO);
    this.#spare = full;
    this.#filled = 0;
  }

  async *#content(): AsyncGenerator<Buffer> {
    if (!this.#file) {
      yield* this.#held;
      return;
    }
    if (this.#filled > 0) await this.#startWrite();
    await this.#writing;
    const file = this.#file;
    const size = this.#size;
    const bufs = [this.#fill!, this.#spare ?? Buffer.allocUnsafeSlow(SPOOL_IO)];
    const readAt = async (pos: number, buf: Buffer): Promise<number> => {
      const { bytesRead } = await file.read(buf, 0, Math.min(SPOOL_IO, size - pos), pos);
      if (bytesRead === 0) throw new Error('the spool file is shorter than written');
      return bytesRead;
    };
    // One read ahead: the next megabyte is read while this one is hashed.
    let next = readAt(0, bufs[0]);
    for (let pos = 0, i = 0; pos < size; i ^= 1) {
      const n = await next;
      pos += n;
      if (pos < size) {
        next = readAt(pos, bufs[i ^ 1]);
        next.catch(() => {});
      }
      yield bufs[i].subarray(0, n);
    }
  }

  /**
   * Signs the spooled content once per key, every signature under a protected header of its alg,
   * kid and `header`: the flattened form for one signature, the General JSON form for several.
   */
  async finish(
    signings: JwsSigning[],
    header: Record<string, unknown>,
  ): Promise<DetachedJws | GeneralJws> {
    const parts = signings.map(({ key, alg }) => {
      const protectedB64 = Buffer.from(
        JSON.stringify({
          alg,
          kid: versionedKid(key.kid, key.version),
          ...(this.b64 ? {} : { b64: false, crit: ['b64'] }),
          ...header,
        }),
      ).toString('base64url');
      const prefix = Buffer.from(`${protectedB64}.`, 'ascii');
      const s: {
        key: ResolvedKey;
        alg: JwsAlg;
        protectedB64: string;
        sign?: Sign;
        held?: Buffer[];
        n: number;
      } = { key, alg, protectedB64, n: 0 };
      if (holdsInput(alg)) s.held = [prefix];
      else (s.sign = createSign(HASH[alg.slice(2)])).update(prefix);
      return s;
    });
    const encoder = new SigningInputEncoder(this.b64);
    const feed = (data: Buffer) => {
      for (const p of parts) {
        if (p.sign) p.sign.update(data);
        else {
          p.n += data.length;
          if (p.n > EDDSA_CAP)
            throw problem(
              'cms_eddsa_too_large',
              `${p.alg} signs at most ${EDDSA_CAP} bytes of signing input; this content is larger`,
            );
          p.held!.push(Buffer.from(data));
        }
      }
    };
    for await (const chunk of this.#content()) feed(encoder.update(chunk));
    feed(encoder.final());
    const out = parts.map((p): DetachedJws => {
      const priv = p.key.privateKey!;
      let sig: Buffer;
      if (holdsInput(p.alg)) sig = signOneShot(null, Buffer.concat(p.held!), priv);
      else if (p.alg.startsWith('PS'))
        // RFC 7518 section 3.5: the salt is as long as the hash output.
        sig = p.sign!.sign({
          key: priv,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: Number(p.alg.slice(2)) / 8,
        });
      else if (p.alg.startsWith('ES')) sig = p.sign!.sign({ key: priv, dsaEncoding: 'ieee-p1363' });
      else sig = p.sign!.sign({ key: priv, padding: constants.RSA_PKCS1_PADDING });
      return { protected: p.protectedB64, signature: sig.toString('base64url') };
    });
    await this.close();
    return out.length === 1 ? out[0] : { signatures: out };
  }

  /** Drops the spool (idempotent). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#held = [];
    this.#fill = this.#spare = null;
    const f = this.#file;
    this.#file = null;
    await f?.close();
  }
}

/** An anonymous file: created 0600 in this user's private temp directory and unlinked at once. */
async function openSpool(): Promise<FileHandle> {
  const dir = privateTempDir('keyward-spool');
  if (!dir) throw problem('internal', 'no private temporary directory to spool the content in');
  const path = join(dir, randomUUID());
  const f = await open(path, 'wx+', 0o600);
  await unlink(path).catch(() => {});
  return f;
}

async function writeAll(f: FileHandle, b: Buffer, at: number): Promise<void> {
  for (let off = 0; off < b.length;) {
    const { bytesWritten } = await f.write(b, off, b.length - off, at + off);
    off += bytesWritten;
  }
}
