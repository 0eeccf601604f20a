#!/usr/bin/env node
// The package bin, plain JavaScript so any Node can read it. It answers --version at once (no
// other module loaded), checks the Node version and says what it needs, then starts the CLI: the
// compiled build when this is an installed package (`npm run pack:cli`; Node refuses to strip
// TypeScript types under node_modules, and stripping costs about a second a call), else the
// TypeScript sources of a checkout (Node 24).
import { existsSync, readFileSync } from 'node:fs';

const MIN_NODE = 20;
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${pkg.version}\n`);
  process.exit(0);
}
const major = Number(process.versions.node.split('.')[0]);
if (major < MIN_NODE) {
  process.stderr.write(
    `keyward: needs Node ${MIN_NODE} or later (this is ${process.version}); install a newer Node and run it again\n`,
  );
  process.exit(2);
}
const built = new URL('../dist/bin/keyward.js', import.meta.url);
try {
  await (existsSync(built) ? import(built.href) : import('./keyward.ts'));
} catch (err) {
  if (
    err &&
    (err.code === 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING' ||
      err.code === 'ERR_UNKNOWN_FILE_EXTENSION')
  ) {
    process.stderr.write(
      `keyward: this Node (${process.version}) cannot run the TypeScript sources (${err.code}): run a checkout with Node 24 (npx keyward), or install the packaged CLI (npm run pack:cli, then npm install -g the .tgz it prints)\n`,
    );
    process.exit(2);
  }
  throw err;
}
