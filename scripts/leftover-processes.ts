/**
 * CI's last check that the test runs left nothing running: `--snapshot FILE` records the processes
 * running now (the services CI started among them); `--stop FILE` names every process of this
 * checkout (working directory or command line in it) that is not in FILE, and stops it (SIGTERM,
 * SIGKILL after 3 s). Exits 0 either way: the list is the report.
 */
import { readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { commandLine, processInfo, processTable, stopProcesses } from '../support/processes.ts';

const [mode, file] = process.argv.slice(2);
const key = (pid: number) => `${pid}-${processInfo(pid)?.start}`;

if (mode === '--snapshot') {
  writeFileSync(
    file,
    processTable()
      .map((r) => `${r.pid}-${r.start}`)
      .join('\n'),
  );
} else if (mode === '--stop') {
  const before = new Set(readFileSync(file, 'utf8').split('\n'));
  const root = process.cwd();
  // This process and its ancestors (npx, the CI shell) are not leftovers.
  const mine = new Set<number>();
  for (let p = process.pid; p > 1; p = processInfo(p)?.ppid ?? 0) mine.add(p);
  const inCheckout = (pid: number) => {
    let cwd = '';
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      // gone, or not ours to read
    }
    return (
      cwd === root || cwd.startsWith(`${root}/`) || ` ${commandLine(pid)}`.includes(` ${root}/`)
    );
  };
  const left = processTable().filter(
    (r) => r.state !== 'Z' && !mine.has(r.pid) && !before.has(key(r.pid)) && inCheckout(r.pid),
  );
  if (left.length === 0) process.stdout.write('none\n');
  else {
    process.stdout.write(`still running from ${root}, stopped now:\n`);
    for (const r of left) process.stdout.write(`  ${r.pid} ${commandLine(r.pid)}\n`);
    await stopProcesses({ pids: left.map((r) => r.pid) });
  }
} else {
  console.error('usage: node scripts/leftover-processes.ts --snapshot FILE | --stop FILE');
  process.exit(2);
}
