/**
 * A closed-loop HTTP load generator: N keep-alive connections, each sending its next request as
 * soon as the previous answer is read, for a fixed duration. wrk is preferred when installed
 * (a Node generator competes with the server for the same two cores and caps the figure); the
 * node:http generator is the fallback, so a bench runs on any machine. Load only ever targets
 * 127.0.0.1, and never for longer than MAX_SECONDS.
 */
import { execFile, execFileSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** What to load, and how hard. */
export interface LoadOptions {
  url: string;
  /** Concurrent keep-alive connections (default 32, as in the stack notes' wrk figures). */
  connections?: number;
  /** Measured duration in seconds (bounded by MAX_SECONDS). */
  seconds?: number;
  /** Force one generator; default: wrk when installed, else node (or BENCH_LOAD=node|wrk). */
  tool?: LoadTool;
  /** Request shape (default GET without body). */
  method?: string;
  headers?: Record<string, string>;
  /** One body for every request. */
  body?: string;
  /** Bodies sent in turn, each request taking the next (wrapping); replaces `body`. */
  bodies?: string[];
  /** Ends the run early (wrk gets SIGINT and still reports what it measured). */
  signal?: AbortSignal;
}

export type LoadTool = 'wrk' | 'node';

/** Throughput and latency of one run. */
export interface LoadResult {
  tool: LoadTool;
  connections: number;
  seconds: number;
  requests: number;
  /** Non-2xx answers plus socket errors. */
  errors: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

const MAX_SECONDS = 60;

let wrkPresent: boolean | undefined;

/** True when a `wrk` binary is on the PATH. */
function hasWrk(): boolean {
  if (wrkPresent === undefined) {
    try {
      execFileSync('wrk', ['--version'], { stdio: 'ignore' });
      wrkPresent = true;
    } catch (err) {
      // wrk --version exits 1 after printing its version; only a missing binary throws ENOENT.
      wrkPresent = (err as NodeJS.ErrnoException).code !== 'ENOENT';
    }
  }
  return wrkPresent;
}

/** The generator a run will use, honouring BENCH_LOAD. */
export function chooseTool(requested?: LoadTool): LoadTool {
  const wanted = requested ?? (process.env.BENCH_LOAD as LoadTool | undefined);
  if (wanted === 'node') return 'node';
  if (wanted === 'wrk' && !hasWrk())
    throw new Error('BENCH_LOAD=wrk but wrk is not installed (apt-get install -y wrk)');
  return hasWrk() ? 'wrk' : 'node';
}

function checkTarget(url: string, seconds: number): void {
  const { hostname, protocol } = new URL(url);
  if (protocol !== 'http:' || hostname !== '127.0.0.1')
    throw new Error(`load only targets http://127.0.0.1, not ${url}`);
  if (!(seconds > 0 && seconds <= MAX_SECONDS))
    throw new Error(`load duration must be in (0, ${MAX_SECONDS}] seconds, got ${seconds}`);
}

/** Runs one closed-loop load against a local URL. */
export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const connections = opts.connections ?? 32;
  const seconds = opts.seconds ?? 5;
  checkTarget(opts.url, seconds);
  if (opts.bodies !== undefined && (opts.bodies.length === 0 || opts.body !== undefined))
    throw new Error('give either body or a non-empty bodies list, not both');
  const shape: RequestShape = {
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    bodies: opts.bodies ?? (opts.body === undefined ? [] : [opts.body]),
  };
  return chooseTool(opts.tool) === 'wrk'
    ? wrkLoad(opts.url, connections, seconds, shape, opts.signal)
    : nodeLoad(opts.url, connections, seconds, shape, opts.signal);
}

interface RequestShape {
  method: string;
  headers: Record<string, string>;
  /** Empty: no body; one: the same body each time; more: each request takes the next. */
  bodies: string[];
}

/** A Lua string literal; JSON.stringify's escapes differ from Lua's for \u escapes, so bytes. */
const lua = (s: string) =>
  `"${[...Buffer.from(s, 'utf8')].map((b) => `\\${String(b).padStart(3, '0')}`).join('')}"`;

/**
 * A wrk Lua script that sends the request shape: wrk.method, wrk.headers and wrk.body for one
 * body; for several, a request() that returns the next of the requests formatted once in init()
 * (wrk calls it for every request of the thread, and runs with -t1: one cycle over the list).
 */
function wrkScript(shape: RequestShape): string {
  const lines = [`wrk.method = ${lua(shape.method)}`];
  for (const [k, v] of Object.entries(shape.headers))
    lines.push(`wrk.headers[${lua(k)}] = ${lua(v)}`);
  if (shape.bodies.length === 1) lines.push(`wrk.body = ${lua(shape.bodies[0])}`);
  if (shape.bodies.length > 1) {
    lines.push(
      `local bodies = {${shape.bodies.map(lua).join(', ')}}`,
      'local requests, i = {}, 0',
      // Formatted once per thread (wrk's own pipeline.lua does the same), so the generator
      // spends no Lua time per request beyond the table lookup.
      'init = function()',
      '  for n, b in ipairs(bodies) do requests[n] = wrk.format(nil, nil, nil, b) end',
      'end',
      'request = function()',
      '  i = i % #requests + 1',
      '  return requests[i]',
      'end',
    );
  }
  return lines.join('\n') + '\n';
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function wrkDuration(text: string, label: string): number {
  const m = new RegExp(`^\\s*${label}\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(text);
  if (!m) throw new Error(`wrk output lacks the ${label} latency line:\n${text}`);
  return Number(m[1]) * UNIT_MS[m[2]];
}

/** Parses wrk's `--latency` report. */
function parseWrk(text: string, connections: number): LoadResult {
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(text);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(text);
  if (!total || !rps) throw new Error(`unexpected wrk output:\n${text}`);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(text);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const socketErrors = socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  return {
    tool: 'wrk',
    connections,
    seconds: (Number(total[2]) * UNIT_MS[total[3]]) / 1000,
    requests: Number(total[1]),
    errors: Number(non2xx?.[1] ?? 0) + socketErrors,
    requestsPerSecond: Number(rps[1]),
    p50Ms: wrkDuration(text, '50%'),
    p99Ms: wrkDuration(text, '99%'),
  };
}

function wrkLoad(
  url: string,
  connections: number,
  seconds: number,
  shape: RequestShape,
  signal?: AbortSignal,
): Promise<LoadResult> {
  // One wrk thread: on two cores the other one belongs to the server under test.
  const script = join(mkdtempSync(join(tmpdir(), 'keyward-wrk-')), 'request.lua');
  writeFileSync(script, wrkScript(shape));
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url];
  return new Promise((resolve, reject) => {
    const wrk = execFile('wrk', args, { timeout: (seconds + 15) * 1000 }, (err, stdout, stderr) => {
      signal?.removeEventListener('abort', interrupt);
      rmSync(dirname(script), { recursive: true, force: true });
      if (err) reject(new Error(`wrk failed: ${err.message}\n${stderr}`));
      else {
        try {
          resolve(parseWrk(stdout, connections));
        } catch (parseErr) {
          reject(parseErr as Error);
        }
      }
    });
    // wrk stops on SIGINT and prints its report, as at the end of its duration.
    const interrupt = () => wrk.kill('SIGINT');
    if (signal?.aborted) interrupt();
    else signal?.addEventListener('abort', interrupt, { once: true });
  });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function nodeLoad(
  url: string,
  connections: number,
  seconds: number,
  shape: RequestShape,
  signal?: AbortSignal,
): Promise<LoadResult> {
  const agent = new Agent({
    keepAlive: true,
    maxSockets: connections,
    maxFreeSockets: connections,
  });
  const target = new URL(url);
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;

  const once = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          method: shape.method,
          headers: shape.headers,
        },
        (res) => {
          res.resume();
          res.once('end', () => {
            if (res.statusCode === undefined || res.statusCode >= 300) errors += 1;
            latencies.push(performance.now() - t0);
            resolve();
          });
          res.once('error', () => {
            errors += 1;
            resolve();
          });
        },
      );
      req.once('error', () => {
        errors += 1;
        resolve();
      });
      const body = shape.bodies.length > 0 ? shape.bodies[next++ % shape.bodies.length] : undefined;
      req.end(body);
    });

  const loop = async () => {
    while (performance.now() < deadline && !signal?.aborted) await once();
  };

  return Promise.all(Array.from({ length: connections }, loop)).then(() => {
    const elapsed = (performance.now() - started) / 1000;
    agent.destroy();
    const sorted = Float64Array.from(latencies).sort();
    return {
      tool: 'node' as const,
      connections,
      seconds: elapsed,
      requests: latencies.length,
      errors,
      requestsPerSecond: latencies.length / elapsed,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
    };
  });
}
