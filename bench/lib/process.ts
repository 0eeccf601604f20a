/**
 * Child processes for benchmarks: a free port, a Node 24 child started with the same binary as
 * the bench (process.execPath), waited on until a URL answers 200, stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { SCHEMA } from '../../shared/config/schema.ts';

export { freePort } from '../../support/free-port.ts';

/** process.env without any Keyward configuration variable, so a child starts on defaults. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const field of Object.values(SCHEMA)) delete env[field.env];
  return { ...env, ...extra };
}

const OUTPUT_HEAD = 64 * 1024;
const OUTPUT_TAIL = 64 * 1024;

export interface Child {
  process: ChildProcess;
  /** stdout and stderr so far (the first and the latest 64 KiB), for diagnosing a failed start. */
  output(): string;
  /** SIGTERM, then the exit code (SIGKILL after 10 s). */
  stop(): Promise<number | null>;
}

/**
 * Spawns `node <args>` and resolves once `readyUrl` answers 200 (within `timeoutMs`); `prefix`
 * runs node through a wrapper that execs it (e.g. `prlimit --nofile=600 --`).
 */
export async function startChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  readyUrl: string,
  timeoutMs = 20_000,
  prefix: string[] = [],
): Promise<Child> {
  const [command, ...rest] = [...prefix, process.execPath, ...args];
  const child = spawn(command, rest, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  // The start of the output (the bootstrap line) and its latest part: a service under load writes
  // an access line per request, megabytes a run, which a bench need not hold.
  let head = '';
  let tail = '';
  let skipped = 0;
  const keep = (c: Buffer) => {
    if (head.length < OUTPUT_HEAD) {
      head += c.toString();
      return;
    }
    tail += c.toString();
    if (tail.length > 2 * OUTPUT_TAIL) {
      skipped += tail.length - OUTPUT_TAIL;
      tail = tail.slice(-OUTPUT_TAIL);
    }
  };
  const out = () =>
    skipped > 0 ? `${head}\n[... ${skipped} characters ...]\n${tail}` : head + tail;
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const handle: Child = {
    process: child,
    output: out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(kill);
      return code;
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(
        `${args.join(' ')} exited with ${child.exitCode} before it was ready:\n${out()}`,
      );
    try {
      const res = await fetch(readyUrl);
      await res.arrayBuffer();
      if (res.status === 200) return handle;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await handle.stop();
  throw new Error(`${args.join(' ')} was not ready within ${timeoutMs} ms:\n${out()}`);
}
