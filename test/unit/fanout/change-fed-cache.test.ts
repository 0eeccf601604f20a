/**
 * The change-fed cache (shared/fanout/change-fed-cache.ts) on its own, with a feed whose changes
 * the test emits and loads the test settles: one load per key, a load overtaken by a change never
 * kept, the bound, the TTL and the refresh ahead of it, absences, batches and resync.
 */
import type { Change, ChangeKind } from '../../../shared/fanout/change-feed.ts';
import {
  ChangeFedCache,
  type ChangeFedCacheOptions,
} from '../../../shared/fanout/change-fed-cache.ts';

function fakeFeed() {
  const listeners = new Map<ChangeKind, Array<(c: Change) => void>>();
  const resyncs: Array<() => void> = [];
  return {
    on(kind: ChangeKind, fn: (c: Change) => void) {
      listeners.set(kind, [...(listeners.get(kind) ?? []), fn]);
    },
    onResync(fn: () => void) {
      resyncs.push(fn);
    },
    emit(kind: ChangeKind, ref: string) {
      for (const fn of listeners.get(kind) ?? []) fn({ kind, ref } as Change);
    },
    resync() {
      for (const fn of resyncs) fn();
    },
  };
}

/** A store the loads read, counting reads and able to hold them until released. */
function store(values: Record<string, string>) {
  const reads: string[][] = [];
  let gate: PromiseWithResolvers<void> | null = null;
  return {
    values,
    reads,
    hold() {
      gate = Promise.withResolvers<void>();
    },
    release() {
      gate?.resolve();
      gate = null;
    },
    async load(keys: string[]): Promise<Map<string, string>> {
      reads.push(keys);
      const snapshot = new Map(
        keys.filter((k) => k in values).map((k) => [k, values[k]] as [string, string]),
      );
      if (gate) await gate.promise;
      return snapshot;
    },
  };
}

function cacheOf(
  s: ReturnType<typeof store>,
  feed: ReturnType<typeof fakeFeed>,
  options: Partial<ChangeFedCacheOptions<string>> = {},
) {
  return new ChangeFedCache<string>({
    feed,
    kind: 'alias',
    load: (keys) => s.load(keys),
    max: 100,
    ...options,
  });
}

const tick = () => new Promise((r) => setImmediate(r));

describe('the change-fed cache', () => {
  it('when a key is asked for twice at once and then again, then one load answers all three', async () => {
    const s = store({ a: '1' });
    const cache = cacheOf(s, fakeFeed());
    const [x, y] = await Promise.all([cache.get('a'), cache.get('a')]);
    expect([x, y, await cache.get('a')]).toEqual(['1', '1', '1']);
    expect(s.reads).toEqual([['a']]);
    expect(cache.hit('a')).toBeDefined();
  });

  it('when a change names a key, then it is read again; a change of another key leaves it', async () => {
    const s = store({ a: '1', b: '2' });
    const feed = fakeFeed();
    const cache = cacheOf(s, feed);
    await cache.get('a');
    await cache.get('b');
    s.values.a = '1b';
    feed.emit('alias', 'a');
    feed.emit('key', 'b');
    expect(await cache.get('a')).toBe('1b');
    expect(await cache.get('b')).toBe('2');
    expect(s.reads).toEqual([['a'], ['b'], ['a']]);
  });

  it('when a change comes while a load is in flight, then that load answers its waiters but is not kept, and later lookups read anew', async () => {
    const s = store({ a: 'old' });
    const feed = fakeFeed();
    const cache = cacheOf(s, feed);
    s.hold();
    const first = cache.get('a');
    await tick();
    s.values.a = 'new';
    feed.emit('alias', 'a');
    const second = cache.get('a');
    s.release();
    expect(await first).toBe('old');
    expect(await second).toBe('new');
    expect(await cache.get('a')).toBe('new');
    expect(s.reads).toHaveLength(2);
  });

  it('when a resync comes, then every value and every load in flight is dropped', async () => {
    const s = store({ a: '1', b: '2' });
    const feed = fakeFeed();
    const cache = cacheOf(s, feed);
    await cache.get('a');
    s.hold();
    const pending = cache.get('b');
    await tick();
    feed.resync();
    s.release();
    await pending;
    expect(cache.size).toBe(0);
  });

  it('when more keys than the bound are read, then the oldest go first and the count stays at the bound', async () => {
    const values = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, `${i}`]));
    const s = store(values);
    const cache = cacheOf(s, fakeFeed(), { max: 4 });
    for (let i = 0; i < 10; i++) await cache.get(`k${i}`);
    expect(cache.size).toBe(4);
    expect(cache.hit('k0')).toBeUndefined();
    expect(cache.hit('k9')).toBeDefined();
  });

  it('when a load fails, then its waiters see the error and nothing is kept', async () => {
    const feed = fakeFeed();
    let fail = true;
    const cache = new ChangeFedCache<string>({
      feed,
      kind: 'alias',
      max: 10,
      load: async (keys) => {
        if (fail) throw new Error('database down');
        return new Map(keys.map((k) => [k, 'v']));
      },
    });
    await expect(cache.get('a')).rejects.toThrow('database down');
    fail = false;
    expect(await cache.get('a')).toBe('v');
  });

  it('when a key has no value, then it answers undefined, and is remembered absent only for absentTtlMs', async () => {
    const s = store({});
    const cache = cacheOf(s, fakeFeed(), { absentTtlMs: 60_000 });
    expect(await cache.get('nope')).toBeUndefined();
    expect(await cache.get('nope')).toBeUndefined();
    expect(s.reads).toHaveLength(1);
    const t = store({});
    const forgetful = cacheOf(t, fakeFeed());
    await forgetful.get('nope');
    await forgetful.get('nope');
    expect(t.reads).toHaveLength(2);
  });

  it('when a value is older than the TTL, then it is read again; past refreshAfterMs a hit answers at once and reloads behind', async () => {
    const s = store({ a: '1' });
    const cache = cacheOf(s, fakeFeed(), { ttlMs: 40, refreshAfterMs: 20 });
    await cache.get('a');
    await new Promise((r) => setTimeout(r, 25));
    s.values.a = '2';
    expect(await cache.get('a')).toBe('1');
    await tick();
    expect(await cache.get('a')).toBe('2');
    await new Promise((r) => setTimeout(r, 45));
    s.values.a = '3';
    expect(await cache.get('a')).toBe('3');
    expect(s.reads).toHaveLength(3);
  });

  it('when many keys are asked for with batch set, then they are read together, a batch at a time', async () => {
    const values = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`k${i}`, `${i}`]));
    const s = store(values);
    const cache = cacheOf(s, fakeFeed(), { batch: 3 });
    const got = await Promise.all(Array.from({ length: 7 }, (_, i) => cache.get(`k${i}`)));
    expect(got).toEqual(['0', '1', '2', '3', '4', '5', '6']);
    expect(s.reads).toEqual([['k0', 'k1', 'k2'], ['k3', 'k4', 'k5'], ['k6']]);
  });

  it('when a change names entries by their values (names), then those go and the others stay', async () => {
    const s = store({ a: 'client-1', b: 'client-2' });
    const feed = fakeFeed();
    const cache = cacheOf(s, feed, {
      kind: 'client',
      names: (change, _key, value) => value === change.ref,
    });
    await cache.get('a');
    await cache.get('b');
    feed.emit('client', 'client-1');
    expect(cache.hit('a')).toBeUndefined();
    expect(cache.hit('b')).toBeDefined();
  });
});
