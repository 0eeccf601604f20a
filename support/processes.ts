/**
 * Every process a test file starts is gone when the file ends, whatever failed. Three layers,
 * explained in docs/testing.md:
 * - `spawnTracked` starts a child in its own process group (detached) and records the group in
 *   test-results/.processes/, so the whole tree (grandchildren a child left behind included) can
 *   be killed by group, even from another process;
 * - the test environment (test/support/environment.ts) sweeps, when a file ends, every process
 *   below its jest worker (what a test spawned directly, the embedded database the API forks,
 *   Chromium) and every recorded group of that worker: SIGTERM, then SIGKILL after a grace;
 * - jest's globalSetup and globalTeardown (test/support/global-teardown.ts) kill recorded
 *   groups whose worker is gone or that belong to the run that ends.
 * Linux only (/proc), as the project's machines are.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where spawned groups are recorded: per checkout, so runs in other checkouts are never touched. */
export const RECORD_DIR =
  process.env.KEYWARD_TEST_PROCESS_DIR ??
  join(new URL('../', import.meta.url).pathname, 'test-results', '.processes');

/** One row of the process table. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** One letter: R, S, D, Z (zombie: already dead, waiting to be reaped), ... */
  state: string;
  /** Clock ticks since boot: with the pid, names one process even after the pid is reused. */
  start: number;
}

/** Parses /proc/<pid>/stat; undefined once the process is gone. */
export function processInfo(pid: number): ProcessInfo | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    state: fields[0],
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    start: Number(fields[19]),
  };
}

/** Every process on the machine. */
export function processTable(): ProcessInfo[] {
  const rows: ProcessInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const row = processInfo(Number(name));
    if (row) rows.push(row);
  }
  return rows;
}

/** The command line of a process, for messages. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 200);
  } catch {
    return '?';
  }
}

/** True while `pid` runs (a zombie has exited: only its parent's wait is missing). */
export function alive(pid: number, start?: number): boolean {
  const row = processInfo(pid);
  return row !== undefined && row.state !== 'Z' && (start === undefined || row.start === start);
}

/** The processes below `root`, children first found first. */
export function descendantsOf(root: number, table = processTable()): ProcessInfo[] {
  const children = new Map<number, ProcessInfo[]>();
  for (const row of table) {
    const list = children.get(row.ppid) ?? [];
    list.push(row);
    children.set(row.ppid, list);
  }
  const found: ProcessInfo[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

function signal(target: number, sig: NodeJS.Signals): void {
  try {
    process.kill(target, sig);
  } catch {
    // already gone (ESRCH)
  }
}

/** What to stop: single processes and whole process groups (by the group's id). */
export interface StopTargets {
  pids?: Iterable<number>;
  groups?: Iterable<number>;
}

/**
 * Sends SIGTERM to every target, waits up to `graceMs` for them to go, then SIGKILLs what is
 * left and waits for that too (SIGKILL cannot be ignored). Groups are matched by their members
 * at each look, so a grandchild in a group is waited for as well. Answers the processes that
 * needed SIGKILL. Never signals the calling process's own group.
 */
export async function stopProcesses(
  targets: StopTargets,
  opts: { graceMs?: number; pollMs?: number } = {},
): Promise<ProcessInfo[]> {
  const own = processInfo(process.pid)?.pgid;
  const groups = new Set([...(targets.groups ?? [])].filter((g) => g > 1 && g !== own));
  const pids = new Set([...(targets.pids ?? [])].filter((p) => p > 1 && p !== process.pid));
  if (groups.size === 0 && pids.size === 0) return [];
  const remaining = () =>
    processTable().filter(
      (row) => row.state !== 'Z' && (pids.has(row.pid) || groups.has(row.pgid)),
    );
  const waitGone = async (ms: number) => {
    const deadline = Date.now() + ms;
    let left = remaining();
    while (left.length > 0 && Date.now() < deadline) {
      await sleep(opts.pollMs ?? 50);
      left = remaining();
    }
    return left;
  };
  for (const g of groups) signal(-g, 'SIGTERM');
  for (const p of pids) signal(p, 'SIGTERM');
  const stubborn = await waitGone(opts.graceMs ?? 3_000);
  if (stubborn.length === 0) return [];
  for (const g of groups) signal(-g, 'SIGKILL');
  for (const row of stubborn) signal(row.pid, 'SIGKILL');
  const left = await waitGone(10_000);
  if (left.length > 0)
    throw new Error(
      `still alive after SIGKILL: ${left.map((r) => `${r.pid} (${commandLine(r.pid)})`).join(', ')}`,
    );
  return stubborn;
}

/** The calling process's pid and start time: the owner of the groups it records. */
function self(): { pid: number; start: number } {
  return { pid: process.pid, start: processInfo(process.pid)?.start ?? 0 };
}

interface GroupRecord {
  group: number;
  start: number;
  owner: number;
  ownerStart: number;
  /** The owner's parent: the jest run, when the owner is one of its workers. */
  run: number;
  command: string;
}

/** Records a detached child's group, so teardown in any process can kill it by group. */
export function recordGroup(pid: number, command: string): void {
  const start = processInfo(pid)?.start;
  if (start === undefined) return;
  const owner = self();
  const record: GroupRecord = {
    group: pid,
    start,
    owner: owner.pid,
    ownerStart: owner.start,
    run: process.ppid,
    command,
  };
  mkdirSync(RECORD_DIR, { recursive: true });
  writeFileSync(join(RECORD_DIR, `${pid}-${start}.json`), JSON.stringify(record));
}

/** Forgets a group once its leader has exited and been reaped. */
export function forgetGroup(pid: number, start: number): void {
  rmSync(join(RECORD_DIR, `${pid}-${start}.json`), { force: true });
}

function readRecords(): Array<GroupRecord & { file: string }> {
  let names: string[];
  try {
    names = readdirSync(RECORD_DIR);
  } catch {
    return [];
  }
  const records: Array<GroupRecord & { file: string }> = [];
  for (const name of names) {
    const file = join(RECORD_DIR, name);
    try {
      records.push({ ...(JSON.parse(readFileSync(file, 'utf8')) as GroupRecord), file });
    } catch {
      rmSync(file, { force: true });
    }
  }
  return records;
}

/**
 * Kills the recorded groups `which` selects (and forgets them), for any whose leader still runs
 * as the process recorded; answers how many groups had something to kill. The group's members are
 * killed even when its leader is gone: they were left behind by it.
 */
export async function killRecordedGroups(
  which: (r: { owner: number; ownerAlive: boolean; run: number }) => boolean,
  opts: { graceMs?: number } = {},
): Promise<number> {
  const chosen = readRecords().filter((r) =>
    which({ owner: r.owner, ownerAlive: alive(r.owner, r.ownerStart), run: r.run }),
  );
  const table = processTable();
  const groups = chosen
    .filter((r) =>
      table.some(
        (row) =>
          row.state !== 'Z' &&
          row.pgid === r.group &&
          (row.pid !== r.group || row.start === r.start),
      ),
    )
    .map((r) => r.group);
  await stopProcesses({ groups }, opts);
  for (const r of chosen) rmSync(r.file, { force: true });
  return groups.length;
}

/** Kills, at once and without waiting, the groups this process recorded (for exit and signals). */
export function killOwnGroupsNow(): void {
  for (const r of readRecords()) {
    if (r.owner !== process.pid) continue;
    if (alive(r.group, r.start) || processTable().some((row) => row.pgid === r.group))
      signal(-r.group, 'SIGKILL');
    rmSync(r.file, { force: true });
  }
}

/**
 * Everything below this process: each group one of them leads, and each process. What the
 * environment sweeps when a test file ends.
 */
export function ownDescendants(): StopTargets & { rows: ProcessInfo[] } {
  const rows = descendantsOf(process.pid);
  return {
    rows,
    pids: rows.map((r) => r.pid),
    groups: rows.filter((r) => r.pgid === r.pid).map((r) => r.pgid),
  };
}

/**
 * `child_process.spawn` in a process group of its own, recorded until it exits: teardown kills
 * the group, so what the child started goes with it, whatever the test did.
 */
export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  const pid = child.pid;
  if (pid !== undefined) {
    const start = processInfo(pid)?.start;
    recordGroup(pid, [command, ...args].join(' ').slice(0, 200));
    // A detached child would otherwise not keep the test's event loop from finishing; that
    // stays as with a plain spawn (the test waits on it or stops it).
    child.once('exit', () => {
      // The group may outlive its leader (a grandchild): keep the record while members remain.
      if (start !== undefined && !processTable().some((row) => row.pgid === pid))
        forgetGroup(pid, start);
    });
  }
  return child;
}
