/**
 * The ES256 signatures of access tokens, batched onto a signing thread of their own
 * (api/threads/token-sign-thread.ts): every token issued in one turn of the event loop is signed in
 * one message to the thread.
 *
 * Measured under client_credentials load (the figures are in bench/results/design-figures.md):
 * - one libuv job per token (crypto.sign with a callback) still cost the event loop a large
 *   share of its time in sign's own setup, and a synchronous sign blocks it for every token;
 * - batches as tasks of the piscina pool cost the loop about as much in piscina's own dispatch
 *   and completion as they saved;
 * - one message each way per batch costs the loop least per signature, and gave the lowest server
 *   CPU per token and p99.
 * One thread is enough: it signs far more ES256 tokens a second than the service issues.
 *
 * The thread starts with the first token and ends after IDLE_MS without one (an isolate costs
 * memory). When it cannot sign a batch (it failed to start, died, or answered an error), that
 * batch is signed on libuv's threads instead: issuance never fails for want of the thread.
 */
import { sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { derToP1363 } from '../../../shared/crypto/ecdsa-signature.ts';
import { poolThreadEnv } from '../../../shared/node-flags.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { SignAnswer, SignRequest } from '../../threads/token-sign-thread.ts';

/** r || s (64 bytes) of ES256 over the signing input. */
export type TokenSigner = (signingInput: string, key: KeyObject) => Promise<Buffer>;

/** The batched signer, and how to stop its thread. */
export interface BatchedSigner {
  sign: TokenSigner;
  close(): Promise<void>;
}

const THREAD = new URL('../../threads/token-sign-thread.ts', import.meta.url);
/**
 * Signatures per message; a busier turn sends several, and the thread answers each as soon as it
 * is signed, so the first tokens of a turn go out while the thread signs the rest: 22-23.7k
 * tokens/s at 8 or 16, 19.2-20k with a whole turn (up to 256) in one message.
 */
const MAX_BATCH = 16;
/** The thread ends after this long without a batch. */
const IDLE_MS = 10_000;
/** After a thread failed, batches go to libuv for this long (doubling while it keeps failing, up to MAX_BACKOFF_MS). */
const BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;

const signAsync = promisify(sign) as (alg: string, data: Buffer, key: KeyObject) => Promise<Buffer>;

/** One signature on libuv's thread pool: the fallback when the thread cannot sign. */
const signOnLibuv: TokenSigner = async (signingInput, key) =>
  derToP1363(await signAsync('sha256', Buffer.from(signingInput), key), 32);

interface Pending {
  input: string;
  key: KeyObject;
  resolve(signature: Buffer): void;
  reject(err: unknown): void;
}

/** Signs each item of the batch on libuv instead. */
const onLibuv = (batch: Pending[]) => {
  for (const p of batch) signOnLibuv(p.input, p.key).then(p.resolve, p.reject);
};

/**
 * A signer that gathers the signatures asked for in one turn and signs them on its thread
 * (`thread`: the thread's file, api/threads/token-sign-thread.ts; tests give others). A thread that
 * fails is logged, and no other is started for a while (BACKOFF_MS): a thread that cannot start
 * (out of memory or file descriptors) must not be started again every turn.
 */
export function batchedSigner(logger: Logger, threadFile: URL = THREAD): BatchedSigner {
  let queue: Pending[] = [];
  let thread: { worker: Worker; key: KeyObject | null } | null = null;
  const inFlight = new Map<number, Pending[]>();
  let nextId = 0;
  let idle: NodeJS.Timeout | null = null;
  let lastBatchAt = 0;
  let closed = false;
  let backoffMs = BACKOFF_MS;
  let noThreadUntil = 0;

  /** No thread for a while (libuv signs meanwhile), and the operator is told why. */
  function backOff(why: string): void {
    noThreadUntil = Date.now() + backoffMs;
    logger.error(
      { why, retryInMs: backoffMs },
      'the token signing thread failed; tokens are signed on libuv threads meanwhile',
    );
    backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
  }

  /** A thread ended without being asked to: what it owed goes to libuv, and it backs off. */
  function failed(t: NonNullable<typeof thread>, why: string): void {
    if (thread !== t) return;
    backOff(why);
    void stop();
  }

  function stop(): Promise<number> | undefined {
    const t = thread;
    thread = null;
    if (idle) clearTimeout(idle);
    idle = null;
    // Whatever the thread still held is signed another way.
    for (const batch of inFlight.values()) onLibuv(batch);
    inFlight.clear();
    return t?.worker.terminate();
  }

  function started(): NonNullable<typeof thread> {
    if (thread) return thread;
    const worker = new Worker(threadFile, { env: poolThreadEnv() });
    const t = { worker, key: null as KeyObject | null };
    worker.on('message', (m: SignAnswer) => {
      const batch = inFlight.get(m.id);
      if (!batch) return;
      inFlight.delete(m.id);
      if (inFlight.size === 0) worker.unref();
      backoffMs = BACKOFF_MS;
      if ('error' in m) return onLibuv(batch);
      const all = Buffer.from(
        m.signatures.buffer,
        m.signatures.byteOffset,
        m.signatures.byteLength,
      );
      batch.forEach((p, i) => p.resolve(all.subarray(64 * i, 64 * (i + 1))));
    });
    // A thread that fails to start or dies: its batches are signed on libuv (failed, stop).
    worker.on('error', (err) => failed(t, err.message));
    worker.on('exit', (code) => failed(t, `exit code ${code}`));
    // Held open only while it owes answers (post), so it never keeps a process alive by itself.
    worker.unref();
    thread = t;
    return t;
  }

  function post(batch: Pending[]): void {
    let t: NonNullable<typeof thread>;
    try {
      t = started();
      if (t.key !== batch[0].key) {
        t.worker.postMessage({ key: batch[0].key } satisfies SignRequest);
        t.key = batch[0].key;
      }
      t.worker.postMessage({ id: nextId, inputs: batch.map((p) => p.input) } satisfies SignRequest);
    } catch (err) {
      // No thread could be made, or it would not take the message: this batch goes to libuv.
      backOff((err as Error).message);
      return onLibuv(batch);
    }
    if (inFlight.size === 0) t.worker.ref();
    inFlight.set(nextId++, batch);
  }

  function flush(): void {
    const pending = queue;
    queue = [];
    if (closed || Date.now() < noThreadUntil) return onLibuv(pending);
    // One key per message: a rotation within the turn splits the batch where the key changes.
    let start = 0;
    for (let i = 1; i <= pending.length; i += 1) {
      if (
        i === pending.length ||
        i - start === MAX_BATCH ||
        pending[i].key !== pending[start].key
      ) {
        post(pending.slice(start, i));
        start = i;
      }
    }
    lastBatchAt = Date.now();
    idle ??= armIdle(IDLE_MS);
  }

  /** Ends the thread IDLE_MS after the last batch, once it owes no answer (one timer, not one per turn). */
  function armIdle(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const quiet = Date.now() - lastBatchAt;
      if (inFlight.size === 0 && quiet >= IDLE_MS) void stop();
      else idle = armIdle(Math.max(IDLE_MS - quiet, 1_000));
    }, ms);
    timer.unref();
    return timer;
  }

  return {
    sign: (input, key) =>
      new Promise<Buffer>((resolve, reject) => {
        if (queue.length === 0) setImmediate(flush);
        queue.push({ input, key, resolve, reject });
      }),
    async close() {
      closed = true;
      await stop();
    },
  };
}
