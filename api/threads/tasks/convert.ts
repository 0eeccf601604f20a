/**
 * The PKCS#7/CMS conversion as a piscina task (api/threads/conversions.ts starts it): the engine
 * runs here, off the API's event loop, on bytes that arrive over MessagePorts. The input comes on
 * `file` (and `content`), the output leaves on `out`, both with backpressure
 * (shared/threads/port-stream.ts); `ctl` carries the input type, the head (the result's content
 * type) or the failure before it, and the key lookups, which the posting thread answers.
 * The task ends when the conversion has ended, whichever way, so the thread is free again; the
 * other side closes the ports once it has read them.
 */
import type { MessagePort } from 'node:worker_threads';
import { convertPkcs7ToJose, type ConvertMetadata } from '../../../shared/pkcs7/index.ts';
import { ChunkReceiver, sendChunks } from '../../../shared/threads/port-stream.ts';
import { portResolver } from '../../../shared/keys/port-resolver.ts';
import { errorToData, type ErrorData } from '../../../shared/errors/index.ts';

/** What the posting thread hands the task (the ports are transferred). */
export interface ConvertTaskInput {
  metadata: ConvertMetadata;
  withContent: boolean;
  integrated: boolean;
  keyTypes: boolean;
  file: MessagePort;
  content?: MessagePort;
  out: MessagePort;
  ctl: MessagePort;
}

/** Messages on `ctl` from this side, beside the key lookups. */
export type ConvertControl =
  { inputType: string } | { head: string } | { error: ErrorData; cause?: string };

/** Runs one conversion; resolves once it has ended (done, failed or cancelled). */
export async function convertStream(input: ConvertTaskInput): Promise<void> {
  const { ctl, out } = input;
  const keys = portResolver(ctl, input.keyTypes);
  ctl.on('message', (m) => keys.receive(m));
  const file = new ChunkReceiver(input.file);
  const content = input.content ? new ChunkReceiver(input.content) : undefined;
  const tell = (m: ConvertControl) => ctl.postMessage(m);
  try {
    let result;
    try {
      result = await convertPkcs7ToJose(file, {
        metadata: input.metadata,
        resolver: keys.resolver,
        withContent: input.withContent,
        integrated: input.integrated,
        onInputType: (type) => tell({ inputType: type }),
        ...(content ? { content } : {}),
      });
    } catch (err) {
      // What is not one of ours (a bug) goes as internal, its stack for the other side's log.
      const data = errorToData(err);
      tell({
        error: data,
        ...(data.code === 'internal' ? { cause: String((err as Error)?.stack ?? err) } : {}),
      });
      out.close();
      return;
    }
    tell({ head: result.contentType });
    // A failure of the body reaches the other side on `out` (as data), so it ends here.
    await sendChunks(out, result.body).catch(() => {});
  } finally {
    await file.return();
    await content?.return();
    // `ctl` is closed by the other side once it has read everything (closing it here could drop
    // the messages just posted).
  }
}

// The signature and chain checks of a SignedData converted on the event loop (conversions.ts).
export { checkSignersTask } from '../../../shared/threads/signer-checks.ts';
