/**
 * The embedded database: PGlite (Postgres in WASM) in DATA_DIR/pglite, started with settings
 * sized for Keyward, a new directory made from a template when one is at hand.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { privateTempDir } from '../private-dir.ts';

/**
 * Postgres settings of the embedded database, passed at its start. PGlite's defaults are sized
 * for a server (shared_buffers 160 MB, wal_buffers 5 MB, temp_buffers 10 MB), and every page of
 * them that is touched stays in the WASM heap for the life of the process; Keyward's tables are
 * small. Measured with PGlite alone on an existing directory (open, migrate, idle after 1 s, with
 * the service's Node flags and malloc settings): 285 MB with the defaults, 152 MB with these
 * (bench/embedded.bench.ts has every option tried).
 */
const PGLITE_SETTINGS = ['shared_buffers=8MB', 'wal_buffers=256kB', 'temp_buffers=1MB'];

/** Resolves PGlite's files for the initialisation thread and the template's version. */
const require = createRequire(import.meta.url);

const pgliteStartParams = () => [
  ...PGlite.defaultStartParams,
  ...PGLITE_SETTINGS.flatMap((s) => ['-c', s]),
];

/** The embedded database in DATA_DIR/pglite (in memory without a directory), started and ready. */
export async function openPglite(dataDir: string | null | undefined): Promise<PGlite> {
  let dir: string | undefined;
  if (dataDir !== null && dataDir !== undefined) {
    dir = join(dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
  }
  const startParams = pgliteStartParams();
  if (dir && !existsSync(join(dir, 'PG_VERSION'))) await createDirectory(dir, startParams);
  return PGlite.create({ dataDir: dir, startParams });
}

/**
 * PGlite initialises a new directory (initdb) in a second WASM instance of its own, so a first
 * start held two WASM heaps and both compiled modules, and the process kept them until a major
 * GC that an idle process never runs: 525 MB idle after the first start. Run in a worker thread,
 * all of it is freed with the thread's isolate when it ends, and the directory is then opened
 * as on any later start.
 */
async function initialisePglite(dataDir: string, startParams: string[]): Promise<void> {
  const worker = new Worker(INIT_WORKER, {
    eval: true,
    workerData: {
      module: require.resolve('@electric-sql/pglite'),
      options: { dataDir, startParams },
    },
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`PGlite initialisation exited with ${code}`)),
    );
  });
}

/** The initialisation thread's code: create the directory's database, close it. */
const INIT_WORKER = `
const { workerData } = require('node:worker_threads');
const { PGlite } = require(workerData.module);
PGlite.create(workerData.options).then((pg) => pg.close());
`;

/**
 * Initialising a directory (PGlite's initdb) is most of a first start: 6.9 to 16 s on this
 * machine's 2 shared cores, where copying an initialised one takes a fraction of a second. So a
 * pristine initialised directory is kept once per user and PGlite version as a template, in a
 * private directory under the OS temp directory (shared/private-dir.ts: this user's own, mode
 * 0700), and every new directory is a copy of it. `npm install` makes it (scripts/
 * first-start.ts), so even the first `npm start` after a clone copies; without it, the
 * first start makes it. It holds only initdb's system catalogues: Keyward's tables, tenant and
 * keys are made in the copy.
 */
async function createDirectory(dir: string, startParams: string[]): Promise<void> {
  const template = await prepareTemplate(startParams);
  if (template) cpSync(template, dir, { recursive: true });
  else await initialisePglite(dir, startParams);
}

/** The template directory, made now when missing; null when there is no private place for it. */
export async function prepareTemplate(startParams = pgliteStartParams()): Promise<string | null> {
  const template = templateDir();
  if (!template) return null;
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  // Made aside and renamed into place, so a concurrent start never copies half a template.
  const staging = `${template}.${randomBytes(6).toString('hex')}`;
  try {
    await initialisePglite(staging, startParams);
    renameSync(staging, template);
  } catch {
    // Another process placed its template first, or the temp directory is full.
    rmSync(staging, { recursive: true, force: true });
  }
  return existsSync(join(template, 'PG_VERSION')) ? template : null;
}

/** Where this PGlite version's template is kept, or null without a private cache directory. */
function templateDir(): string | null {
  const cache = privateTempDir('keyward-pglite-template');
  if (!cache) return null;
  const pkg = join(dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json');
  const { version } = JSON.parse(readFileSync(pkg, 'utf8')) as { version: string };
  return join(cache, `pglite-${version}`);
}
