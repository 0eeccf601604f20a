#!/usr/bin/env node
// The package bin. Node 24 runs the TypeScript sources directly, but refuses to strip types
// from files under node_modules; this plain-JS shim lets `npx keyward` start the CLI from the
// project (or a checkout), and says what to do when it cannot.
try {
  await import('./keyward.ts');
} catch (err) {
  if (
    err &&
    (err.code === 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING' ||
      err.code === 'ERR_UNKNOWN_FILE_EXTENSION')
  ) {
    console.error(
      `keyward: this Node (${process.version}) cannot run the TypeScript CLI from here (${err.code}); run it from a checkout of the project with Node 24: npx keyward ...`,
    );
    process.exit(2);
  }
  throw err;
}
