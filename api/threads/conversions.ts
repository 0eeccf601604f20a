/**
 * convertPkcs7ToJose on a thread of the conversion pool, for a caller whose event loop serves
 * other requests: same arguments, same result, same failures, but the parsing, decryption,
 * hashing and encryption run on the thread (api/threads/tasks/convert.ts), so conversions in one
 * process use more than one core and the loop stays free for everything else.
 *
 * This side pumps the input into the thread and hands out the output as it arrives, both with
 * backpressure (shared/threads/port-stream.ts): a client that sends faster than the thread
 * converts is paused, and a client that reads slower than it converts pauses the thread. Key
 * lookups are answered here with the caller's resolver. A failure of the input (a client gone
 * mid-upload, a malformed form) is rethrown as it was thrown here, not as its copy from the
 * thread; a thread that dies fails the conversion as an internal error, never the process.
 */
import { MessageChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { convertPkcs7ToJose } from '../../shared/pkcs7/index.ts';
import type { ConvertOptions, ConvertResult } from '../../shared/pkcs7/index.ts';
import type { SignerChecker, SignerCheckOutput } from '../../shared/pkcs7/types.ts';
import { offloaded } from '../../shared/pkcs7/signer-checks.ts';
import { ChunkReceiver, sendChunks } from '../../shared/threads/port-stream.ts';
import { answerKeyRequest, isKeyRequest } from '../../shared/keys/port-resolver.ts';
import { AppError, errorFromData, problem, type ErrorData } from '../../shared/errors/index.ts';
import type { WorkPool } from './pool.ts';
import type { ConvertControl, ConvertTaskInput } from './tasks/convert.ts';

/** The thread's failure, rebuilt; an internal one keeps the thread's stack for the log. */
function rebuilt(m: { error: ErrorData; cause?: string }): AppError {
  const err = errorFromData(m.error);
  if (err.code !== 'internal' || !m.cause) return err;
  return new AppError('internal', err.message, { cause: new Error(m.cause) });
}

/** Runs convertPkcs7ToJose(input, opts) on a thread of `pool`. */
export async function convertInThread(
  pool: WorkPool,
  input: AsyncIterable<Uint8Array>,
  opts: ConvertOptions,
): Promise<ConvertResult> {
  const file = new MessageChannel();
  const out = new MessageChannel();
  const ctl = new MessageChannel();
  const content = opts.content ? new MessageChannel() : null;
  const theirs: MessagePort[] = [file.port2, out.port2, ctl.port2];
  if (content) theirs.push(content.port2);
  const task: ConvertTaskInput = {
    metadata: opts.metadata,
    withContent: opts.withContent === true,
    integrated: opts.integrated === true,
    keyTypes: typeof opts.resolver.keyTypes === 'function',
    file: file.port2,
    out: out.port2,
    ctl: ctl.port2,
    ...(content ? { content: content.port2 } : {}),
  };

  let inputError: unknown = null;
  const pump = (port: MessagePort, source: AsyncIterable<Uint8Array>) =>
    sendChunks(port, source).catch((err: unknown) => {
      inputError ??= err;
    });
  void pump(file.port1, input);
  if (content && opts.content) void pump(content.port1, opts.content);

  const body = new ChunkReceiver(out.port1);
  let settle!: { resolve(type: string): void; reject(err: unknown): void };
  const head = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  ctl.port1.on('message', (m: unknown) => {
    if (isKeyRequest(m)) return void answerKeyRequest(ctl.port1, opts.resolver, m);
    const c = m as ConvertControl;
    if ('inputType' in c) opts.onInputType?.(c.inputType);
    else if ('head' in c) settle.resolve(c.head);
    else if ('error' in c) settle.reject(rebuilt(c));
  });
  ctl.port1.once('close', () =>
    settle.reject(problem('internal', 'the conversion thread ended before its answer')),
  );
  const run = pool.run<void>('convertStream', task, theirs).catch((err: unknown) => {
    // A full queue (503) or a thread that died: whatever waits on the thread gets the error.
    settle.reject(err);
    body.fail(err);
  });
  // Closed here once all is read: the thread posts its last messages and leaves the ports open.
  void Promise.allSettled([head, run]).then(() => ctl.port1.close());

  let contentType: string;
  try {
    contentType = await head;
  } catch (err) {
    // Nothing more is read from the thread: stop the input pumps (closing a port ends its sender).
    await body.return();
    file.port1.close();
    content?.port1.close();
    throw inputError ?? err;
  }
  const preferInput = {
    [Symbol.asyncIterator]: () => preferInput,
    next: () =>
      body.next().catch((err: unknown) => {
        throw inputError ?? err;
      }),
    return: () => body.return(),
  };
  return { contentType, body: preferInput };
}

/**
 * A SignedData converted on the event loop has its signature and chain checks done on a pool
 * thread all the same: how many there are, and with what keys, is the input's choice. One signer
 * the tenant holds, without a chain, is checked here (offloaded: one signature, the tenant's key).
 */
const onPool = (pool: WorkPool): SignerChecker =>
  offloaded((input) => pool.run<SignerCheckOutput>('checkSignersTask', input));

/** Where a process's streamed conversions run (AppContext.conversions). */
export interface ConversionRunner {
  /**
   * convertPkcs7ToJose, on the event loop or on a thread of the pool; `wholeBytes` is the input's
   * size when it is already held whole (a small file part).
   */
  convert(
    input: AsyncIterable<Uint8Array>,
    opts: ConvertOptions,
    wholeBytes?: number,
  ): Promise<ConvertResult>;
  /** The pool's threads (null: every conversion runs on the event loop). */
  readonly pool: WorkPool | null;
}

/**
 * An input held whole and at most this large converts on the event loop whatever else runs: it
 * takes well under a millisecond there, less than handing it to a thread and its key lookups back
 * costs the event loop (a mailbox of 30 KB messages, 4 in flight, converted about a quarter faster
 * with every conversion on the event loop than with threads: docs/architecture.md, threads). The
 * work such an input can make the caller choose (signer chains, password derivations) goes to
 * the pools all the same. `CONVERT_THREAD_FROM=1` still sends every conversion to a thread.
 */
export const IN_PLACE_BYTES = 256 * 1024;
const small = (wholeBytes: number | undefined) =>
  wholeBytes !== undefined && wholeBytes <= IN_PLACE_BYTES;

/**
 * A conversion goes to a thread when `threadFrom` conversions (itself included) would then run in
 * the process, else it runs on the event loop. With 2 (the default), one conversion alone keeps
 * the event loop, where it measured faster than through a thread (bench/pkcs7.bench.ts;
 * bench/results/design-figures.md), and any that start while it runs take threads; with 1
 * every conversion takes a thread. A conversion counts until its body ends, however it ends.
 */
export function conversionRunner(pool: WorkPool | null, threadFrom: number): ConversionRunner {
  let running = 0;
  return {
    pool,
    async convert(input, opts, wholeBytes) {
      running++;
      let counted = true;
      const done = () => {
        if (counted) running--;
        counted = false;
      };
      try {
        const result =
          pool && running >= threadFrom && !(threadFrom > 1 && small(wholeBytes))
            ? await convertInThread(pool, input, opts)
            : await convertPkcs7ToJose(
                input,
                pool ? { ...opts, checkSigners: onPool(pool) } : opts,
              );
        const it = result.body[Symbol.asyncIterator]();
        const body: AsyncIterableIterator<Buffer> = {
          [Symbol.asyncIterator]: () => body,
          async next() {
            try {
              const r = await it.next();
              if (r.done) done();
              return r;
            } catch (err) {
              done();
              throw err;
            }
          },
          async return() {
            done();
            return (await it.return?.()) ?? { done: true, value: undefined };
          },
        };
        return { contentType: result.contentType, body };
      } catch (err) {
        done();
        throw err;
      }
    },
  };
}
