/**
 * The thread of the local object store's small files (shared/storage/fs-thread.ts): each request
 * is a whole put or a whole read done here with synchronous calls, one message each way, instead
 * of the four to six thread-pool requests the same work costs on the event loop's side.
 */
import { parentPort } from 'node:worker_threads';
import {
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import type { FsThreadAnswer, FsThreadRequest } from './fs-thread.ts';

const code = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code ?? '';

/** Opens a new temp file, making the staging directory when it is missing. */
function createTemp(temp: string): number {
  try {
    return openSync(temp, 'wx');
  } catch (err) {
    if (code(err) !== 'ENOENT') throw err;
    mkdirSync(path.dirname(temp), { recursive: true });
    return openSync(temp, 'wx');
  }
}

/** Renames into place, making the parent directories only when the rename finds them missing. */
function moveIntoPlace(temp: string, file: string): void {
  for (let attempt = 0; ; attempt++) {
    try {
      renameSync(temp, file);
      return;
    } catch (err) {
      if (code(err) !== 'ENOENT' || attempt >= 3) throw err;
    }
    mkdirSync(path.dirname(file), { recursive: true });
  }
}

function put(r: Extract<FsThreadRequest, { op: 'put' }>): FsThreadAnswer {
  const fd = createTemp(r.temp);
  let mtimeMs: number;
  try {
    const b = r.bytes;
    for (let at = 0; at < b.length;) at += writeSync(fd, b, at, b.length - at);
    if (r.fsync) fsyncSync(fd);
    mtimeMs = fstatSync(fd).mtimeMs;
  } catch (err) {
    closeSync(fd);
    unlinkSync(r.temp);
    throw err;
  }
  closeSync(fd);
  try {
    moveIntoPlace(r.temp, r.file);
  } catch (err) {
    try {
      unlinkSync(r.temp);
    } catch {
      // Gone already: nothing to clean.
    }
    throw err;
  }
  return { id: r.id, mtimeMs };
}

function read(r: Extract<FsThreadRequest, { op: 'read' }>): FsThreadAnswer {
  const fd = openSync(r.file, 'r');
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { id: r.id, error: { code: 'EISDIR', message: 'not a file' } };
    if (st.size > r.maxBytes) return { id: r.id, large: true };
    const bytes = Buffer.allocUnsafeSlow(st.size);
    let at = 0;
    while (at < st.size) {
      const n = readSync(fd, bytes, at, st.size - at, at);
      if (n === 0) break;
      at += n;
    }
    return { id: r.id, bytes: at === st.size ? bytes : bytes.subarray(0, at) };
  } finally {
    closeSync(fd);
  }
}

parentPort!.on('message', (r: FsThreadRequest) => {
  let answer: FsThreadAnswer;
  try {
    answer = r.op === 'put' ? put(r) : read(r);
  } catch (err) {
    answer = { id: r.id, error: { code: code(err), message: (err as Error).message } };
  }
  const transfer = 'bytes' in answer ? [answer.bytes.buffer as ArrayBuffer] : [];
  parentPort!.postMessage(answer, transfer);
});
