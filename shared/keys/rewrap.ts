/**
 * Online master-key rotation (docs/decisions.md, "The master keyring and what it seals"): re-seals
 * every sealed item under the newest key of the keyring, in batches, while the service serves. Each
 * item is one UPDATE that compares the blob it read (compare-and-set), and each batch one
 * transaction: a kill -9 leaves every item either as it was or rewrapped, both readable; two
 * instances never overwrite each other's work, so no item is sealed twice under different keys; a
 * later run finishes what is left. Only items sealed under an older id of this keyring (or v1
 * blobs) are touched: an id this instance does not know is counted, never guessed at.
 */
import type { Knex } from 'knex';
import type { Logger } from '../logger.ts';
import type { DomainMetrics } from '../metrics/index.ts';
import { IntegrityError, type MasterKey } from '../crypto/master-key.ts';
import { isDatabaseUnavailable } from '../db/knex.ts';
import { SEALED_SOURCES, sealedIdSql, type SealedSource } from './sealed-items.ts';

/** What a rewrap did so far. */
export interface RewrapProgress {
  state: 'idle' | 'running' | 'done' | 'failed' | 'stopped';
  /** The id items are sealed under by this run. */
  targetId: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Items this run re-sealed. */
  rewrapped: number;
  /** Items another writer re-sealed first (compare-and-set lost): left as that writer sealed them. */
  raced: number;
  /** Items that do not open under this keyring (named ids not held, or tampered). */
  unopenable: number;
  error: string | null;
}

export interface RewrapOptions {
  logger: Logger;
  metrics?: DomainMetrics;
  /** Items read per query. */
  batchSize?: number;
}

/** The master-key rewrap runner of a process, over `db` with the process's keyring. */
export class Rewrapper {
  readonly #db: Knex;
  readonly #master: MasterKey;
  readonly #opts: RewrapOptions;
  readonly #batchSize: number;
  /** Ids this run may re-seal from: the older ids of this keyring and v1 (''). */
  readonly #older: string[];
  #progress: RewrapProgress;
  #running: Promise<RewrapProgress> | null = null;
  #stopping = false;

  constructor(db: Knex, master: MasterKey, opts: RewrapOptions) {
    this.#db = db;
    this.#master = master;
    this.#opts = opts;
    this.#batchSize = opts.batchSize ?? 200;
    this.#older = ['', ...master.ids.slice(1)];
    this.#progress = this.#fresh('idle');
  }

  /** Starts a run unless one is running (then `onFinish` is not kept); answers the progress. */
  start(onFinish?: (progress: RewrapProgress) => void): RewrapProgress {
    if (!this.#running) {
      this.#stopping = false;
      this.#running = this.#pass(onFinish).finally(() => {
        this.#running = null;
      });
    }
    return { ...this.#progress };
  }

  /** Runs to the end (tests, bench, the start of a run). */
  async run(): Promise<RewrapProgress> {
    this.start();
    return this.#running ?? { ...this.#progress };
  }

  progress(): RewrapProgress {
    return { ...this.#progress };
  }

  /** Stops a running pass between items and waits for it. */
  async close(): Promise<void> {
    this.#stopping = true;
    await this.#running;
  }

  #fresh(state: RewrapProgress['state']): RewrapProgress {
    return {
      state,
      targetId: this.#master.newestId,
      startedAt: state === 'idle' ? null : new Date().toISOString(),
      finishedAt: null,
      rewrapped: 0,
      raced: 0,
      unopenable: 0,
      error: null,
    };
  }

  async #source(s: SealedSource): Promise<void> {
    const alias = s.table === 'key_versions' ? 'kv.' : '';
    const idOf = sealedIdSql(`${alias}${s.column}`);
    let cursor: string | null = null;
    for (;;) {
      if (this.#stopping) return;
      const q = s
        .select(this.#db)
        .whereRaw(`${idOf} in (${this.#older.map(() => '?').join(', ')})`, this.#older)
        .orderBy(`${alias}${s.pk}`)
        .limit(this.#batchSize);
      if (cursor !== null) q.where(`${alias}${s.pk}`, '>', cursor);
      const rows = (await q) as Array<Record<string, unknown>>;
      if (rows.length === 0) return;
      cursor = rows[rows.length - 1].pk as string;
      await this.#batch(s, rows);
    }
  }

  /**
   * One batch in one transaction: each item is still its own compare-and-set, but the batch
   * commits once (a commit per item made 100,000 key versions a 25-minute run on the embedded
   * database). A kill -9 or an outage rolls the open batch back, so its items stay as they were,
   * readable under the older id. Two instances walk the same order, so their row locks never
   * wait on each other in a circle; the later UPDATE sees the first one's blob and loses.
   */
  async #batch(s: SealedSource, rows: Array<Record<string, unknown>>): Promise<void> {
    const tally = { rewrapped: 0, raced: 0, unopenable: 0 };
    await this.#db.transaction(async (trx) => {
      for (const row of rows) {
        if (this.#stopping) break;
        tally[await this.#item(trx, s, row)]++;
      }
    });
    this.#progress.rewrapped += tally.rewrapped;
    this.#progress.raced += tally.raced;
    this.#progress.unopenable += tally.unopenable;
    for (const outcome of ['rewrapped', 'raced', 'unopenable'] as const)
      for (let i = 0; i < tally[outcome]; i++) this.#opts.metrics?.rewrapItem(outcome);
  }

  async #item(
    trx: Knex.Transaction,
    s: SealedSource,
    row: Record<string, unknown>,
  ): Promise<'rewrapped' | 'raced' | 'unopenable'> {
    const old = row.material as Buffer;
    const ctx = s.context(row);
    let sealed: Buffer;
    try {
      const plaintext = this.#master.open(old, ctx);
      sealed = this.#master.seal(plaintext, ctx);
      plaintext.fill(0);
    } catch (err) {
      if (!(err instanceof IntegrityError)) throw err;
      this.#opts.logger.error(
        { source: s.name, item: row.pk },
        'rewrap: a sealed item does not open',
      );
      return 'unopenable';
    }
    // Compare-and-set: written only if the blob is still the one that was read.
    const n = await trx(s.table)
      .update({ [s.column]: sealed })
      .where(s.pk, row.pk as string)
      .where(s.column, old);
    return n === 1 ? 'rewrapped' : 'raced';
  }

  async #pass(onFinish?: (p: RewrapProgress) => void): Promise<RewrapProgress> {
    this.#progress = this.#fresh('running');
    this.#opts.logger.info({ targetId: this.#master.newestId }, 'master-key rewrap started');
    try {
      for (const s of SEALED_SOURCES) await this.#source(s);
      this.#progress.state = this.#stopping ? 'stopped' : 'done';
    } catch (err) {
      this.#progress.state = 'failed';
      // Every item is as it was or re-sealed (each is its own compare-and-set): nothing to undo.
      this.#progress.error = isDatabaseUnavailable(err)
        ? `the database became unavailable (${(err as Error).message}); every item is still readable: run the rewrap again once it is back`
        : (err as Error).message;
      this.#opts.logger.error(
        { err: (err as Error).message, rewrapped: this.#progress.rewrapped },
        `master-key rewrap failed: ${this.#progress.error}`,
      );
    }
    this.#progress.finishedAt = new Date().toISOString();
    this.#opts.logger.info({ ...this.#progress }, `master-key rewrap ${this.#progress.state}`);
    onFinish?.({ ...this.#progress });
    return { ...this.#progress };
  }
}
