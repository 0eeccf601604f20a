/** Jest runs the ESM TypeScript sources through SWC (type stripping only). */
export default {
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2024' }, module: { type: 'es6' } },
    ],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  setupFiles: ['<rootDir>/test/support/env.ts'],
  // A test file leaves nothing running, whatever failed: its environment closes what it started
  // and stops every process below its worker when it ends; the global teardown kills any recorded
  // process group still alive (docs/testing.md).
  testEnvironment: '<rootDir>/test/support/environment.ts',
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // The limits below are for an idle machine; timeouts.ts stretches them by the load.
  setupFilesAfterEnv: ['<rootDir>/test/support/timeouts.ts'],
  testTimeout: 60000,
  // Two test files at a time (--maxWorkers=2 in package.json: CI took 29 minutes one at a time on
  // the 2 cores), each in a worker process that jest replaces
  // once it holds more than this after a file: in one process the test runner reached 3.3 GB RSS
  // after ~100 files, and the tests that force a GC to measure memory then ran 28 times slower
  // (200 MiB through convert: 60 s in CI against 2.2 s alone).
  workerIdleMemoryLimit: '1GB',
};
