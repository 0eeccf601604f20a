/**
 * The embedded database as a child process (shared/db/pglite-server.ts): PGlite serving the
 * Postgres protocol on a Unix socket in a directory of this user's (mode 0700), reached through
 * the same `pg` client as a Postgres server.
 *
 * Why a process of its own (bench/embedded.bench.ts measures it; the figures are in
 * bench/results/design-figures.md): PGlite in the API process ran every query on the API's event
 * loop, synchronously in WASM, and kept its WASM heap, its compiled module and its file system
 * image in the API's memory. In-process the embedded API idled well above the same API on
 * Postgres, and conversions were slower, since every audit or key query of a request stopped the
 * event loop that streams the conversions. Out of process, the API is the same process whichever database it uses, and the
 * database's memory is its own process's (reported beside the API's by the bench).
 *
 * The child ends with the API: it is told to close, and it closes itself when the IPC channel
 * goes (the API exited or was killed). If it dies on its own, queries answer 503
 * database-unavailable, and it is started again on the same directory (Postgres recovery).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SERVICE_NODE_FLAGS, serviceChildEnv } from '../node-flags.ts';
import { privateTempDir } from '../private-dir.ts';

const SERVER = new URL('./pglite-server.ts', import.meta.url).pathname;
/** The socket's name as `pg` derives it from a directory and a port. */
export const EMBEDDED_PORT = 5432;
const CLOSE_TIMEOUT_MS = 10_000;
/**
 * Restarts back off from 1 s to 30 s while the process keeps failing (dies within a minute of
 * its start, or cannot start at all), so a database that cannot open is retried without a
 * restart and a log line every second; a process that ran a minute starts the count again.
 */
const RESTART_DELAY_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const HEALTHY_AFTER_MS = 60_000;
export const restartDelay = (failures: number): number =>
  Math.min(RESTART_MAX_MS, RESTART_DELAY_MS * 2 ** Math.max(0, failures - 1));

/**
 * Where the embedded database of `dataDir` listens: a directory named after the data
 * directory's real path, inside this user's private temp directory (mode 0700, shared/private-dir.ts),
 * so a worker started with the same DATA_DIR finds the API's database (`npm run worker` beside
 * `npm start`) and no other local user can reach it. Null when there is no private directory to trust.
 */
export function embeddedSocketDir(dataDir: string): string | null {
  const base = privateTempDir('keyward-db');
  if (!base) return null;
  let path = resolve(dataDir);
  try {
    path = realpathSync(path);
  } catch {
    // Not made yet: the API makes it before its database starts.
  }
  return join(base, `data-${createHash('sha256').update(path).digest('hex').slice(0, 16)}`);
}

export interface EmbeddedDatabase {
  /** The socket's directory: `pg`'s `host` for a Unix socket. */
  socketDir: string;
  close(): Promise<void>;
}

export interface EmbeddedOptions {
  /** PGlite's directory is `<dataDir>/pglite`; null keeps the database in memory (tests). */
  dataDir: string | null;
  /** Told when the child died on its own, and whether it is being started again. */
  onExit?: (info: { code: number | null; signal: string | null; restarting: boolean }) => void;
}

/** True when a server answers on the Unix socket `path` (an API already serving this DATA_DIR). */
function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(2_000, () => done(true));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Starts the embedded database's process and resolves once it accepts connections. */
export async function startEmbeddedDatabase(opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const shared = opts.dataDir === null ? null : embeddedSocketDir(opts.dataDir);
  const socketDir = shared ?? mkdtempSync(join(privateTempDir('keyward-db') ?? tmpdir(), 'run-'));
  if (shared) {
    mkdirSync(shared, { recursive: true, mode: 0o700 });
    // A second process on the same directory would corrupt it and take the first one's socket.
    if (await listening(join(shared, `.s.PGSQL.${EMBEDDED_PORT}`)))
      throw new Error(
        `the embedded database of ${opts.dataDir} is in use by another process (a running Keyward API, or a restore): stop it first`,
      );
  }
  const socketPath = join(socketDir, `.s.PGSQL.${EMBEDDED_PORT}`);
  let child: ChildProcess | null = null;
  let closing = false;
  let failures = 0;

  const spawnChild = async (): Promise<void> => {
    const proc = fork(SERVER, [opts.dataDir ?? '', socketPath], {
      execPath: process.execPath,
      execArgv: [...SERVICE_NODE_FLAGS],
      env: serviceChildEnv(),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    child = proc;
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => {
        proc.kill('SIGKILL');
        reject(err);
      };
      proc.once('error', fail);
      proc.on('message', (m: { ready?: boolean; error?: string }) => {
        if (m?.ready) resolve();
        else if (m?.error) fail(new Error(`embedded database: ${m.error}`));
      });
      proc.once('exit', (code) => reject(new Error(`embedded database exited with ${code}`)));
    });
    proc.removeAllListeners('exit');
    const startedAt = Date.now();
    proc.once('exit', (code, signal) => {
      if (closing) return;
      const restarting = opts.dataDir !== null;
      opts.onExit?.({ code, signal, restarting });
      failures = Date.now() - startedAt < HEALTHY_AFTER_MS ? failures + 1 : 1;
      if (restarting) restart();
    });
  };

  /** Starts the process again after the back-off; a failed start counts and is retried. */
  const restart = (): void => {
    setTimeout(() => {
      if (closing) return;
      spawnChild().catch(() => {
        failures += 1;
        opts.onExit?.({ code: null, signal: null, restarting: true });
        restart();
      });
    }, restartDelay(failures)).unref();
  };

  try {
    await spawnChild();
  } catch (err) {
    rmSync(socketDir, { recursive: true, force: true });
    throw err;
  }
  return {
    socketDir,
    async close() {
      closing = true;
      const proc = child;
      if (proc && proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
        if (proc.connected) proc.send('close');
        const timer = setTimeout(() => proc.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}
