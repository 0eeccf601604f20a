/**
 * Reading a tenant's chain back: its head (the last seq and hash, which a tenant can copy
 * elsewhere as an anchor), and verification of a range against the links and against the head,
 * so that deleting the newest events (which leaves every remaining link intact) is reported as
 * truncation instead of verifying as valid.
 */
import type { Knex } from 'knex';
import { AuditEvent, AuditHead as AuditHeadRecord } from '../db/models/audit.ts';
import { GENESIS_HASH, chainHash } from './chain.ts';

/** The head of a tenant's chain; seq 0 and the genesis hash before its first event. */
export interface AuditHead {
  tenantId: string;
  seq: number;
  hash: string;
  /** Time of the last event, null before the first. */
  at: string | null;
}

export type VerifyResult =
  | {
      valid: true;
      checked: number;
      fromSeq: number;
      toSeq: number;
      head: { seq: number; hash: string };
    }
  | {
      valid: false;
      checked: number;
      firstBroken: { seq: number; reason: string };
      /** Present when the newest events are gone: the head says expectedSeq, the chain ends at foundSeq. */
      truncated?: { expectedSeq: number; foundSeq: number };
      head: { seq: number; hash: string };
    };

/** Reads the recorded head of a tenant's chain. */
export async function readHead(db: Knex, tenantId: string): Promise<AuditHead> {
  const row = await AuditHeadRecord.query(db).findById(tenantId);
  return {
    tenantId,
    seq: row ? Number(row.seq) : 0,
    hash: row?.hash ?? GENESIS_HASH,
    at: row?.at ? new Date(row.at).toISOString() : null,
  };
}

const PAGE = 1000;

/**
 * Verifies events fromSeq..toSeq (default: up to the head) of a tenant's chain: each event's
 * hash, each link, no gap, and, when the range reaches the head, that the chain ends exactly at
 * the head. Pages through the range, so a long chain is verified in constant memory.
 */
export async function verifyChain(
  db: Knex,
  tenantId: string,
  fromSeq: number,
  toSeq?: number,
): Promise<VerifyResult> {
  // Events appended after this read lie beyond the head and are left to the next verification.
  const head = await readHead(db, tenantId);
  const anchor = { seq: head.seq, hash: head.hash };
  const lastSeq = toSeq === undefined ? head.seq : Math.min(toSeq, head.seq);
  const events = () => db('audit_events').where({ tenant_id: tenantId });
  const broken = (
    checked: number,
    seq: number,
    reason: string,
    truncated?: { expectedSeq: number; foundSeq: number },
  ): VerifyResult => ({
    valid: false,
    checked,
    firstBroken: { seq, reason },
    ...(truncated ? { truncated } : {}),
    head: anchor,
  });

  let prev: string | null =
    fromSeq === 1
      ? GENESIS_HASH
      : (((
          await events()
            .where({ seq: fromSeq - 1 })
            .first('hash')
        )?.hash as string | undefined) ?? null);
  let expectedSeq = fromSeq;
  let checked = 0;
  let lastHash: string | null = null;
  while (expectedSeq <= lastSeq) {
    const rows = await AuditEvent.query(db)
      .where({ tenant_id: tenantId })
      .whereBetween('seq', [expectedSeq, lastSeq])
      .orderBy('seq', 'asc')
      .limit(PAGE);
    if (rows.length === 0) break;
    for (const r of rows) {
      const seq = Number(r.seq);
      const content = {
        tenantId,
        seq,
        at: new Date(r.at).toISOString(),
        actor: r.actor,
        action: r.action,
        outcome: r.outcome,
        target: r.target ?? null,
        details: r.details,
      };
      if (seq !== expectedSeq)
        return broken(checked, expectedSeq, `event ${expectedSeq} is missing`);
      if (prev !== null && r.prev_hash !== prev)
        return broken(checked, seq, 'prevHash does not match the previous event');
      if (chainHash(r.prev_hash, content) !== r.hash)
        return broken(checked, seq, 'the event content does not match its hash');
      prev = r.hash;
      lastHash = r.hash;
      expectedSeq = seq + 1;
      checked += 1;
    }
  }
  if (expectedSeq <= lastSeq) {
    // Nothing from expectedSeq to lastSeq: a gap if later events remain, else the tail is gone.
    const found = Number(
      (await events().where('seq', '<=', head.seq).max({ seq: 'seq' }).first())?.seq ?? 0,
    );
    if (found >= expectedSeq)
      return broken(checked, expectedSeq, `event ${expectedSeq} is missing`);
    return broken(
      checked,
      expectedSeq,
      `the chain ends at event ${found} but its recorded head is event ${head.seq}`,
      { expectedSeq: head.seq, foundSeq: found },
    );
  }
  if (lastSeq === head.seq && lastHash !== null && lastHash !== head.hash) {
    return broken(checked, head.seq, 'the last event does not match the recorded head');
  }
  if (toSeq === undefined || toSeq > head.seq) {
    // A row past the head was not written by the audit writer (it moves the head in the same
    // transaction), unless it committed after our first read of the head: read the head again.
    const beyond = await events().where('seq', '>', head.seq).min({ seq: 'seq' }).first();
    if (beyond?.seq != null && Number(beyond.seq) > (await readHead(db, tenantId)).seq) {
      return broken(
        checked,
        Number(beyond.seq),
        `event ${Number(beyond.seq)} lies beyond the recorded head (event ${head.seq})`,
      );
    }
  }
  return { valid: true, checked, fromSeq, toSeq: expectedSeq - 1, head: anchor };
}
