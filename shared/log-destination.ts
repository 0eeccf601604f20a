/**
 * The log's destination on stdout: lines gather in memory and go out in batches, each
 * batch one asynchronous write from libuv's thread pool, so the event loop never waits on a pipe
 * and pays one write per batch, not one per line.
 *
 * Not sonic-boom (pino's own destination) with a minimum length: measured here, it cost the same
 * CPU per line whatever the batch size (bench/results/design-figures.md), because each write takes the byte length of
 * the whole pending string it appends to (V8 flattens that string again on every line). This
 * copies each line's bytes once into a block outside the JavaScript heap, and a block is the
 * batch. Lines were kept as strings until their batch went out (up to 100 ms): under load they
 * outlived two scavenges and were promoted, the largest share of what the old generation took
 * in during token issuance (a sampled heap profile of the promoted objects), which
 * the mark-compact pauses behind the token p99 then had to sweep.
 *
 * Bounded: past `maxBytes` pending (a reader of stdout that fell that far behind), lines are
 * dropped and counted (`onDrop`) instead of memory growing or the loop blocking. Nothing is lost
 * on an ordered exit: `flush` writes out what is pending, and the process's `exit` event writes
 * the rest synchronously.
 */
import { write, writeSync } from 'node:fs';

/** How a buffered destination batches and bounds its lines. */
export interface BufferedDestinationOptions {
  fd: number;
  /** A batch is written once this many bytes are pending (or after flushMs). */
  batchBytes: number;
  /** The longest a line waits when traffic is too low to fill a batch. */
  flushMs: number;
  /** The most held in memory; lines beyond are dropped and counted. */
  maxBytes: number;
  /** Called for each dropped line. */
  onDrop?: () => void;
}

/** What pino needs of a destination, plus the flushes a shutdown uses. */
export interface BufferedDestination {
  write(line: string): boolean;
  /** Writes out everything pending, then calls back (pino's logger.flush calls this). */
  flush(cb?: (err?: Error) => void): void;
  /** Writes out everything pending before returning (the process is exiting). */
  flushSync(): void;
}

/** A destination on `fd` that writes lines in batches (see the module comment). */
export function bufferedDestination(opts: BufferedDestinationOptions): BufferedDestination {
  const { fd, batchBytes, flushMs, maxBytes, onDrop } = opts;
  /** Filled blocks waiting (the writer fell behind), and the block being filled, `used` bytes of it. */
  let blocks: Buffer[] = [];
  let block: Buffer = Buffer.allocUnsafeSlow(batchBytes);
  let used = 0;
  /** Bytes in the blocks plus those of the batch being written. */
  let pending = 0;
  const held = () => used > 0 || blocks.length > 0;
  /** The block the batch in flight was cut from, and one whose batch has gone out, for reuse. */
  let inFlight: Buffer | null = null;
  let spare: Buffer | null = null;
  /** The batch being written (what is left of it after a partial write), or null. */
  let writing: Buffer | null = null;
  let broken = false;
  let timer: NodeJS.Timeout | null = null;
  let waiters: Array<(err?: Error) => void> = [];

  /** What is held, as one batch; the next lines go to a new block. */
  const take = (): Buffer => {
    const last = block.subarray(0, used);
    const batch = blocks.length === 0 ? last : Buffer.concat([...blocks, last]);
    inFlight = blocks.length === 0 ? block : null;
    blocks = [];
    block = spare ?? Buffer.allocUnsafeSlow(batchBytes);
    spare = null;
    used = 0;
    return batch;
  };

  const settle = () => {
    if (writing || held()) return;
    const done = waiters;
    waiters = [];
    for (const cb of done) cb();
  };

  const onWritten = (err: NodeJS.ErrnoException | null, n: number) => {
    if (err) {
      if (err.code === 'EAGAIN') {
        setTimeout(() => writeNext(writing!), 10).unref();
        return;
      }
      // EPIPE and the like: nobody reads stdout any more; what is pending is dropped.
      broken = true;
      writing = null;
      blocks = [];
      used = 0;
      pending = 0;
      settle();
      return;
    }
    pending -= n;
    const rest = writing!.subarray(n);
    writing = null;
    if (rest.length === 0) {
      spare = inFlight;
      inFlight = null;
    }
    if (rest.length > 0) writeNext(rest);
    else if (held() && (pending >= batchBytes || waiters.length > 0)) writeNext(take());
    else {
      // Lines written while this batch was in flight armed no timer (write() leaves them to this
      // callback): without one they would wait for the next line, and a process that has logged
      // its last line ("keyward worker ready", then idle) would never show them.
      if (held()) armTimer();
      settle();
    }
  };

  const writeNext = (batch: Buffer) => {
    writing = batch;
    write(fd, batch, 0, batch.length, null, onWritten);
  };

  const flushSoon = () => {
    timer = null;
    if (!writing && held()) writeNext(take());
  };

  /** Held lines go out within flushMs, unless a full batch or a flush sends them sooner. */
  const armTimer = () => {
    timer ??= setTimeout(flushSoon, flushMs).unref();
  };

  const dest: BufferedDestination = {
    write(line) {
      if (broken) return true;
      const bytes = Buffer.byteLength(line);
      if (pending + bytes > maxBytes) {
        onDrop?.();
        return false;
      }
      if (bytes > block.length - used) {
        if (used > 0) blocks.push(block.subarray(0, used));
        block = Buffer.allocUnsafeSlow(Math.max(batchBytes, bytes));
        used = 0;
      }
      used += block.write(line, used);
      pending += bytes;
      // A batch in flight: its callback sends or times what gathered meanwhile.
      if (writing) return true;
      if (pending >= batchBytes) writeNext(take());
      else armTimer();
      return true;
    },
    flush(cb) {
      if (cb) waiters.push(cb);
      if (!writing && held()) writeNext(take());
      else settle();
    },
    flushSync() {
      // At a natural exit no batch is in flight (its request would keep the loop alive); after a
      // process.exit() one may be, and the queued lines then go out beside it, not after it.
      if (broken || !held()) return;
      let batch = take();
      while (batch.length > 0) {
        try {
          batch = batch.subarray(writeSync(fd, batch));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
        }
      }
    },
  };
  process.once('exit', () => dest.flushSync());
  return dest;
}
