/**
 * The token endpoint's workload cache (api/services/auth/client-secrets.ts): one load per
 * client at a time, a change always wins over a load that began before it, and a client that
 * keeps calling is answered from the cache while its entry is reloaded ahead of its expiry.
 * The database is a stand-in whose answers the test releases one by one.
 */
import { jest } from '@jest/globals';
import type { Knex } from 'knex';
import { ClientSecrets } from '../../../api/services/auth/client-secrets.ts';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';

const CLIENT = '6f1c2e3d-4b5a-4c6d-8e7f-9a0b1c2d3e4f';

/**
 * A knex stand-in: each workload read waits until the test releases it with the row of that
 * moment; `asked` holds the client ids each read named.
 */
function heldDatabase() {
  const held: Array<(rows: Array<Record<string, unknown>>) => void> = [];
  const failing: Array<(err: Error) => void> = [];
  const asked: string[][] = [];
  const row = (disabled: boolean, clientId = CLIENT) => ({
    id: `w-${clientId}`,
    client_id: clientId,
    tenant_id: 't1',
    disabled,
    permissions: ['crypto.encrypt'],
    status: 'active',
  });
  const db = ((table: string) => {
    const query: Record<string, unknown> = {};
    Object.assign(query, {
      join: () => query,
      whereIn: (column: string, ids: string[]) => {
        if (column === 'w.client_id') asked.push(ids);
        return query;
      },
      andWhere: () => query,
      select: () =>
        new Promise((resolve, reject) => {
          held.push(resolve);
          failing.push(reject);
        }),
      // The secrets read (awaited as a query builder).
      then: (ok: (v: unknown) => unknown, ko: (e: unknown) => unknown) =>
        Promise.resolve(table === 'workload_secrets' ? [] : []).then(ok, ko),
    });
    return query;
  }) as unknown as Knex;
  return {
    db,
    reads: () => held.length,
    asked,
    release: (i: number, disabled: boolean) => held[i]([row(disabled)]),
    /** Answers read `i` with a row for each client it asked for. */
    releaseAll: (i: number) => held[i](asked[i].map((id) => row(false, id))),
    held: (i: number, rows: Array<Record<string, unknown>>) => held[i](rows),
    /** Fails read `i` (the database went away). */
    fail: (i: number) => failing[i](new Error('connection terminated')),
  };
}

function feed() {
  const listeners: Array<(c: { ref: string }) => void> = [];
  const f = {
    on: (_kind: string, l: (c: { ref: string }) => void) => listeners.push(l),
    onResync: () => undefined,
    record: async () => undefined,
  } as unknown as ChangeFeed;
  return { f, change: (ref: string) => listeners.forEach((l) => l({ ref })) };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('the workload cache of the token endpoint', () => {
  afterEach(() => jest.restoreAllMocks());

  it('when many requests of an uncached client arrive at once, then the workload is read once', async () => {
    const d = heldDatabase();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), feed().f);
    const lookups = Array.from({ length: 20 }, () => secrets.lookup(CLIENT));
    await settle();
    expect(d.reads()).toBe(1);
    d.release(0, false);
    const all = await Promise.all(lookups);
    expect(all.every((c) => c?.disabled === false)).toBe(true);
  });

  it('when the workload changes while it is being read, then the next lookup reads it again after that read and the old answer is not cached', async () => {
    const d = heldDatabase();
    const { f, change } = feed();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), f);
    const before = secrets.lookup(CLIENT);
    await settle();
    change(CLIENT); // disabled by an administrator, here or on another instance
    const after = secrets.lookup(CLIENT);
    await settle();
    // One read at a time: the next waits for the one out, which answers with the old state.
    expect(d.reads()).toBe(1);
    d.release(0, false);
    expect((await before)?.disabled).toBe(false);
    await settle();
    expect(d.reads()).toBe(2);
    // The old answer was not cached: a lookup now waits for the read after the change.
    const again = secrets.lookup(CLIENT);
    d.release(1, true);
    expect((await after)?.disabled).toBe(true);
    expect((await again)?.disabled).toBe(true);
    expect((await secrets.lookup(CLIENT))?.disabled).toBe(true);
    expect(d.reads()).toBe(2);
  });

  it('when a cached entry nears its expiry, then the lookup answers from the cache and reloads it in the background', async () => {
    const d = heldDatabase();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), feed().f);
    const t0 = Date.now();
    const now = jest.spyOn(Date, 'now').mockReturnValue(t0);
    const first = secrets.lookup(CLIENT);
    await settle();
    d.release(0, false);
    await first;
    now.mockReturnValue(t0 + 4_500);
    // Answered at once, while the reload it started is still held.
    expect((await secrets.lookup(CLIENT))?.disabled).toBe(false);
    await settle();
    expect(d.reads()).toBe(2);
    d.release(1, true);
    await settle();
    await settle();
    expect((await secrets.lookup(CLIENT))?.disabled).toBe(true);
    expect(d.reads()).toBe(2);
  });

  it('when many cached entries near their expiry together, then they are reloaded in one read while the next ones wait for it', async () => {
    const d = heldDatabase();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), feed().f);
    const clients = Array.from(
      { length: 64 },
      (_, i) => `6f1c2e3d-4b5a-4c6d-8e7f-${String(i).padStart(12, '0')}`,
    );
    const t0 = Date.now();
    const now = jest.spyOn(Date, 'now').mockReturnValue(t0);
    const first = Promise.all(clients.map((c) => secrets.lookup(c)));
    await settle();
    expect(d.asked).toEqual([clients]);
    d.releaseAll(0);
    expect((await first).map((c) => c?.clientId)).toEqual(clients);
    now.mockReturnValue(t0 + 4_500);
    // The first half is asked for in one turn of the event loop, the rest in the next, while
    // the first read is still out: the second read waits for it, then takes all of the rest.
    for (const c of clients.slice(0, 32)) expect((await secrets.lookup(c))?.clientId).toBe(c);
    await settle();
    for (const c of clients.slice(32)) expect((await secrets.lookup(c))?.clientId).toBe(c);
    await settle();
    expect(d.asked).toEqual([clients, clients.slice(0, 32)]);
    d.releaseAll(1);
    await settle();
    await settle();
    expect(d.asked).toEqual([clients, clients.slice(0, 32), clients.slice(32)]);
    d.releaseAll(2);
    await settle();
    await settle();
    // Every entry was refreshed: past the first load's expiry, none waits for the database.
    now.mockReturnValue(t0 + 5_500);
    for (const c of clients) expect((await secrets.lookup(c))?.clientId).toBe(c);
    expect(d.asked).toHaveLength(3);
  });

  it('when a batch is read, then the entries in use that come due within a second join it, and entries not looked up since do not', async () => {
    const d = heldDatabase();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), feed().f);
    const [a, b, idle] = ['a', 'b', 'c'].map((x) => `6f1c2e3d-4b5a-4c6d-8e7f-00000000000${x}`);
    const t0 = Date.now();
    const now = jest.spyOn(Date, 'now').mockReturnValue(t0);
    const loaded = secrets.lookup(a);
    await settle();
    d.releaseAll(0);
    await loaded;
    now.mockReturnValue(t0 + 800);
    const others = Promise.all([secrets.lookup(b), secrets.lookup(idle)]);
    await settle();
    d.releaseAll(1);
    await others;
    now.mockReturnValue(t0 + 2_000);
    await secrets.lookup(b); // in use; `idle` is not looked up again
    now.mockReturnValue(t0 + 4_100);
    await secrets.lookup(a); // due: its read takes b along (3.3 s old), not idle
    await settle();
    expect(d.asked).toEqual([[a], [b, idle], [a, b]]);
    d.releaseAll(2);
    await settle();
    await settle();
    // Both were refreshed at 4.1 s: at 7 s neither is due, and both answer without a read.
    now.mockReturnValue(t0 + 7_000);
    expect((await secrets.lookup(a))?.clientId).toBe(a);
    expect((await secrets.lookup(b))?.clientId).toBe(b);
    await settle();
    expect(d.asked).toHaveLength(3);
  });

  it('when a cached entry is past its expiry, then the lookup waits for the database', async () => {
    const d = heldDatabase();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), feed().f);
    const t0 = Date.now();
    const now = jest.spyOn(Date, 'now').mockReturnValue(t0);
    const first = secrets.lookup(CLIENT);
    await settle();
    d.release(0, false);
    await first;
    now.mockReturnValue(t0 + 5_001);
    let answered = false;
    const late = secrets.lookup(CLIENT).then((c) => ((answered = true), c));
    await settle();
    expect(answered).toBe(false);
    d.release(1, true);
    expect((await late)?.disabled).toBe(true);
  });

  it('when a batch read fails, then every lookup waiting on it fails (none hangs) and the next lookup reads again', async () => {
    const d = heldDatabase();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), feed().f);
    const clients = ['1', '2', '3'].map((x) => `6f1c2e3d-4b5a-4c6d-8e7f-00000000000${x}`);
    const waiting = clients.map((c) =>
      secrets.lookup(c).then(
        () => 'answered',
        () => 'failed',
      ),
    );
    await settle();
    expect(d.asked).toEqual([clients]);
    d.fail(0);
    expect(await Promise.all(waiting)).toEqual(['failed', 'failed', 'failed']);
    const retry = secrets.lookup(clients[0]);
    await settle();
    expect(d.asked).toEqual([clients, [clients[0]]]);
    d.releaseAll(1);
    expect((await retry)?.clientId).toBe(clients[0]);
  });

  it('when an entry that joined a batch (in use, 3 s old) is changed while that batch is out, then the old answer is not cached and the next lookup reads after the change', async () => {
    const d = heldDatabase();
    const { f, change } = feed();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), f);
    const [a, b] = ['a', 'b'].map((x) => `6f1c2e3d-4b5a-4c6d-8e7f-00000000000${x}`);
    const t0 = Date.now();
    const now = jest.spyOn(Date, 'now').mockReturnValue(t0);
    const loaded = Promise.all([secrets.lookup(a), secrets.lookup(b)]);
    await settle();
    d.releaseAll(0);
    await loaded;
    now.mockReturnValue(t0 + 1_000);
    await secrets.lookup(b); // in use
    now.mockReturnValue(t0 + 4_100);
    await secrets.lookup(a); // due: b (4.1 s old, in use) joins its read
    await settle();
    expect(d.asked).toEqual([
      [a, b],
      [a, b],
    ]);
    change(b); // b's secret rotated out while the read that took it along is out
    const afterChange = secrets.lookup(b);
    d.releaseAll(1); // the old state of both
    await settle();
    await settle();
    expect(d.asked).toEqual([[a, b], [a, b], [b]]);
    // b as of after the change
    d.held(2, [
      {
        id: `w-${b}`,
        client_id: b,
        tenant_id: 't1',
        disabled: true,
        permissions: ['crypto.encrypt'],
        status: 'active',
      },
    ]);
    expect((await afterChange)?.disabled).toBe(true);
    expect((await secrets.lookup(b))?.disabled).toBe(true);
  });

  it('when many lookups name unknown clients, then they are read 500 at a time and nothing of them stays cached or queued', async () => {
    const d = heldDatabase();
    const secrets = new ClientSecrets(d.db, Buffer.alloc(32, 1), feed().f);
    const unknown = Array.from(
      { length: 1_200 },
      (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    );
    const all = Promise.all(unknown.map((c) => secrets.lookup(c)));
    for (let i = 0; i < 3; i += 1) {
      await settle();
      await settle();
      d.held(i, []);
    }
    expect((await all).every((c) => c === null)).toBe(true);
    expect(d.asked.map((ids) => ids.length)).toEqual([500, 500, 200]);
    // A known client asked now is read on its own: no leftover of the flood rides along.
    const known = secrets.lookup(CLIENT);
    await settle();
    expect(d.asked[3]).toEqual([CLIENT]);
    d.release(3, false);
    expect((await known)?.clientId).toBe(CLIENT);
  });
});
