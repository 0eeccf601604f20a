/**
 * The change feed's safety net on its own: no Redis at all, two feeds on one Postgres database
 * (two instances), a sequence number that commits after a later one, and a log pruned past an
 * instance that fell behind.
 */
import { Writable } from 'node:stream';
import { openDatabase, type Db } from '../../../shared/db/knex.ts';
import {
  createChangeFeed,
  type Change,
  type ChangeFeed,
} from '../../../shared/fanout/change-feed.ts';
import { createLogger } from '../../../shared/logger.ts';
import {
  createPostgresDatabase,
  SHARED_POSTGRES_URL,
  TEST_REDIS_URL,
  type TestDatabase,
} from '../../../support/database.ts';
import { connectRedis } from '../../../shared/redis.ts';
import { FanoutBus } from '../../../shared/fanout/bus.ts';
import { expectEventually, sleep } from '../../support/time.ts';

const logger = createLogger(
  'warn',
  new Writable({
    write(_c, _e, cb) {
      cb();
    },
  }),
);

/** Waits (bounded) until `seen()` lists `expected`: the machine is shared, so no fixed sleeps. */
const until = (seen: () => string[], expected: string[]) =>
  expectEventually(() => expect(seen().sort()).toEqual([...expected].sort()));

describe('change feed without Redis (needs Postgres at TEST_DATABASE_URL or 127.0.0.1:5432)', () => {
  let database: TestDatabase;
  let db: Db;
  const feeds: ChangeFeed[] = [];
  beforeAll(async () => {
    database = await createPostgresDatabase(SHARED_POSTGRES_URL);
    db = await openDatabase({ databaseUrl: database.url });
  });
  afterAll(async () => {
    for (const f of feeds) await f.close();
    await db.destroy();
    await database.drop();
  });

  /** Writes a change whose transaction stays open (its seq taken, not committed) until `commit()`. */
  async function holdUncommitted(
    feed: ChangeFeed,
    ref: string,
  ): Promise<{ commit: () => Promise<void> }> {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let written!: () => void;
    const isWritten = new Promise<void>((r) => {
      written = r;
    });
    const trx = db.transaction(async (t) => {
      await feed.write(t, 'token', ref);
      written();
      await held;
    });
    await isWritten;
    return {
      commit: async () => {
        release();
        await trx;
      },
    };
  }

  async function follower(): Promise<{ feed: ChangeFeed; seen: Change[]; resyncs: number[] }> {
    const feed = await createChangeFeed(db, logger, undefined, { pollMs: 100, gapMs: 5_000 });
    const seen: Change[] = [];
    const resyncs: number[] = [];
    feed.on('token', (c) => seen.push(c));
    feed.onResync(() => {
      resyncs.push(Date.now());
    });
    feed.start();
    feeds.push(feed);
    return { feed, seen, resyncs };
  }

  it('when instance A records a change, then instance B applies it exactly once from the log within a poll period', async () => {
    const a = await follower();
    const b = await follower();
    await a.feed.record('token', 'jti-1', { exp: 1 });
    expect(a.seen.map((c) => c.ref)).toEqual(['jti-1']);
    await until(() => b.seen.map((c) => c.ref), ['jti-1']);
    await sleep(300); // several poll periods: still exactly once
    expect(b.seen.map((c) => c.ref)).toEqual(['jti-1']);
    expect(a.seen.map((c) => c.ref)).toEqual(['jti-1']);
  });

  it('when a lower sequence number commits after a higher one was read, then it is still applied (the gap is read again)', async () => {
    const b = await follower();
    const a = await createChangeFeed(db, logger);
    const late = await holdUncommitted(a, 'jti-late');
    await a.record('token', 'jti-early');
    try {
      await until(() => b.seen.map((c) => c.ref), ['jti-early']);
    } finally {
      await late.commit();
    }
    await until(() => b.seen.map((c) => c.ref), ['jti-early', 'jti-late']);
    await a.close();
  });

  it('when an instance starts while a lower sequence number is still being committed, then it applies that change once it commits (it started past it and missed it for good)', async () => {
    const a = await createChangeFeed(db, logger);
    const committing = await holdUncommitted(a, 'jti-committing-at-start');
    await a.record('token', 'jti-committed-before-start');
    const c = await follower();
    await committing.commit();
    await until(() => c.seen.map((x) => x.ref), ['jti-committing-at-start']);
    await a.close();
  });

  it("when an instance's own change jumps its position and its next read of the log comes late, then the other instances' changes in between are still applied (the gaps expired unread)", async () => {
    const b = await createChangeFeed(db, logger, undefined, { pollMs: 60_000, gapMs: 200 });
    feeds.push(b);
    const seen: string[] = [];
    b.on('token', (c) => seen.push(c.ref));
    const a = await createChangeFeed(db, logger);
    await a.record('token', 'other-1');
    await a.record('token', 'other-2');
    await b.record('token', 'own');
    await sleep(400); // longer than gapMs before b reads the log at all
    await b.catchUp();
    expect(seen.sort()).toEqual(['other-1', 'other-2', 'own']);
    await a.close();
  });

  it('when a forged or corrupt pub/sub message names a huge sequence number, then the instance still applies every later change from the log (a message never moves the log position; needs Redis at 127.0.0.1:6379)', async () => {
    const redis = await connectRedis(TEST_REDIS_URL, logger);
    const bus = new FanoutBus(redis, logger);
    try {
      const b = await createChangeFeed(db, logger, bus, { pollMs: 100, gapMs: 200 });
      feeds.push(b);
      const seen: string[] = [];
      b.on('token', (c) => seen.push(c.ref));
      b.start();
      await sleep(300); // subscribed
      await redis.publish(
        'keyward:changes',
        JSON.stringify({ seq: 1e12, kind: 'token', ref: 'forged-jti' }),
      );
      await sleep(600); // any gaps such a seq would open have expired
      const a = await createChangeFeed(db, logger);
      await a.record('token', 'jti-after-forgery');
      await until(
        () => seen.filter((r) => r === 'jti-after-forgery').slice(0, 1),
        ['jti-after-forgery'],
      );
      await a.close();
    } finally {
      await bus.close();
      redis.disconnect();
    }
  });

  it('when the log was pruned past what an instance saw, then it is told to resync its whole state', async () => {
    const b = await follower();
    await b.feed.close(); // fell behind: stops reading
    const a = await createChangeFeed(db, logger);
    await a.record('token', 'jti-gone-1');
    await a.record('token', 'jti-gone-2');
    await a.record('token', 'jti-kept');
    const kept = await db('change_log').where({ ref: 'jti-kept' }).first('seq');
    await db('change_log').where('seq', '<', kept.seq).delete();
    const c = await follower(); // a new instance starts at the head: nothing to resync
    await sleep(300);
    await c.feed.catchUp();
    expect(c.resyncs).toHaveLength(0);
    // The instance that fell behind reads the log again.
    await b.feed.catchUp();
    expect(b.resyncs).toHaveLength(1);
    await a.close();
  });
});
