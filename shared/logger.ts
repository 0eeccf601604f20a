/**
 * JSON-lines logging with pino. Secrets never reach the log: the redaction list covers every
 * field name that can carry a password, client secret, token or key material, at any of the
 * depths where request bodies and headers get logged.
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { bufferedDestination } from './log-destination.ts';

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

/** Bytes gathered before a write to stdout is started (a pipe's capacity; the lines also go out every FLUSH_MS). */
const BATCH_BYTES = 64 * 1024;
/** How long a line may wait in memory when traffic is too low to fill a batch. */
const FLUSH_MS = 100;
/**
 * The most a slow reader of stdout can make the process hold: past it, lines are dropped and
 * counted (a warning says how many), rather than memory growing without bound or the event loop
 * blocking on a full pipe.
 */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const DROP_REPORT_MS = 10_000;

/**
 * stdout as a buffered asynchronous destination (shared/log-destination.ts). Measured on this
 * machine, a pino call and its write per request were most of what the access log
 * cost 1 KiB encrypts. Dropped lines are counted and reported at most every DROP_REPORT_MS.
 */
function bufferedStdout(report: () => Logger): DestinationStream {
  let dropped = 0;
  let timer: NodeJS.Timeout | null = null;
  return bufferedDestination({
    fd: 1,
    batchBytes: BATCH_BYTES,
    flushMs: FLUSH_MS,
    maxBytes: MAX_BUFFERED_BYTES,
    onDrop: () => {
      dropped += 1;
      timer ??= setTimeout(() => {
        timer = null;
        report().warn({ dropped }, 'log lines dropped: stdout is read more slowly than written');
        dropped = 0;
      }, DROP_REPORT_MS).unref();
    },
  });
}

/**
 * Creates the process logger: on stdout through the buffered destination, or on `destination`
 * (tests capture the lines so).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const logger: Logger = pino(
    {
      level,
      redact: { paths: [...new Set(REDACT_PATHS)], censor: '[redacted]' },
      base: { pid: process.pid },
    },
    destination ?? bufferedStdout(() => logger),
  );
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
