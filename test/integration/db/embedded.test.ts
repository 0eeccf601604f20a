/**
 * The embedded database's own process (shared/db/embedded.ts, shared/db/pglite-server.ts):
 * reached through `pg` on a private Unix socket, one connection served at a time, a transaction
 * of a connection that goes rolled back, started again on its directory when it dies, and gone
 * when the API's handle is destroyed.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { isDatabaseUnavailable, openDatabase, type Db } from '../../../shared/db/knex.ts';
import { restartDelay, startEmbeddedDatabase, EMBEDDED_PORT } from '../../../shared/db/embedded.ts';
import { sleep } from '../../support/time.ts';

/** The pglite-server processes that are children of this process. */
function serverChildren(): number[] {
  const children = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  return children.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('pglite-server.ts');
    } catch {
      return false;
    }
  });
}

describe('the embedded database process', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'keyward-embedded-test-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('when the handle is destroyed, then the process has ended and its socket directory is gone', async () => {
    const before = serverChildren();
    const db = await openDatabase({ dataDir: null });
    const started = serverChildren().filter((p) => !before.includes(p));
    expect(started).toHaveLength(1);
    expect((await db.raw('select 1 as one')).rows[0].one).toBe(1);
    await db.destroy();
    expect(serverChildren()).not.toContain(started[0]);
  }, 60_000);

  it('when answers are larger than the socket takes at once, then each arrives whole (PGlite reuses the memory they were read from)', async () => {
    const db = await openDatabase({ dataDir: null });
    try {
      const answers = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          db.raw(
            `select g, repeat(chr(${65 + i}), 300) as s from generate_series(1, 3000) as g order by g`,
          ),
        ),
      );
      answers.forEach(({ rows }: { rows: { g: number; s: string }[] }, i: number) => {
        expect(rows).toHaveLength(3000);
        expect(
          rows.every((r, n) => r.g === n + 1 && r.s === String.fromCharCode(65 + i).repeat(300)),
        ).toBe(true);
      });
      expect((await db.raw('select 1 as one')).rows[0].one).toBe(1);
    } finally {
      await db.destroy();
    }
  }, 60_000);

  it('when it is started, then its socket lies in a directory only this user can enter', async () => {
    const embedded = await startEmbeddedDatabase({ dataDir: null });
    try {
      expect(statSync(embedded.socketDir).mode & 0o077).toBe(0);
      expect(readdirSync(embedded.socketDir)).toEqual([`.s.PGSQL.${EMBEDDED_PORT}`]);
    } finally {
      await embedded.close();
    }
  }, 60_000);

  it('when a client goes inside a transaction, then the next client waits for it and does not see its writes', async () => {
    const embedded = await startEmbeddedDatabase({ dataDir: null });
    const connect = () =>
      new pg.Client({ host: embedded.socketDir, port: EMBEDDED_PORT, user: 'postgres' });
    try {
      const a = connect();
      a.on('error', () => undefined);
      await a.connect();
      await a.query('create table t (v int)');
      await a.query('begin');
      await a.query('insert into t values (1)');
      const b = connect();
      let bConnected = false;
      const bReady = b.connect().then(() => (bConnected = true));
      await sleep(300);
      expect(bConnected).toBe(false);
      a.connection.stream.destroy();
      await bReady;
      expect((await b.query('select count(*)::int as n from t')).rows[0].n).toBe(0);
      await b.end();
    } finally {
      await embedded.close();
    }
  }, 60_000);

  it('when two clients stay connected, then they take turns between transactions and each sees what the other committed', async () => {
    const embedded = await startEmbeddedDatabase({ dataDir: null });
    const connect = () =>
      new pg.Client({ host: embedded.socketDir, port: EMBEDDED_PORT, user: 'postgres' });
    const a = connect();
    const b = connect();
    try {
      await a.connect();
      await b.connect();
      await a.query('create table t (v int)');
      await b.query('insert into t values (1)');
      await a.query('begin');
      await a.query('insert into t values (2)');
      const bCount = b.query('select count(*)::int as n from t');
      await a.query('commit');
      expect((await bCount).rows[0].n).toBe(2);
      const both = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).query(`select ${i}::int as i`)),
      );
      expect(both.map((r) => r.rows[0].i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    } finally {
      await a.end();
      await b.end();
      await embedded.close();
    }
  }, 60_000);

  it('when a client leaves session state behind (a pg_dump empties search_path), then the others find their tables again once it has gone', async () => {
    const embedded = await startEmbeddedDatabase({ dataDir: null });
    const connect = () =>
      new pg.Client({ host: embedded.socketDir, port: EMBEDDED_PORT, user: 'postgres' });
    const api = connect();
    try {
      await api.connect();
      await api.query('create table users (v int)');
      await api.query('insert into users values (1)');
      // What pg_dump sends first, plus a prepared statement and a temporary table.
      const dump = connect();
      await dump.connect();
      await dump.query("select pg_catalog.set_config('search_path', '', false)");
      await dump.query('prepare left_behind as select 1');
      await dump.query('create temporary table scratch (v int)');
      await dump.end();
      expect((await api.query('select count(*)::int as n from users')).rows[0].n).toBe(1);
      expect(
        (await api.query('select count(*)::int as n from pg_prepared_statements')).rows[0].n,
      ).toBe(0);
      // A client that is cut off (no Terminate) is cleaned up too.
      const cut = connect();
      cut.on('error', () => undefined);
      await cut.connect();
      await cut.query("set search_path = ''");
      cut.connection.stream.destroy();
      await sleep(200);
      expect((await api.query('select count(*)::int as n from users')).rows[0].n).toBe(1);
    } finally {
      await api.end();
      await embedded.close();
    }
  }, 60_000);

  it('when a data directory is given, then its socket lies where a worker of the same DATA_DIR finds it', async () => {
    const dir = join(root, 'shared-socket');
    const db: Db = await openDatabase({ dataDir: dir });
    try {
      const attached: Db = await openDatabase({ dataDir: dir, attachEmbedded: true });
      try {
        await db.raw('create table seen (v int)');
        await attached.raw('insert into seen values (5)');
        expect((await db.raw('select v from seen')).rows).toEqual([{ v: 5 }]);
        // A second start on the same directory (another API, a restore) is refused.
        await expect(openDatabase({ dataDir: dir })).rejects.toThrow(
          /is in use by another process/,
        );
      } finally {
        await attached.destroy();
      }
      expect((await db.raw('select count(*)::int as n from seen')).rows[0].n).toBe(1);
    } finally {
      await db.destroy();
    }
  }, 60_000);

  it('when the process dies, then queries answer unavailable, and after its restart the data is still there', async () => {
    const exits: boolean[] = [];
    const before = serverChildren();
    const db: Db = await openDatabase({
      dataDir: join(root, 'restart'),
      onEmbeddedExit: ({ restarting }) => exits.push(restarting),
    });
    try {
      await db.raw('create table kept (v int)');
      await db.raw('insert into kept values (42)');
      const [pid] = serverChildren().filter((p) => !before.includes(p));
      process.kill(pid, 'SIGKILL');
      await sleep(100);
      const during = await db.raw('select v from kept').catch((err: unknown) => err);
      expect(isDatabaseUnavailable(during)).toBe(true);
      expect(exits).toEqual([true]);
      let rows: { v: number }[] = [];
      for (let i = 0; i < 100 && rows.length === 0; i++) {
        await sleep(200);
        rows = await db
          .raw('select v from kept')
          .then((r: { rows: { v: number }[] }) => r.rows)
          .catch(() => []);
      }
      expect(rows).toEqual([{ v: 42 }]);
    } finally {
      await db.destroy();
    }
  }, 90_000);

  it('when the restarted process dies at once too, then the next start waits longer, and the data comes back', async () => {
    const exits: number[] = [];
    const before = serverChildren();
    const db: Db = await openDatabase({
      dataDir: join(root, 'twice'),
      onEmbeddedExit: () => exits.push(Date.now()),
    });
    const current = () => serverChildren().filter((p) => !before.includes(p));
    const answers = async () => {
      for (let i = 0; i < 150; i++) {
        const rows = await db
          .raw('select v from kept')
          .then((r: { rows: { v: number }[] }) => r.rows)
          .catch(() => []);
        if (rows.length > 0) return rows;
        await sleep(100);
      }
      return [];
    };
    try {
      await db.raw('create table kept (v int)');
      await db.raw('insert into kept values (7)');
      process.kill(current()[0], 'SIGKILL');
      expect(await answers()).toEqual([{ v: 7 }]);
      const restartedAt = Date.now();
      process.kill(current()[0], 'SIGKILL');
      expect(await answers()).toEqual([{ v: 7 }]);
      expect(exits).toHaveLength(2);
      // The second restart waited restartDelay(2) = 2 s after the second death.
      expect(Date.now() - restartedAt).toBeGreaterThanOrEqual(2_000);
    } finally {
      await db.destroy();
    }
  }, 90_000);

  it('when the process keeps failing, then each restart waits twice as long as the one before, up to 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(restartDelay)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });
});
