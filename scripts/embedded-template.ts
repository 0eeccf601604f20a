/**
 * `npm install` runs this (package.json `postinstall`): it makes this user's template of the
 * embedded database (shared/db/pglite.ts), PGlite's initdb, so that the first `npm start` after
 * a clone copies a directory instead of initialising one (seconds of WASM work). It never fails
 * the install: without a template the first start initialises the directory itself.
 */
import { prepareTemplate } from '../shared/db/pglite.ts';

const t0 = performance.now();
try {
  const template = await prepareTemplate();
  const seconds = ((performance.now() - t0) / 1000).toFixed(1);
  process.stdout.write(
    template
      ? `keyward: the embedded database template is ready (${template}, ${seconds} s)\n`
      : 'keyward: no private temp directory for the embedded database template; the first start will initialise its database\n',
  );
} catch (err) {
  process.stdout.write(
    `keyward: no embedded database template (${(err as Error).message}); the first start will initialise its database\n`,
  );
}
