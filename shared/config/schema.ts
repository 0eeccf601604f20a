/**
 * The configuration's keys: for each, its environment variable, doc line, kind and default. The
 * table the loader (./index.ts) parses by, and docs/configuration.md is rendered from.
 */
import { cpus } from 'node:os';

export type Kind = 'string' | 'int' | 'bool' | 'url' | 'keyring' | 'enum' | 'fraction' | 'list';

export interface Field {
  env: string;
  doc: string;
  kind: Kind;
  default?: string;
  values?: readonly string[];
  min?: number;
  /** Never printed (secrets); `${env}_FILE` may name a file holding the value (Docker secrets). */
  secret?: boolean;
  /** No fixed default: a named derivation computes it from other keys after parsing. */
  derived?: true;
  /** How docs/configuration.md names a default computed on the machine. */
  defaultDoc?: string;
  /** For strings: the whole value must match. */
  pattern?: RegExp;
}

/** The schema: the single source of configuration keys, also rendered into the table of docs/configuration.md. */
export const SCHEMA = {
  port: { env: 'PORT', doc: 'TCP port of the API', kind: 'int', default: '8080', min: 0 },
  host: { env: 'HOST', doc: 'Interface the API listens on', kind: 'string', default: '127.0.0.1' },
  publicBaseUrl: {
    env: 'PUBLIC_BASE_URL',
    doc: 'External base URL; problem types and the token issuer derive from it',
    kind: 'url',
    derived: true,
    defaultDoc: '`http://HOST:PORT` (HOST `0.0.0.0` or `::` as `127.0.0.1`)',
  },
  dataDir: {
    env: 'DATA_DIR',
    doc: 'Directory for the embedded database, object storage and generated master key',
    kind: 'string',
    default: './data',
  },
  databaseUrl: {
    env: 'DATABASE_URL',
    doc: 'PostgreSQL URL; when unset the embedded PGlite in DATA_DIR is used',
    kind: 'url',
    secret: true,
  },
  redisUrl: {
    env: 'REDIS_URL',
    doc: 'Redis URL for the job queue, shared rate limits and revocation fan-out',
    kind: 'url',
    secret: true,
  },
  s3Endpoint: {
    env: 'S3_ENDPOINT',
    doc: 'MinIO/S3 endpoint URL; when unset objects live under DATA_DIR/objects',
    kind: 'url',
  },
  s3AccessKey: { env: 'S3_ACCESS_KEY', doc: 'S3 access key', kind: 'string', secret: true },
  s3SecretKey: { env: 'S3_SECRET_KEY', doc: 'S3 secret key', kind: 'string', secret: true },
  s3Bucket: {
    env: 'S3_BUCKET',
    doc: 'S3 bucket for migration inputs and outputs',
    kind: 'string',
    default: 'keyward',
  },
  s3Region: {
    env: 'S3_REGION',
    doc: 'S3 region the bucket is made in',
    kind: 'string',
    default: 'us-east-1',
  },
  masterKey: {
    env: 'KEYWARD_MASTER_KEY',
    doc: 'The master keyring that wraps all key material at rest: base64 of 32 bytes, or several `id:base64` entries separated by commas, newest first (new material is sealed under the first); generated into DATA_DIR when unset',
    kind: 'keyring',
    secret: true,
  },
  bootstrapTenantId: {
    env: 'KEYWARD_BOOTSTRAP_TENANT_ID',
    doc: 'Id of the platform tenant created on first start',
    kind: 'string',
  },
  bootstrapAdminEmail: {
    env: 'KEYWARD_BOOTSTRAP_ADMIN_EMAIL',
    doc: 'E-mail of the platform administrator created on first start',
    kind: 'string',
  },
  bootstrapAdminPassword: {
    env: 'KEYWARD_BOOTSTRAP_ADMIN_PASSWORD',
    doc: 'Password of that administrator; generated and printed once when unset',
    kind: 'string',
    secret: true,
  },
  // Password-reset mail. Without SMTP_URL or SMTP_HOST mails go to the outbox table (docs/configuration.md).
  smtpUrl: {
    env: 'SMTP_URL',
    doc: 'SMTP server as a URL (smtp://user:password@host:587, smtps:// for implicit TLS); instead of SMTP_HOST and the rest',
    kind: 'url',
    secret: true,
  },
  smtpHost: { env: 'SMTP_HOST', doc: 'SMTP server host name', kind: 'string' },
  smtpPort: { env: 'SMTP_PORT', doc: 'SMTP server port', kind: 'int', default: '587', min: 1 },
  smtpUser: { env: 'SMTP_USER', doc: 'SMTP login user name', kind: 'string' },
  smtpPassword: { env: 'SMTP_PASSWORD', doc: 'SMTP login password', kind: 'string', secret: true },
  smtpFrom: {
    env: 'SMTP_FROM',
    doc: 'Sender address of the password-reset mail',
    kind: 'string',
    default: 'Keyward <keyward@localhost>',
  },
  smtpTls: {
    env: 'SMTP_TLS',
    doc: 'starttls: upgrade required; implicit: TLS from the first byte (port 465); opportunistic: upgrade when offered; off: plain text (a relay on loopback only)',
    kind: 'enum',
    default: 'starttls',
    values: ['starttls', 'implicit', 'opportunistic', 'off'],
  },
  smtpTlsVerify: {
    env: 'SMTP_TLS_VERIFY',
    doc: "Verify the SMTP server's TLS certificate",
    kind: 'bool',
    default: 'true',
  },
  logLevel: {
    env: 'LOG_LEVEL',
    doc: 'pino log level',
    kind: 'enum',
    default: 'info',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  },
  answerCheck: {
    env: 'ANSWER_CHECK',
    doc: "How a route row's JSON answer is held to its documented schema: off; log (a mismatch is logged as an error naming the operation and the field, the answer still sent); strict (a mismatch is answered 500; the tests run so)",
    kind: 'enum',
    default: 'log',
    values: ['off', 'log', 'strict'],
  },
  // access log: one line per request at info, written through a buffered
  // asynchronous destination (shared/logger.ts); these keys thin it out or switch it off.
  accessLog: {
    env: 'ACCESS_LOG',
    doc: 'on: one access line per request (at LOG_LEVEL info or finer); off: none (metrics still count every request)',
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
  },
  accessLogSample: {
    env: 'ACCESS_LOG_SAMPLE',
    doc: 'Share of successful, fast requests whose access line is written (0 to 1); failed (status 400 and up), aborted, cut and slow requests are always written',
    kind: 'fraction',
    default: '1',
  },
  accessLogSlowMs: {
    env: 'ACCESS_LOG_SLOW_MS',
    doc: 'A request taking at least this many milliseconds is slow: its access line is written whatever ACCESS_LOG_SAMPLE says',
    kind: 'int',
    default: '1000',
    min: 0,
  },
  webConcurrency: {
    env: 'WEB_CONCURRENCY',
    doc: 'Number of API processes sharing the port (node:cluster)',
    kind: 'int',
    default: '1',
    min: 1,
  },
  poolThreads: {
    env: 'POOL_THREADS',
    doc: 'Worker threads in the crypto pool',
    kind: 'int',
    default: String(Math.max(1, cpus().length)),
    defaultDoc: 'number of cores',
    min: 1,
  },
  convertThreads: {
    env: 'CONVERT_THREADS',
    doc: 'Worker threads that run streamed PKCS#7/CMS conversions off the event loop (more conversions wait for a thread; 0 runs them on the event loop)',
    kind: 'int',
    default: String(Math.max(1, cpus().length)),
    defaultDoc: 'number of cores',
    min: 0,
  },
  convertThreadFrom: {
    env: 'CONVERT_THREAD_FROM',
    doc: 'How many conversions running at once (the new one included) send it to a conversion thread: 2 keeps one alone on the event loop, where it is fastest, and keeps there every file part of at most 256 KiB, which a thread costs more than it saves; 1 sends every one',
    kind: 'int',
    default: '2',
    min: 1,
  },
  poolMaxQueue: {
    env: 'POOL_MAX_QUEUE',
    doc: 'Tasks waiting for the pool before requests answer 503',
    kind: 'int',
    default: '1024',
    min: 1,
  },
  jsonLimitBytes: {
    env: 'JSON_LIMIT_BYTES',
    doc: 'Largest JSON request body; larger answers 413',
    kind: 'int',
    default: '65536',
    min: 1024,
  },
  awsKmsRegions: {
    env: 'AWS_KMS_REGIONS',
    doc: 'Comma-separated regions the AWS KMS API accepts in SigV4 credential scopes; unset accepts any',
    kind: 'list',
  },
  accessTokenTtl: {
    env: 'ACCESS_TOKEN_TTL',
    doc: 'Lifetime in seconds of client_credentials access tokens',
    kind: 'int',
    default: '36000',
    min: 60,
  },
  humanTokenTtl: {
    env: 'HUMAN_TOKEN_TTL',
    doc: 'Lifetime in seconds of password-grant access tokens',
    kind: 'int',
    default: '3600',
    min: 60,
  },
  exchangeTokenTtl: {
    env: 'EXCHANGE_TOKEN_TTL',
    doc: 'Lifetime in seconds of token-exchange tokens',
    kind: 'int',
    default: '900',
    min: 60,
  },
  refreshTokenTtl: {
    env: 'REFRESH_TOKEN_TTL',
    doc: 'Lifetime in seconds of refresh tokens',
    kind: 'int',
    default: '86400',
    min: 60,
  },
  rememberMeRefreshTtl: {
    env: 'REMEMBER_ME_REFRESH_TTL',
    doc: 'Lifetime in seconds of refresh tokens with remember_me=true',
    kind: 'int',
    default: '2592000',
    min: 60,
  },
  signingKeyRotation: {
    env: 'SIGNING_KEY_ROTATION_SECONDS',
    doc: 'Age after which the token signing key is rotated',
    kind: 'int',
    default: '604800',
    min: 60,
  },
  secretGraceSeconds: {
    env: 'CLIENT_SECRET_GRACE_SECONDS',
    doc: 'How long a rotated-out client secret stays valid',
    kind: 'int',
    default: '86400',
    min: 0,
  },
  rateLimitTokenPerMinute: {
    env: 'RATE_LIMIT_TOKEN_PER_MINUTE',
    doc: 'Token requests per identity (as for the failures) per minute',
    kind: 'int',
    default: '600000',
    min: 1,
  },
  rateLimitFailuresPerMinute: {
    env: 'RATE_LIMIT_FAILURES_PER_MINUTE',
    doc: 'Failed authentications per identity (client or user at one address, refresh-token family, token subject; the address itself for names that match none) per minute',
    kind: 'int',
    default: '10',
    min: 1,
  },
  rateLimitApiPerMinute: {
    env: 'RATE_LIMIT_API_PER_MINUTE',
    doc: 'Requests per client per endpoint per minute on the bearer APIs',
    kind: 'int',
    default: '6000000',
    min: 1,
  },
  // decryption-failure budget
  decryptFailureBudget: {
    env: 'DECRYPT_FAILURE_BUDGET',
    doc: 'Failed decryptions one principal may cause with one key per window (runtime decrypt, conversion, stream re-encrypt, jobs); past it every answer on that key is 429, so a decryption oracle is slow and loud',
    kind: 'int',
    default: '20',
    min: 1,
  },
  decryptFailureWindowSeconds: {
    env: 'DECRYPT_FAILURE_WINDOW_SECONDS',
    doc: 'The window of DECRYPT_FAILURE_BUDGET in seconds; a spent budget refuses for the rest of it',
    kind: 'int',
    default: '900',
    min: 1,
  },
  expensiveThreads: {
    env: 'EXPENSIVE_THREADS',
    doc: 'Worker threads of expensive work whose cost the caller sets (PBKDF2 of a PWRI password, key-pair generation), apart from the crypto pool and libuv threads that sign (docs/expensive-work.md)',
    kind: 'int',
    default: String(Math.max(1, Math.floor(cpus().length / 2))),
    defaultDoc: 'half the number of cores',
    min: 1,
  },
  expensiveMaxQueue: {
    env: 'EXPENSIVE_MAX_QUEUE',
    doc: 'Expensive tasks waiting for EXPENSIVE_THREADS before more answer 503 (LimitExceededException on the AWS KMS API)',
    kind: 'int',
    default: '16',
    min: 0,
  },
  expensiveBudget: {
    env: 'EXPENSIVE_BUDGET',
    doc: 'Cost units of expensive work one principal may spend per window (a unit is about a millisecond of a core: RSA-4096 generation 1000, PBKDF2 1 per 1,000 iterations); past it 429 (LimitExceededException)',
    kind: 'int',
    default: '20000',
    min: 1,
  },
  expensiveWindowSeconds: {
    env: 'EXPENSIVE_WINDOW_SECONDS',
    doc: 'The window of EXPENSIVE_BUDGET in seconds',
    kind: 'int',
    default: '60',
    min: 1,
  },
  lockoutThreshold: {
    env: 'LOCKOUT_THRESHOLD',
    doc: 'Wrong passwords from one client address before that address is locked out of the account',
    kind: 'int',
    default: '5',
    min: 1,
  },
  lockoutBaseSeconds: {
    env: 'LOCKOUT_BASE_SECONDS',
    doc: 'First lockout duration of an (account, client address) pair; doubles with each further lockout that day, at most 15 minutes',
    kind: 'int',
    default: '60',
    min: 1,
  },
  authHashConcurrency: {
    env: 'AUTH_HASH_CONCURRENCY',
    doc: 'Password hashes at once for callers without credentials (password resets); as many more wait, beyond that 503',
    kind: 'int',
    default: String(Math.max(1, Math.floor(cpus().length / 2))),
    defaultDoc: 'half the number of cores',
    min: 1,
  },
  shutdownTimeoutMs: {
    env: 'SHUTDOWN_TIMEOUT_MS',
    doc: 'How long graceful shutdown waits before forcing exit',
    kind: 'int',
    default: '10000',
    min: 100,
  },
  keyRotationCheckMs: {
    env: 'KEY_ROTATION_CHECK_MS',
    doc: 'How often each API process looks for keys due for automatic rotation (0 turns the scheduler off); however many processes look, one rotates each due key',
    kind: 'int',
    default: '60000',
    min: 0,
  },
  workerNice: {
    env: 'WORKER_NICE',
    doc: "The worker process's scheduling niceness, 0 to 19: on a machine it shares with the API, runtime requests take the CPU before conversions; 0 leaves the priority it was started with",
    kind: 'int',
    default: '10',
    min: 0,
  },
  workerConcurrency: {
    env: 'WORKER_CONCURRENCY',
    doc: 'Jobs each worker process runs at once',
    kind: 'int',
    default: '2',
    min: 1,
  },
  workerTenantConcurrency: {
    env: 'WORKER_TENANT_CONCURRENCY',
    doc: "Jobs of one tenant each worker process runs at once (a job past it waits a moment in the queue, so other tenants' jobs are not held); 0: WORKER_CONCURRENCY - 1, at least 1",
    kind: 'int',
    default: '0',
    min: 0,
  },
  workerMetricsPort: {
    env: 'WORKER_METRICS_PORT',
    doc: "Port of the worker process's own GET /metrics and /healthz; 0 turns them off",
    kind: 'int',
    default: '9464',
    min: 0,
  },
  workerMetricsHost: {
    env: 'WORKER_METRICS_HOST',
    doc: "Interface of the worker's metrics port: loopback unless the scraper sits on a private network",
    kind: 'string',
    default: '127.0.0.1',
  },
  // The queued jobs: the API (producer) and the workers (consumers) read the same values.
  queuePrefix: {
    env: 'QUEUE_PREFIX',
    doc: 'Redis key prefix of the BullMQ queues and batch records',
    kind: 'string',
    default: 'keyward',
    pattern: /^[A-Za-z0-9_.-]{1,64}$/,
  },
  jobAttempts: {
    env: 'JOB_ATTEMPTS',
    doc: 'Attempts per conversion job before a transient fault fails it',
    kind: 'int',
    default: '5',
    min: 1,
  },
  jobBackoffMs: {
    env: 'JOB_BACKOFF_MS',
    doc: 'First retry delay of a job; doubles with each attempt',
    kind: 'int',
    default: '2000',
    min: 0,
  },
  jobLockDurationMs: {
    env: 'JOB_LOCK_DURATION_MS',
    doc: 'Job lock lifetime; a worker that dies mid-job loses its job after about this long',
    kind: 'int',
    default: '30000',
    min: 1000,
  },
  jobStalledIntervalMs: {
    env: 'JOB_STALLED_INTERVAL_MS',
    doc: 'How often workers look for jobs whose lock expired',
    kind: 'int',
    default: '15000',
    min: 500,
  },
  jobMaxStalled: {
    env: 'JOB_MAX_STALLED',
    doc: 'Times a job may be recovered from a dead worker before it fails',
    kind: 'int',
    default: '3',
    min: 0,
  },
  jobRetentionSeconds: {
    env: 'JOB_RETENTION_SECONDS',
    doc: 'How long finished jobs stay readable; batch records live four times as long',
    kind: 'int',
    default: '604800',
    min: 60,
  },
  jobProgressIntervalMs: {
    env: 'JOB_PROGRESS_INTERVAL_MS',
    doc: 'Least time between two progress reports of a running job',
    kind: 'int',
    default: '500',
    min: 50,
  },
  jobMaxBatchObjects: {
    env: 'JOB_MAX_BATCH_OBJECTS',
    doc: 'Most objects one batch may hold',
    kind: 'int',
    default: '50000',
    min: 1,
  },
  migrationChunkObjects: {
    env: 'MIGRATION_CHUNK_OBJECTS',
    doc: 'Most objects of one chunk of a durable migration (one queue job, one ledger write)',
    kind: 'int',
    default: '100',
    min: 1,
  },
  migrationChunkBytes: {
    env: 'MIGRATION_CHUNK_BYTES',
    doc: 'Most input bytes of one chunk of a durable migration (a chunk holds at least one object)',
    kind: 'int',
    default: '1048576',
    min: 1,
  },
  migrationChunksAhead: {
    env: 'MIGRATION_CHUNKS_AHEAD',
    doc: "Chunks queued ahead of the workers; the listing waits beyond it, so Redis memory does not grow with a migration's size",
    kind: 'int',
    default: '64',
    min: 1,
  },
  migrationObjectConcurrency: {
    env: 'MIGRATION_OBJECT_CONCURRENCY',
    doc: 'Objects of one chunk a worker converts at once',
    kind: 'int',
    default: '4',
    min: 1,
  },
  migrationLeaseMs: {
    env: 'MIGRATION_LEASE_MS',
    doc: "How long a worker's lease on a chunk's objects lasts (renewed while it works); a dead worker's objects go to another after it",
    kind: 'int',
    default: '60000',
    min: 1000,
  },
  migrationSweepIntervalMs: {
    env: 'MIGRATION_SWEEP_INTERVAL_MS',
    doc: 'How often each worker re-enqueues the listing and chunks of running migrations that are not in the queue (after a Redis loss or a crash)',
    kind: 'int',
    default: '30000',
    min: 100,
  },
  migrationTenantRate: {
    env: 'MIGRATION_TENANT_RATE',
    doc: "Objects per second all of one tenant's migrations convert together; 0: no tenant limit (each migration's own rateLimit still applies)",
    kind: 'int',
    default: '0',
    min: 0,
  },
  convertJsonMaxBytes: {
    env: 'CONVERT_JSON_MAX_BYTES',
    doc: 'Largest content a conversion answers as one flattened JSON JWE (Accept: application/jose+json, held in memory); larger answers 413 and multipart/mixed streams any size',
    kind: 'int',
    default: '16777216',
    min: 1024,
  },
  migrationObjectRetention: {
    env: 'MIGRATION_OBJECT_RETENTION',
    doc: "Seconds an uploaded file or a conversion result stays in the tenants' object storage before a worker deletes it (0 keeps them until deleted through the API)",
    kind: 'int',
    default: '0',
    min: 0,
  },
  // connection limits: what a client without credentials may hold open. Bodies that
  // stall, headers that never end and floods of connections from one address are refused, and the
  // health endpoints stay answerable beyond the caps.
  bodyIdleTimeoutMs: {
    env: 'BODY_IDLE_TIMEOUT_MS',
    doc: 'A request body that sends no byte for this long (while the service waits to read it) answers 408 and its connection closes; streaming uploads included',
    kind: 'int',
    default: '30000',
    min: 100,
  },
  smallBodyTimeoutMs: {
    env: 'SMALL_BODY_TIMEOUT_MS',
    doc: 'Whole time a request may take to send its body on the small-body routes (token, JSON, forms), however it trickles; streaming uploads have no such limit',
    kind: 'int',
    default: '10000',
    min: 100,
  },
  headersTimeoutMs: {
    env: 'HEADERS_TIMEOUT_MS',
    doc: 'Time a connection has to send the headers of a request; later the connection answers 408 and closes',
    kind: 'int',
    default: '20000',
    min: 100,
  },
  maxConnectionsPerAddress: {
    env: 'MAX_CONNECTIONS_PER_ADDRESS',
    doc: 'Open connections one client address may hold; beyond, requests answer 503 with Retry-After (0: no cap; behind a proxy every client has its address)',
    kind: 'int',
    default: '256',
    min: 0,
  },
  maxConnections: {
    env: 'MAX_CONNECTIONS',
    doc: 'Open connections in all; beyond, requests answer 503 with Retry-After',
    kind: 'int',
    derived: true,
    defaultDoc: '4096, or 3/4 of the open-file limit when that is lower',
    min: 1,
  },
  connectionReserve: {
    env: 'CONNECTION_RESERVE',
    doc: 'Connections accepted beyond the caps so that a GET of /healthz or /readyz is still served (others answer 503); more are closed unanswered',
    kind: 'int',
    default: '64',
    min: 1,
  },
  // Read by shared/node-flags.ts before the config loads (it must relaunch Node first); listed
  // here so that it is documented and a bad value still stops the start.
  nodeFlags: {
    env: 'KEYWARD_NODE_FLAGS',
    doc: "off: run Node with its own defaults instead of the service's flags (heap, semi-space, compile cache)",
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
  },
} as const satisfies Record<string, Field>;
