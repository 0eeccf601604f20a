/**
 * The Node settings the API and the batch worker run with, measured on this machine's 2 cores
 * (bench/pkcs7.bench.ts, bench/crypto.bench.ts; the figures are in bench/results/design-figures.md):
 *
 * --max-semi-space-size=4 (MB): V8's young generation stays small. A conversion allocates a few
 *   Buffers of 64 to 112 KiB per batch streamed, and their memory is only released when the young
 *   generation is swept; at Node's default size (16 MB semi-spaces here) hundreds of MB of dead
 *   buffers pile up between sweeps, out of cache, and a large conversion costs several times the
 *   CPU. 1 MB costs the small requests: the 64 connections in flight keep their objects alive
 *   across the frequent scavenges, which then promote them. 4 MB keeps most of the conversion's gain and gives the small requests their
 *   CPU and their p99 back (measured alternately in one session).
 * Concurrent array-buffer sweeping stays on (V8's default): the memory of dead Buffers is freed
 *   by a V8 background thread after the GC that finds them. Turning it off kept malloc from
 *   growing ahead of the frees during a conversion before the malloc settings below; with them
 *   peak RSS is the same either way, while sweeping inside the pause makes every major GC about
 *   twice as long (the token p99 spikes) and conversions slower.
 * --no-allocation-site-pretenuring: V8 never decides that the objects of an allocation site are
 *   long-lived and allocates them straight in the old generation. It decides so for a site whose
 *   objects were mostly alive at one scavenge, and in a streamed conversion, whose buffers bring a
 *   scavenge every few MB, a hot site can be caught so once (--trace-pretenuring-statistics shows
 *   it). From then on its objects, dead a moment later, wait for a full mark-compact, and a
 *   conversion thread's isolate is small: mark-compacts every MB or so instead of almost none,
 *   with their marking on V8's helper threads (bench/pkcs7-concurrent.bench.ts with
 *   CONVERT_THREAD_FROM=1 and --trace-gc). With the flag no isolate was caught, and conversions
 *   on threads cost less CPU; on the event loop, and for small requests, it changes nothing.
 * --liftoff-only: WebAssembly runs on V8's baseline compiler only. The embedded database is
 *   PGlite, a 9 MB WASM module, and V8 recompiling its hot functions with TurboFan in the
 *   background left most of the process's idle RSS behind: with this flag PGlite idles at about
 *   half and initialises a new directory faster (bench/embedded.bench.ts has every option
 *   tried). Nothing else in
 *   the service runs WASM once the compile cache is warm; on Postgres the flag changes nothing.
 * NODE_COMPILE_CACHE: Node keeps the type-stripped form of our .ts files (each entry checked
 *   against its file's content hash) in a directory of this user's under the OS temp directory
 *   (compileCacheDir), so a warm start never loads the WASM type stripper, which takes RSS in
 *   every isolate (the main thread and each pool thread). An operator's own NODE_COMPILE_CACHE
 *   wins; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
 * glibc malloc: two arenas instead of eight per core for the main thread, the pool and libuv's
 *   threads, and fixed trim and mmap thresholds of 128 KiB (glibc otherwise raises them after
 *   the first large free, and freed buffer memory then stays in the process). Measured with
 *   bench/pkcs7.bench.ts on Postgres: lower idle and peak RSS, conversion CPU unchanged. (A
 *   64 KiB mmap threshold, so every 64 KiB buffer is mapped and unmapped, doubled the CPU.)
 *
 * `node api/server.ts` and `node workers/worker.ts` get them however they are started (npm scripts,
 * the Dockerfile, tests, benches): the entry replaces itself, same PID and stdio, with a Node
 * started with them (process.execve) before loading anything else. KEYWARD_NODE_FLAGS=off
 * skips that (to run under a debugger with other flags, say).
 */
import cluster from 'node:cluster';
import { tmpdir } from 'node:os';
import { privateTempDir } from './private-dir.ts';

export const SERVICE_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=4',
  '--no-allocation-site-pretenuring',
  '--liftoff-only',
];

/** glibc malloc settings the process starts with, unless the operator set these variables. */
export const MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_TRIM_THRESHOLD_: '131072',
  MALLOC_MMAP_THRESHOLD_: '131072',
};

/**
 * The compile cache directory, or null when there is none to trust. Node runs what it finds
 * there, so it must be this user's own (shared/private-dir.ts says when it is).
 */
export function compileCacheDir(base = tmpdir()): string | null {
  return privateTempDir('keyward-node-compile-cache', base);
}

/**
 * The environment of the crypto pool's threads: they read NODE_COMPILE_CACHE when they start, so
 * with it warm a thread never loads the type stripper. The process's own cache when the entry set
 * one, else this user's (for pools made without the entry, as in tests), none with the service
 * flags off; undefined leaves the threads the process's environment.
 */
export function poolThreadEnv(): NodeJS.ProcessEnv | undefined {
  const cache =
    process.env.NODE_COMPILE_CACHE ??
    (process.env.KEYWARD_NODE_FLAGS === 'off' ? null : compileCacheDir());
  return cache ? { ...process.env, NODE_COMPILE_CACHE: cache } : undefined;
}

/**
 * The environment of a child process that runs with SERVICE_NODE_FLAGS (the embedded database's,
 * shared/db/embedded.ts): the pool threads' (compile cache) with the malloc settings, where the
 * operator's own values of those win.
 */
export function serviceChildEnv(): NodeJS.ProcessEnv {
  return { ...MALLOC_ENV, ...(poolThreadEnv() ?? process.env) };
}

const flagName = (flag: string) => flag.split('=', 1)[0];

/**
 * Re-executes this process with SERVICE_NODE_FLAGS, MALLOC_ENV and the compile cache when it
 * lacks any of them. An operator's own value of a flag (command line or NODE_OPTIONS) or
 * variable is kept. Not in a process with an IPC channel (a forked child or cluster worker: the
 * channel would not survive), and a failed re-exec (a platform or permission model without
 * execve) leaves the process running as it was started.
 */
export function relaunchWithServiceFlags(): void {
  if (process.env.KEYWARD_NODE_FLAGS === 'off' || typeof process.execve !== 'function') return;
  if (process.channel || cluster.isWorker) return;
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].map(
    flagName,
  );
  const missingFlags = SERVICE_NODE_FLAGS.filter((f) => !given.includes(flagName(f)));
  const wanted: Record<string, string> = { ...MALLOC_ENV };
  if (process.env.NODE_COMPILE_CACHE === undefined) {
    const dir = compileCacheDir();
    if (dir) wanted.NODE_COMPILE_CACHE = dir;
  }
  const missingEnv = Object.entries(wanted).filter(([name]) => process.env[name] === undefined);
  if (missingFlags.length === 0 && missingEnv.length === 0) return;
  try {
    process.execve(
      process.execPath,
      [process.execPath, ...process.execArgv, ...missingFlags, ...process.argv.slice(1)],
      { ...process.env, ...Object.fromEntries(missingEnv) },
    );
  } catch (err) {
    process.stderr.write(
      `keyward: starting without the service's Node settings (shared/node-flags.ts): ${(err as Error).message}\n`,
    );
  }
}
