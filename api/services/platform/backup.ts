/**
 * The backup stream of GET /api/v3/admin/platform/backup: the consistent snapshot of
 * shared/backup/snapshot.ts as NDJSON. The CLI encrypts it under the operator's passphrase as it
 * writes the file, so the passphrase never reaches the service (no header a proxy could log) and
 * the format's one writer and one reader both live where the file is. Key material in it is
 * sealed under the master keyring, which is never in the database. On the embedded database
 * (one connection for the whole API) the snapshot is first spooled to a private file at the
 * database's speed, so a slow client never holds the one connection; on PostgreSQL it streams.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AppContext } from '../../context.ts';
import { snapshotLines } from '../../../shared/backup/snapshot.ts';

/** Writes the snapshot to `out`; answers the row count of each table. */
export async function writeBackup(ctx: AppContext, out: Writable): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const lines = snapshotLines(ctx.db, (table, rows) => {
    counts[table] = rows;
  });
  if (ctx.config.databaseUrl) {
    await pipeline(Readable.from(lines), out);
    return counts;
  }
  const dir = mkdtempSync(join(ctx.config.dataDir, '.backup-'));
  try {
    const spool = join(dir, 'snapshot.ndjson');
    await pipeline(Readable.from(lines), createWriteStream(spool, { mode: 0o600 }));
    await pipeline(createReadStream(spool), out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return counts;
}
