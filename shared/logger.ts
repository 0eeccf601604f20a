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

/** Creates the process logger; `destination` lets tests capture the lines. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: [...new Set(REDACT_PATHS)], censor: '[redacted]' },
      base: { pid: process.pid },
    },
    destination,
  );
}
