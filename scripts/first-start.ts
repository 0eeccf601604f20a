/**
 * `npm install` runs this (package.json `postinstall`) to prepare the first `npm start` after a
 * clone, which otherwise spends seconds on work done once per machine:
 * - the embedded database's template (shared/db/pglite.ts): PGlite's initdb, so a new DATA_DIR
 *   is a copy instead;
 * - Node's compile cache (shared/node-flags.ts): the type-stripped and compiled form of the API's
 *   and the database process's modules, made under the same Node settings the service runs with
 *   (the relaunch below), since V8 refuses code cached under other flags.
 * Measured by bench/embedded.bench.ts ("fresh clone after npm install"). It never fails the
 * install: whatever is missing, the first start makes itself.
 */
import { relaunchWithServiceFlags } from '../shared/node-flags.ts';

relaunchWithServiceFlags();
const say = (line: string) => process.stdout.write(`keyward: ${line}\n`);
const t0 = performance.now();
try {
  const { prepareTemplate } = await import('../shared/db/pglite.ts');
  const template = await prepareTemplate();
  say(
    template
      ? `the embedded database template is ready (${template}, ${((performance.now() - t0) / 1000).toFixed(1)} s)`
      : 'no private temp directory for the embedded database template; the first start will initialise its database',
  );
} catch (err) {
  say(`no embedded database template (${(err as Error).message}); the first start will make it`);
}
try {
  // Loading the modules is what fills the cache; nothing in them starts until called.
  await import('../api/app.ts');
  await import('../api/context.ts');
  await import('../api/services/bootstrap.ts');
  await import('../api/services/keys/rotation-scheduler.ts');
  await import('../shared/db/embedded.ts');
  say(`the compile cache is warm (${process.env.NODE_COMPILE_CACHE ?? 'none'})`);
} catch (err) {
  say(`the compile cache is not warm (${(err as Error).message}); the first start will fill it`);
}
// Module-level handles (a pool, a timer) must not keep npm install waiting.
process.exit(0);
