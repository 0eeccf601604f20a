/**
 * The many-files upload's storing: pairs of a key field and a file part read from a streamed
 * form, each file put into the tenant's storage. A small file (at most HELD_FILE_BYTES) is read
 * whole and its put runs while the next parts are read, up to PUTS_AT_ONCE at once, so a folder
 * of mail is not stored at the pace of one put (a temporary file, its fsync and a rename, or an
 * S3 request) after another. A larger file streams into storage straight from the request, once
 * the puts before it are done. The answer lists the files in request order; the same key twice
 * is stored one after the other, so the later part wins as it would alone.
 */
import type { ObjectStore } from '../../../shared/storage/index.ts';
import { problem } from '../../../shared/errors/index.ts';
import { InOrder } from '../../../shared/each-limited.ts';
import { holdHead } from '../../../shared/streams.ts';

/** Most files one request of the many-files upload stores. */
export const UPLOADS_PER_REQUEST = 10_000;
/** Longest object key a part names (the store refuses more than 1024 bytes itself). */
const MAX_KEY_BYTES = 4096;
/** A file part of at most this many bytes is held whole and stored beside the next ones. */
const HELD_FILE_BYTES = 1024 * 1024;
/** Puts of held files under way at once in one request. */
const PUTS_AT_ONCE = 8;

/** The parts of a streamed form, as the HTTP layer reads them. */
export interface FormParts {
  next(): Promise<{
    name: string;
    mimeType: string;
    body: AsyncIterable<Buffer>;
    text(maxBytes: number): Promise<string>;
  } | null>;
}

/** One stored file, as the answer lists it. */
export interface StoredFile {
  key: string;
  size: number;
}

/**
 * Stores every file of `form` (key field, then file part, repeated) in `objects`; `countIn`
 * counts a part's bytes as they are read and `onStored` hears of each file stored, in order, with
 * how many are stored so far. On
 * a failure every put already started is waited for (those that succeeded are reported stored)
 * and the earliest failure in request order is thrown.
 */
export async function storeFormFiles(
  form: FormParts,
  objects: ObjectStore,
  countIn: (body: AsyncIterable<Buffer>) => AsyncIterable<Buffer>,
  onStored: (file: StoredFile, count: number) => void,
): Promise<StoredFile[]> {
  const stored: StoredFile[] = [];
  const underWay = new Set<string>();
  const puts = new InOrder<{ asked: string; file: StoredFile }>(PUTS_AT_ONCE, ({ asked, file }) => {
    underWay.delete(asked);
    stored.push(file);
    onStored(file, stored.length);
  });
  const put = async (key: string, body: AsyncIterable<Buffer>, contentType: string) => {
    const info = await objects.put(key, body, { contentType });
    return { asked: key, file: { key: info.key, size: info.size } };
  };
  try {
    for (let part = await form.next(); part; part = await form.next()) {
      if (part.name !== 'key')
        throw problem('validation_failed', 'the form is pairs of a key field then its file part');
      const key = await part.text(MAX_KEY_BYTES);
      const file = await form.next();
      if (file?.name !== 'file')
        throw problem('validation_failed', `the key ${key.slice(0, 64)} has no file part after it`);
      const head = await holdHead(countIn(file.body), HELD_FILE_BYTES);
      if (!head.whole || underWay.has(key)) await puts.drain();
      underWay.add(key);
      await puts.add(() => put(key, head.stream, file.mimeType));
      // The rest of a larger file is still in the request: it is stored before anything is read on.
      if (!head.whole) await puts.drain();
    }
    await puts.drain();
  } catch (err) {
    throw (await puts.settle()) ?? err;
  }
  return stored;
}
