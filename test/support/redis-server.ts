/**
 * A private redis-server child for tests that restart Redis: append-only persistence on (as
 * production runs it), a free port on 127.0.0.1 and a temp directory. `restart()` stops it
 * cleanly (SIGTERM, which flushes the append-only file) and starts it again on the same port and
 * directory; `close()` stops it and removes the directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './free-port.ts';

export interface TestRedisServer {
  url: string;
  port: number;
  directory: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Resolves once the port answers PING with PONG. */
async function waitForPong(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = createConnection({ port, host: '127.0.0.1' });
      sock.setTimeout(500);
      sock.once('connect', () => sock.write('PING\r\n'));
      sock.once('data', (d) => {
        sock.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
      sock.once('error', () => resolve(false));
      sock.once('timeout', () => {
        sock.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on ${port} did not answer within ${timeoutMs} ms`);
}

export async function startRedisServer(): Promise<TestRedisServer> {
  const directory = await mkdtemp(path.join(tmpdir(), 'keyward-redis-'));
  const port = await freePort();
  let child: ChildProcess | null = null;
  let output = '';

  const start = async () => {
    output = '';
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        directory,
        '--appendonly',
        'yes',
        '--save',
        '',
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout!.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr!.on('data', (c: Buffer) => {
      output += c.toString();
    });
    try {
      await waitForPong(port, 10_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${output}`);
    }
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGTERM');
    const kill = setTimeout(() => c.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    directory,
    stop,
    start,
    async restart() {
      await stop();
      await start();
    },
    async close() {
      await stop();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
