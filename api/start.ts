/**
 * The API process's start (its entry is api/server.ts, `npm start`): config, context, bootstrap,
 * listen, and an ordered, idempotent shutdown on SIGTERM/SIGINT (HTTP server, then the context's
 * parts newest first: api/context.ts). With WEB_CONCURRENCY > 1 a
 * node:cluster primary forks that many API processes sharing the port.
 */
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { ConfigError, loadConfig, type Config } from '../shared/config/index.ts';
import { closeContext, createContext } from './open-context.ts';
import { createHttpServer } from './http-server.ts';
import { attachRotationScheduler } from './services/keys/rotation-scheduler.ts';
import { bootstrapPlatform, type BootstrapResult } from './services/bootstrap.ts';

/** A signal that arrives during start-up (migrations, bootstrap) is honoured once started. */
let pendingSignal: string | null = null;
let onSignal: (signal: string) => void = (signal) => {
  pendingSignal = signal;
};
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGINT', () => onSignal('SIGINT'));

/** Printed once, on the very first start, to stdout; never logged. */
function printBootstrap(boot: BootstrapResult | null): void {
  if (!boot) return;
  process.stdout.write(
    `\nKeyward bootstrap: platform tenant ${boot.tenantId}\n  administrator e-mail: ${boot.email}\n` +
      (boot.generatedPassword
        ? `  administrator password: ${boot.generatedPassword}\n  (shown only now; store it safely)\n\n`
        : '  password: as set in KEYWARD_BOOTSTRAP_ADMIN_PASSWORD\n\n'),
  );
}

async function startWorker(config: Config): Promise<void> {
  const ctx = await createContext(config);
  attachRotationScheduler(ctx);
  printBootstrap(await bootstrapPlatform(ctx));
  const server: Server = createHttpServer(ctx).listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address();
  ctx.logger.info({ address }, 'keyward api listening');

  let stopping: Promise<void> | null = null;
  const stop = (signal: string): Promise<void> => {
    stopping ??= (async () => {
      ctx.logger.info({ signal }, 'shutting down: closing HTTP server first');
      const force = setTimeout(() => {
        ctx.logger.error('shutdown timed out; exiting');
        process.exit(1);
      }, config.shutdownTimeoutMs);
      force.unref();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await closeContext(ctx);
      ctx.logger.info('shutdown complete');
    })();
    return stopping;
  };
  onSignal = (signal) => void stop(signal);
  if (pendingSignal) void stop(pendingSignal);
}

function startPrimary(config: Config): void {
  for (let i = 0; i < config.webConcurrency; i += 1) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (signal !== 'SIGTERM' && signal !== 'SIGINT' && code !== 0) {
      console.error(
        `api process ${worker.process.pid} exited (${signal ?? code}); starting another`,
      );
      cluster.fork();
    }
  });
  onSignal = (signal) => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(signal as NodeJS.Signals);
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  if (config.webConcurrency > 1 && cluster.isPrimary) {
    // The first process bootstraps and migrates alone, so forked processes never race on it.
    const ctx = await createContext(config);
    printBootstrap(await bootstrapPlatform(ctx));
    await closeContext(ctx);
    startPrimary(config);
    return;
  }
  await startWorker(config);
}

try {
  await main();
} catch (err) {
  // A variable that is invalid, or that does not fit the data (a master key that opens nothing):
  // one line naming it, exit code 2.
  if (err instanceof ConfigError) {
    console.error(`keyward: invalid configuration: ${err.message}`);
    process.exit(2);
  }
  throw err;
}
