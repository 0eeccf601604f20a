/**
 * Progress on stderr: files and bytes done, rate and ETA. On a terminal one line is redrawn in
 * place; otherwise (a log file, CI) a plain line is printed every `intervalMs`, so logs stay
 * readable.
 */

export interface Snapshot {
  filesDone: number;
  filesFailed: number;
  filesTotal: number;
  bytesDone: number;
  /** Unknown (0) for a batch over a prefix: the ETA then goes by files. */
  bytesTotal: number;
  /**
   * A resumed run: files (and their bytes) an earlier run finished, counted in the totals and as
   * done, so the line speaks of the whole set; the rate and ETA leave them out.
   */
  filesSkipped?: number;
  bytesSkipped?: number;
}

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

/** 1234567 → "1.2 MB" (decimal units, like the rates). */
export function formatBytes(n: number): string {
  let i = 0;
  let v = n;
  while (v >= 1000 && i < UNITS.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${UNITS[i]}`;
}

/** 75 → "1:15", 3700 → "1:01:40". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (x: number) => String(x).padStart(2, '0');
  return h > 0 ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
}

export class Progress {
  readonly #out: NodeJS.WriteStream;
  readonly #tty: boolean;
  readonly #started = Date.now();
  readonly #timer: NodeJS.Timeout;
  #read: () => Snapshot;

  constructor(out: NodeJS.WriteStream, read: () => Snapshot, opts: { intervalMs?: number } = {}) {
    this.#out = out;
    this.#tty = Boolean(out.isTTY);
    this.#read = read;
    this.#timer = setInterval(() => this.draw(), this.#tty ? 200 : (opts.intervalMs ?? 10_000));
    this.#timer.unref();
  }

  /** The progress text for a snapshot. */
  line(s: Snapshot): string {
    const seconds = (Date.now() - this.#started) / 1000;
    const skipped = s.filesSkipped ?? 0;
    const rate = seconds > 0 ? (s.bytesDone - (s.bytesSkipped ?? 0)) / seconds : 0;
    const finished = s.filesDone + s.filesFailed + skipped;
    const worked = finished - skipped;
    let eta: number;
    if (s.bytesTotal > 0) eta = rate > 0 ? (s.bytesTotal - s.bytesDone) / rate : NaN;
    else eta = worked > 0 ? ((s.filesTotal - finished) * seconds) / worked : NaN;
    const share =
      s.bytesTotal > 0
        ? s.bytesDone / s.bytesTotal
        : s.filesTotal > 0
          ? finished / s.filesTotal
          : 0;
    const width = 20;
    const full = Math.min(width, Math.floor(share * width));
    const bar = this.#tty ? `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ` : '';
    const bytes =
      s.bytesTotal > 0
        ? `${formatBytes(s.bytesDone)}/${formatBytes(s.bytesTotal)}`
        : formatBytes(s.bytesDone);
    const failed = s.filesFailed > 0 ? `, ${s.filesFailed} failed` : '';
    const done = skipped > 0 ? `, ${skipped} done before` : '';
    return `${bar}files ${finished}/${s.filesTotal}${failed}${done} | ${bytes} | ${formatBytes(rate)}/s | ETA ${finished >= s.filesTotal ? '0:00' : formatDuration(eta)}`;
  }

  draw(): void {
    const text = this.line(this.#read());
    if (this.#tty) this.#out.write(`\r${text}\x1b[K`);
    else this.#out.write(`${new Date().toISOString()} ${text}\n`);
  }

  /** Draws the final state and ends the line. */
  stop(): void {
    clearInterval(this.#timer);
    this.draw();
    if (this.#tty) this.#out.write('\n');
  }

  /** Prints a message above the progress line. */
  note(message: string): void {
    if (this.#tty) this.#out.write(`\r\x1b[K${message}\n`);
    else this.#out.write(`${message}\n`);
  }
}
