/**
 * What the access log costs. Benches run the service as `npm start` does, access log on;
 * this measures the same load against a second service of the same build with ACCESS_LOG=off,
 * alternated on, off, off, on (drift on the shared machine falls on both), and reports the
 * throughput ratio on/off (target >= 0.95), p99 of each side, and the server CPU per request
 * read from /proc (steadier than throughput when other work shares the cores).
 */
import { readFileSync } from 'node:fs';
import type { LoadResult } from './load.ts';
import { printResult } from './result.ts';

/** One side of the comparison: its server's pid and one measured run of the load. */
export interface AccessLogSide {
  pid: number | undefined;
  run(): Promise<LoadResult>;
}

const TICK_US = 10_000; // USER_HZ is 100 on Linux: /proc times are in 10 ms ticks.

/** User plus system CPU of a process (all its threads) in µs, or NaN off Linux. */
function cpuMicros(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US;
  } catch {
    return Number.NaN;
  }
}

/**
 * Waits until both servers are idle (under 10 ms of CPU in 250 ms, at most 5 s): a service goes
 * on working after a run (its audit tally, the log it still writes), and that work would fall
 * on the next run, of the other side.
 */
async function settle(pids: Array<number | undefined>): Promise<void> {
  const deadline = performance.now() + 5000;
  while (performance.now() < deadline) {
    const before = pids.map(cpuMicros);
    await new Promise((r) => setTimeout(r, 250));
    const busy = pids.some((pid, i) => cpuMicros(pid) - before[i] > 10_000);
    if (!busy) return;
  }
}

interface Measured {
  runs: LoadResult[];
  cpuPerRequest: number[];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Measures on, off, off, on; prints the figures and one RESULT line named `name`. */
export async function accessLogCost(
  name: string,
  what: string,
  sides: { on: AccessLogSide; off: AccessLogSide },
  notes: string,
): Promise<void> {
  const got: Record<'on' | 'off', Measured> = {
    on: { runs: [], cpuPerRequest: [] },
    off: { runs: [], cpuPerRequest: [] },
  };
  for (const which of ['on', 'off', 'off', 'on'] as const) {
    const side = sides[which];
    await settle([sides.on.pid, sides.off.pid]);
    const cpu0 = cpuMicros(side.pid);
    const r = await side.run();
    if (r.errors > 0) throw new Error(`access log ${which}: ${r.errors} failed requests`);
    got[which].runs.push(r);
    got[which].cpuPerRequest.push((cpuMicros(side.pid) - cpu0) / r.requests);
  }
  const rps = (m: Measured) => mean(m.runs.map((r) => r.requestsPerSecond));
  const p99 = (m: Measured) => mean(m.runs.map((r) => r.p99Ms));
  const cpu = (m: Measured) => mean(m.cpuPerRequest);
  const ratio = rps(got.on) / rps(got.off);
  const side = (m: Measured) =>
    `${m.runs.map((r) => Math.round(r.requestsPerSecond).toLocaleString('en')).join(' / ')} req/s, p99 ${m.runs.map((r) => r.p99Ms.toFixed(1)).join(' / ')} ms, server CPU ${cpu(m).toFixed(1)} µs/request`;
  console.log(`${what}, access log on:  ${side(got.on)}`);
  console.log(`${what}, access log off: ${side(got.off)}`);
  console.log(
    `${what}, access log on/off: ${ratio.toFixed(3)} (target >= 0.95); CPU per request on/off ${(cpu(got.on) / cpu(got.off)).toFixed(3)}`,
  );
  printResult({
    name,
    metric: `${what} with the access log on (the default)`,
    value: Math.round(rps(got.on)),
    baseline: 'the same with ACCESS_LOG=off, same build, alternated',
    baselineValue: Math.round(rps(got.off)),
    ratio: Number(ratio.toFixed(3)),
    unit: 'req/s',
    target: { op: '>=', value: 0.95, of: 'ratio', issue: 29 },
    notes: `${notes}; on, off, off, on; p99 on ${p99(got.on).toFixed(1)} ms, off ${p99(got.off).toFixed(1)} ms; server CPU on ${cpu(got.on).toFixed(1)} µs/request, off ${cpu(got.off).toFixed(1)}`,
  });
}
