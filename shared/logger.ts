/**
 * JSON-lines logging with pino. Secrets never reach the log: the redaction list covers every
 * field name that can carry a password, client secret, token or key material, at any of the
 * depths where request bodies and headers get logged.
 */
import { pino, type Logger, type DestinationStream } from 'pino';

const SECRET_FIELDS = [
  'password',
  'newPassword',
  'client_secret',
  'clientSecret',
  'secret',
  'token',
  'access_token',
  'refresh_token',
  'subject_token',
  'authorization',
  'Authorization',
  'cookie',
  'privateKey',
  'material',
  'sharedSecret',
  'masterKey',
  'data',
  'plaintext',
];

/** Redaction paths: each secret field at the top level and one or two levels down. */
export const REDACT_PATHS = SECRET_FIELDS.flatMap((f) => [
  f,
  `*.${f}`,
  `*.*.${f}`,
  `req.headers.${f.toLowerCase()}`,
]);

export type { Logger };

/** Bytes gathered before a write to stdout is started (the buffer also goes out every FLUSH_MS). */
const BATCH_BYTES = 4096;
/** How long a line may wait in the buffer when traffic is too low to fill a batch. */
const FLUSH_MS = 100;
/**
 * The most a slow reader of stdout can make the process hold: past it, lines are dropped and
 * counted (a warning says how many once the reader caught up), rather than memory growing
 * without bound or the event loop blocking on a full pipe.
 */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const DROP_REPORT_MS = 10_000;

/**
 * The process's stdout as pino's asynchronous, buffered destination: lines gather in memory and go
 * out in batches of BATCH_BYTES (or after FLUSH_MS), written from libuv's thread pool, never with
 * a synchronous write on the event loop. pino flushes it synchronously when the process exits,
 * and flushLogger does so at the end of an ordered shutdown, so no line is lost. Measured on this
 * machine (issue 29): one write per request is what made the access log cost most of the
 * throughput of 1 KiB encrypts.
 */
function bufferedStdout(): DestinationStream & { on(event: 'drop', f: () => void): unknown } {
  return pino.destination({
    dest: 1,
    sync: false,
    minLength: BATCH_BYTES,
    maxLength: MAX_BUFFERED_BYTES,
    periodicFlush: FLUSH_MS,
  });
}

/** Counts the lines a destination dropped and logs, at most every DROP_REPORT_MS, how many. */
function reportDrops(logger: Logger, stream: { on(event: 'drop', f: () => void): unknown }): void {
  let dropped = 0;
  let timer: NodeJS.Timeout | null = null;
  stream.on('drop', () => {
    dropped += 1;
    timer ??= setTimeout(() => {
      timer = null;
      logger.warn({ dropped }, 'log lines dropped: stdout is read more slowly than written');
      dropped = 0;
    }, DROP_REPORT_MS).unref();
  });
}

/**
 * Creates the process logger: on stdout through the buffered destination, or on `destination`
 * (tests capture the lines so).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const stream = destination ?? bufferedStdout();
  const logger = pino(
    {
      level,
      redact: { paths: [...new Set(REDACT_PATHS)], censor: '[redacted]' },
      base: { pid: process.pid },
    },
    stream,
  );
  if (!destination) reportDrops(logger, stream as ReturnType<typeof bufferedStdout>);
  return logger;
}

/** The logger's destination, for lines written without pino's serializer (the access log). */
export function destinationOf(logger: Logger): DestinationStream {
  return (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
}

/** Writes out what the logger's destination holds (the last step of an ordered shutdown). */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    logger.flush(() => resolve());
  });
}
