/**
 * `keyward migrate s3://bucket/prefix --out s3://bucket/out/ --durable` and the commands on a
 * durable migration (docs/migrations.md): `keyward migrate status|follow|pause|resume|cancel|retry
 * ID` and `keyward migrate report ID [--format csv]`. The migration runs in the service's workers
 * whatever happens to this process: following it only reads its progress, so an interrupted
 * `keyward migrate` leaves it running and `keyward migrate follow ID` picks it up again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Answer, Api } from './api-client.ts';
import { formatBytes, formatDuration } from './progress.ts';

type Migration = Answer<'getMigration'>;

/** The operations `keyward migrate <op> ID` runs. */
export const DURABLE_OPS = [
  'status',
  'follow',
  'pause',
  'resume',
  'cancel',
  'retry',
  'report',
] as const;
export type DurableOp = (typeof DURABLE_OPS)[number];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `migrate <op> <uuid>`: a durable operation rather than a directory to migrate. */
export function durableOp(args: readonly string[]): { op: DurableOp; id: string } | null {
  const [op, id] = args;
  return args.length === 2 && (DURABLE_OPS as readonly string[]).includes(op) && UUID.test(id)
    ? { op: op as DurableOp, id: id.toLowerCase() }
    : null;
}

/** One progress line: objects done of listed, refused, objects/s, bytes read, ETA. */
export function progressLine(m: Migration, tty: boolean): string {
  const c = m.counts;
  const done = c.converted + c.refused;
  const width = 20;
  const share = c.listed > 0 && m.listing.done ? done / c.listed : 0;
  const full = Math.min(width, Math.floor(share * width));
  const bar = tty ? `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ` : '';
  const total = m.listing.done ? String(c.listed) : `${c.listed}+ (listing)`;
  const refused = c.refused > 0 ? `, ${c.refused} refused` : '';
  const eta = m.etaSeconds === null ? '--:--' : formatDuration(m.etaSeconds);
  return `${bar}${m.state} | objects ${done}/${total}${refused} | ${m.objectsPerSecond.toFixed(1)} objects/s | ${formatBytes(c.bytesRead)} read | ETA ${eta}`;
}

export interface FollowOptions {
  pollMs: number;
  /** Line period when stderr is not a terminal. */
  intervalMs: number;
  stderr: NodeJS.WriteStream;
}

/**
 * Reads the migration until it is completed or cancelled, drawing its progress: one line redrawn
 * in place on a terminal, a time-stamped line every `intervalMs` otherwise. Answers the last view.
 */
export async function followMigration(api: Api, id: string, o: FollowOptions): Promise<Migration> {
  const tty = Boolean(o.stderr.isTTY);
  let lastLine = 0;
  for (;;) {
    const m = await api.getMigration({ id });
    const end = m.state === 'completed' || m.state === 'cancelled';
    if (tty) o.stderr.write(`\r${progressLine(m, true)}\x1b[K${end ? '\n' : ''}`);
    else if (end || Date.now() - lastLine >= o.intervalMs) {
      o.stderr.write(`${new Date().toISOString()} ${progressLine(m, false)}\n`);
      lastLine = Date.now();
    }
    if (end) return m;
    await sleep(o.pollMs);
  }
}

/** Exit code of a finished migration: 0 when every object converted, 1 otherwise. */
export const exitOf = (m: Migration) => (m.state === 'completed' && m.counts.refused === 0 ? 0 : 1);

export interface DurableRun {
  api: Api;
  stdout: NodeJS.WritableStream;
  follow: FollowOptions;
  format: 'jsonl' | 'csv';
}

/** Runs one operation on migration `id`; answers the exit code. */
export async function runDurableOp(op: DurableOp, id: string, r: DurableRun): Promise<number> {
  const print = (v: unknown) => r.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
  switch (op) {
    case 'report': {
      const res = await r.api.getMigrationReport({ id, query: { format: r.format } });
      await pipeline(Readable.fromWeb(res.body as never), r.stdout);
      return 0;
    }
    case 'follow':
      return exitOf(await followMigration(r.api, id, r.follow));
    case 'status':
      print(await r.api.getMigration({ id }));
      return 0;
    case 'pause':
      print(await r.api.pauseMigration({ id }));
      return 0;
    case 'resume':
      print(await r.api.resumeMigration({ id }));
      return 0;
    case 'cancel':
      print(await r.api.cancelMigration({ id }));
      return 0;
    case 'retry':
      print(await r.api.retryMigration({ id }));
      return 0;
  }
}

/** Creates a durable migration over a prefix of the tenant's storage and follows it to its end. */
export async function startDurable(
  r: DurableRun,
  body: {
    prefix: string;
    outputPrefix: string;
    metadata: Record<string, unknown>;
    rateLimit?: number;
  },
): Promise<number> {
  const m = await r.api.createMigration({
    body: {
      source: { prefix: body.prefix },
      output: { prefix: body.outputPrefix },
      metadata: body.metadata,
      ...(body.rateLimit !== undefined ? { rateLimit: body.rateLimit } : {}),
    },
  });
  r.stdout.write(`${m.id}\n`);
  r.follow.stderr.write(
    `migration ${m.id} started; it runs in the service's workers: interrupting this command leaves it running (keyward migrate follow ${m.id}; report: keyward migrate report ${m.id})\n`,
  );
  const end = await followMigration(r.api, m.id, r.follow);
  return exitOf(end);
}
