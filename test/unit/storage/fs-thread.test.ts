/**
 * The local store's file thread: a small put or read is one request to it, answered with what
 * the fs calls gave (the mtime, the bytes, 'large', or the error's code), and a thread that cannot
 * start or dies answers null, so the store does the work through fs/promises instead.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsThread, type FsThreadAnswer } from '../../../shared/storage/fs-thread.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyward-fs-thread-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Bytes in a block of their own, as the store sends them (a pooled Buffer cannot be moved). */
function own(text: string): Buffer {
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  b.write(text);
  return b;
}

const failure = (a: FsThreadAnswer | null) => (a && 'error' in a ? a.error.code : null);

describe('the file thread', () => {
  const thread = new FsThread();

  it('when a small object is put, then it is written through a temp file into new directories and read back whole', async () => {
    const temp = join(dir, 'staging', 't1.part');
    const file = join(dir, 'a', 'b', 'object');
    const put = await thread.ask({
      op: 'put',
      temp,
      file,
      bytes: own('hello'),
      fsync: true,
    });
    expect(put && 'mtimeMs' in put && put.mtimeMs).toBeGreaterThan(0);
    expect(readFileSync(file, 'utf8')).toBe('hello');
    expect(readdirSync(join(dir, 'staging'))).toEqual([]);
    const read = await thread.ask({ op: 'read', file, maxBytes: 1024 });
    expect(read && 'bytes' in read && Buffer.from(read.bytes).toString()).toBe('hello');
  });

  it('when a read finds a larger file, a directory or nothing, then it says large, EISDIR or ENOENT', async () => {
    const big = join(dir, 'big');
    writeFileSync(big, Buffer.alloc(2048));
    expect(await thread.ask({ op: 'read', file: big, maxBytes: 1024 })).toMatchObject({
      large: true,
    });
    expect(failure(await thread.ask({ op: 'read', file: dir, maxBytes: 1024 }))).toBe('EISDIR');
    expect(failure(await thread.ask({ op: 'read', file: join(dir, 'none'), maxBytes: 1024 }))).toBe(
      'ENOENT',
    );
  });

  it('when a put cannot rename into place, then the error code comes back and no temp file is left', async () => {
    writeFileSync(join(dir, 'plain-file'), 'x');
    const temp = join(dir, 'staging', 't2.part');
    const a = await thread.ask({
      op: 'put',
      temp,
      file: join(dir, 'plain-file', 'under-a-file'),
      bytes: own('y'),
      fsync: false,
    });
    expect(failure(a)).toBe('ENOTDIR');
    expect(existsSync(temp)).toBe(false);
  });

  it('when the thread cannot start, then every request answers null at once, for the store to do it itself', async () => {
    const broken = new FsThread(new URL('./no-such-thread.ts', import.meta.url));
    const call = { op: 'read', file: join(dir, 'big'), maxBytes: 1024 } as const;
    expect(await broken.ask(call)).toBeNull();
    expect(await broken.ask(call)).toBeNull();
  });
});
