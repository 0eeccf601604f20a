/**
 * A private redis-server child for tests that restart Redis: append-only persistence on (as
 * production runs it), a free port on 127.0.0.1 and a temp directory. `restart()` stops it
 * cleanly (SIGTERM, which flushes the append-only file) and starts it again on the same port and
 * directory; `close()` stops it and removes the directory. The child runs in a process group of
 * its own (processes.ts), so the file's end kills it even when the test never called `close()`.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NotReadyError, scaled, waitUntilReady } from '../../support/deadline.ts';
import { closeWhenFileEnds } from '../../support/file-teardown.ts';
import { freePort } from '../../support/free-port.ts';
import { spawnTracked } from '../../support/processes.ts';

export interface TestRedisServer {
  url: string;
  port: number;
  directory: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Answers whether the port answers PING with PONG. */
function pong(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
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
}

export function startRedisServer(): Promise<TestRedisServer> {
  return closeWhenFileEnds('redis-server', startServer(), (redis) => redis.close());
}

async function startServer(): Promise<TestRedisServer> {
  const directory = await mkdtemp(path.join(tmpdir(), 'keyward-redis-'));
  const port = await freePort();
  let child: ChildProcess | null = null;
  let output = '';

  const start = async () => {
    output = '';
    child = spawnTracked(
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
    const started = child;
    try {
      await waitUntilReady(`redis-server on port ${port}`, () => {
        if (started.exitCode !== null)
          throw new NotReadyError(`redis-server exited with ${started.exitCode}`);
        return pong(port);
      });
    } catch (err) {
      started.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n${output}`);
    }
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGTERM');
    const kill = setTimeout(() => c.kill('SIGKILL'), scaled(5000));
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
