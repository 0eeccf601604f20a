/**
 * The audit log writer. Events are buffered and appended in batches (one transaction per
 * flush) so the hot path never waits on the database; `flush()` and `close()` drain it.
 */
import type { Knex } from 'knex';
import type { Logger } from '../logger.ts';
import { GENESIS_HASH, chainHash, type AuditContent } from './chain.ts';

/** One event as callers describe it. */
export interface AuditInput {
  tenantId: string;
  actor: string;
  action: string;
  outcome: 'success' | 'failure' | 'denied';
  target?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditLog {
  record(event: AuditInput): void;
  /**
   * Counts a high-rate runtime event (encrypt, sign, ...): identical events within one flush
   * window become one chained event with `details.count`, so every operation is accounted for
   * without a row per operation.
   */
  tally(event: Omit<AuditInput, 'details'>): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

const FLUSH_MS = 100;

// Postgres text refuses NUL, and control characters have no place in an audit line: a hostile
// client_id or kid must not be able to make a batch fail (and so erase other events).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/g;
const clean = (s: string) => s.replace(CONTROL, '\uFFFD').slice(0, 1024);
function cleanDetails(v: unknown): unknown {
  if (typeof v === 'string') return clean(v);
  if (Array.isArray(v)) return v.map(cleanDetails);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [clean(k), cleanDetails(x)]));
  return v;
}
function sanitize<T extends Omit<AuditInput, 'details'> & { details?: Record<string, unknown> }>(e: T): T {
  return { ...e, actor: clean(e.actor), action: clean(e.action), target: e.target == null ? e.target : clean(e.target), ...(e.details ? { details: cleanDetails(e.details) as Record<string, unknown> } : {}) };
}
const MAX_BATCH = 1000;

/** Creates a batching writer over the audit_events table. */
export function createAuditLog(db: Knex, logger: Logger): AuditLog {
  let buffer: Array<AuditInput & { at: Date }> = [];
  const tallies = new Map<string, { event: Omit<AuditInput, 'details'>; count: number; first: Date }>();
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> = Promise.resolve();

  async function appendBatch(batch: Array<AuditInput & { at: Date }>): Promise<void> {
    const byTenant = new Map<string, Array<AuditInput & { at: Date }>>();
    for (const e of batch) byTenant.set(e.tenantId, [...(byTenant.get(e.tenantId) ?? []), e]);
    for (const [tenantId, events] of byTenant) {
      await db.transaction(async (trx) => {
        await trx('audit_heads').insert({ tenant_id: tenantId, seq: 0, hash: GENESIS_HASH }).onConflict('tenant_id').ignore();
        const head = await trx('audit_heads').where({ tenant_id: tenantId }).forUpdate().first();
        let seq = Number(head.seq);
        let prev = head.hash as string;
        const rows = events.map((e) => {
          seq += 1;
          const content: AuditContent = {
            tenantId, seq, at: e.at.toISOString(), actor: e.actor, action: e.action, outcome: e.outcome, target: e.target ?? null, details: e.details ?? {},
          };
          const hash = chainHash(prev, content);
          const row = { tenant_id: tenantId, seq, at: e.at, actor: e.actor, action: e.action, outcome: e.outcome, target: content.target, details: JSON.stringify(content.details), prev_hash: prev, hash };
          prev = hash;
          return row;
        });
        for (let i = 0; i < rows.length; i += 200) await trx('audit_events').insert(rows.slice(i, i + 200));
        await trx('audit_heads').where({ tenant_id: tenantId }).update({ seq, hash: prev });
      });
    }
  }

  function schedule(): void {
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      void flush();
    }, FLUSH_MS);
    timer.unref();
  }

  function flush(): Promise<void> {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    for (const t of tallies.values()) buffer.push({ ...t.event, at: new Date(), details: { count: t.count, since: t.first.toISOString() } });
    tallies.clear();
    flushing = flushing.then(async () => {
      while (buffer.length > 0) {
        const batch = buffer.slice(0, MAX_BATCH);
        buffer = buffer.slice(batch.length);
        try {
          await appendBatch(batch);
        } catch (err) {
          // Retry one by one so a single bad event cannot take the rest of the batch with it.
          logger.error({ err: (err as Error).message, events: batch.length }, 'audit batch could not be written; retrying event by event');
          let lost = 0;
          for (const event of batch) await appendBatch([event]).catch(() => (lost += 1));
          if (lost > 0) logger.error({ lost }, 'audit events could not be written');
        }
      }
    });
    return flushing;
  }

  return {
    record(event) {
      buffer.push({ ...sanitize(event), at: new Date() });
      if (buffer.length >= MAX_BATCH) void flush();
      else schedule();
    },
    tally(raw) {
      const event = sanitize(raw);
      const key = `${event.tenantId}\u0000${event.actor}\u0000${event.action}\u0000${event.outcome}\u0000${event.target ?? ''}`;
      const t = tallies.get(key);
      if (t) t.count += 1;
      else {
        tallies.set(key, { event, count: 1, first: new Date() });
        schedule();
      }
    },
    flush,
    close: flush,
  };
}
