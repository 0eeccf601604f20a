/**
 * The one way the CLI writes a file: whole or not at all. The bytes go to a temporary name in
 * the same directory (so the rename stays on one filesystem and is atomic, POSIX rename(2)), which
 * is renamed over the destination only once everything was written; a failure removes it. A
 * command that fails halfway (a refused request, a tag that does not verify, a full disk) leaves
 * the destination as it was, never an empty or partial file under its name.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** The suffix of the temporary names: a directory walk (`keyward migrate`) skips them. */
export const PARTIAL_SUFFIX = '.part';

/** What can be written: bytes, text, or a stream of bytes (read once). */
export type Content = string | Uint8Array | AsyncIterable<Uint8Array> | Readable;

/**
 * Writes `content` to `path` through a temporary name beside it, renamed on success; answers the
 * bytes written. `mode` (e.g. 0o600 for secrets and key material) is the temporary file's from its
 * creation (the umask can only narrow it), and exactly it before the rename.
 */
export async function writeWhole(
  path: string,
  content: Content,
  opts: { mode?: number } = {},
): Promise<number> {
  const temp = join(
    dirname(path),
    `.${basename(path)}.${process.pid}-${randomBytes(4).toString('hex')}${PARTIAL_SUFFIX}`,
  );
  let bytes = 0;
  const source =
    typeof content === 'string' || content instanceof Uint8Array
      ? Readable.from([Buffer.from(content)])
      : content;
  try {
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<Uint8Array>) {
        for await (const chunk of chunks) {
          bytes += chunk.length;
          yield chunk;
        }
      },
      createWriteStream(temp, { flags: 'wx', mode: opts.mode ?? 0o666 }),
    );
    // The umask may have narrowed the mode asked for; a secret's file gets exactly it.
    if (opts.mode !== undefined) await chmod(temp, opts.mode);
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  return bytes;
}
