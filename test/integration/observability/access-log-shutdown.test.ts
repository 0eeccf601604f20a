/**
 * The access log goes to stdout through a buffered asynchronous destination, so the
 * lines of the last requests are still in memory when a shutdown begins. `node api/server.ts` as
 * `npm start` runs it, a burst of requests, SIGTERM as soon as the last answer arrived: every
 * request's line must be on stdout when the process has exited.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCHEMA } from '../../../shared/config/schema.ts';
import { freePort } from '../../../support/free-port.ts';
import { sleep } from '../../support/time.ts';

const SERVER = new URL('../../../api/server.ts', import.meta.url).pathname;
const BURST = 400;
const IN_FLIGHT = 32;

describe('the access log of node api/server.ts at shutdown', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keyward-access-shutdown-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('when SIGTERM follows a burst of requests at once, then every request has its access line on stdout', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const field of Object.values(SCHEMA)) delete env[field.env];
    const port = await freePort();
    const child = spawn(process.execPath, [SERVER], {
      env: { ...env, PORT: String(port), DATA_DIR: dataDir, POOL_THREADS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    const url = `http://127.0.0.1:${port}`;
    try {
      const deadline = Date.now() + 40_000;
      for (;;) {
        const up = await fetch(`${url}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (up) break;
        if (child.exitCode !== null || Date.now() > deadline)
          throw new Error(`the server did not start:\n${out}`);
        await sleep(50);
      }
      let next = 0;
      const worker = async () => {
        while (next < BURST) {
          const id = `burst-${next++}`;
          const res = await fetch(`${url}/healthz`, { headers: { 'x-request-id': id } });
          await res.arrayBuffer();
          expect(res.status).toBe(200);
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const ids = new Set(
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { reqId?: string; msg: string; route?: string })
        .filter((l) => l.msg === 'request' && l.route === '/healthz')
        .map((l) => l.reqId),
    );
    const missing = Array.from({ length: BURST }, (_, i) => `burst-${i}`).filter(
      (id) => !ids.has(id),
    );
    expect(missing).toEqual([]);
    expect(out).toContain('"msg":"shutdown complete"');
  });
});
