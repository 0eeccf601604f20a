/**
 * Starts the real API in-process on 127.0.0.1:0 over a fresh database, with the log captured
 * in memory so tests can grep it. `stop()` closes everything the start opened; the file's end
 * closes it too, if the test never did (or never got it: a start past its deadline).
 */
import { Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { loadConfig, type Config } from '../shared/config/index.ts';
import type { AppContext } from '../api/context.ts';
import { closeContext, createContext } from '../api/open-context.ts';
import { createHttpServer } from '../api/http-server.ts';
import { bootstrapPlatform } from '../api/services/bootstrap.ts';
import { attachRotationScheduler } from '../api/services/keys/rotation-scheduler.ts';
import { createTestDatabase } from './database.ts';
import { withDeadline } from './deadline.ts';
import { closeWhenFileEnds, once } from './file-teardown.ts';

export const ADMIN_EMAIL = 'root@keyward.test';
export const ADMIN_PASSWORD = 'correct horse battery staple';

export interface TestApp {
  url: string;
  ctx: AppContext;
  config: Config;
  platformTenantId: string;
  /** Every log line written so far, joined. */
  logText(): string;
  stop(): Promise<void>;
}

/**
 * Starts an API instance; `env` overrides configuration variables. `listenPort` binds a chosen
 * port (0 by default), for clients that check the issuer against the URL they discovered it at.
 */
export function startTestApp(
  env: Record<string, string> = {},
  shared?: { databaseUrl?: string; dataDir?: string },
  listenPort = 0,
): Promise<TestApp> {
  const started = closeWhenFileEnds('the API', startApp(env, shared, listenPort), (app) =>
    app.stop(),
  );
  return withDeadline('the API (database, migrations, bootstrap, listen)', started);
}

async function startApp(
  env: Record<string, string>,
  shared: { databaseUrl?: string; dataDir?: string } | undefined,
  listenPort: number,
): Promise<TestApp> {
  // The API drops its database when it stops (and the file's end stops the API).
  const db = shared ? null : await createTestDatabase({ dropAtFileEnd: false });
  const dataDir = shared?.dataDir ?? mkdtempSync(join(tmpdir(), 'keyward-test-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'info',
    POOL_THREADS: '2',
    // An answer that does not fit its documented schema is a 500 (test/support/env.ts).
    ANSWER_CHECK: 'strict',
    KEYWARD_BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    KEYWARD_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    KEYWARD_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
    ...((shared?.databaseUrl ?? db?.url)
      ? { DATABASE_URL: (shared?.databaseUrl ?? db?.url) as string }
      : {}),
    ...env,
  });
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const cleanUp = async () => {
    await db?.drop();
    if (!shared) rmSync(dataDir, { recursive: true, force: true });
  };
  let ctx: AppContext;
  try {
    ctx = await createContext(config, {
      inMemoryDatabase: !config.databaseUrl && !shared,
      logDestination: sink,
    });
  } catch (err) {
    await cleanUp();
    throw err;
  }
  let server: Server | undefined;
  // Each step that fails leaves nothing open: the context (its database process, pool threads,
  // Redis connections) is closed before the error goes on.
  const stop = once(async () => {
    if (server?.listening)
      await new Promise<void>((resolve) => {
        server!.close(() => resolve());
        server!.closeAllConnections();
      });
    await closeContext(ctx);
    await cleanUp();
  });
  try {
    attachRotationScheduler(ctx);
    await bootstrapPlatform(ctx);
    const platform = await ctx.db('tenants').where({ is_platform: true }).first();
    server = createHttpServer(ctx).listen(listenPort, '127.0.0.1');
    await new Promise((resolve, reject) => {
      server!.once('listening', resolve);
      server!.once('error', reject);
    });
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      ctx,
      config,
      platformTenantId: platform.id,
      logText: () => lines.join(''),
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
