/**
 * MIGRATION_OBJECT_RETENTION as the worker enforces it: objects under tenants/ older than the
 * retention go, newer ones and anything outside tenants/ stay; the config refuses a retention
 * shorter than an hour (it would delete inputs under running jobs).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsObjectStore } from '../../../shared/storage/fs-store.ts';
import { startRetentionSweeper, sweepIntervalMs } from '../../../workers/retention.ts';
import { loadConfig } from '../../../shared/config/index.ts';

async function* bytes(s: string) {
  yield Buffer.from(s);
}

const quiet = { info: () => {}, warn: () => {} } as never;

describe('the retention sweeper', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'keyward-retention-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('when objects are older than the retention, then they are deleted and the others stay', async () => {
    const store = new FsObjectStore({ root: dir });
    await store.put('tenants/t1/in/a.p7m', bytes('a'));
    await store.put('tenants/t2/out/b.jwe', bytes('b'));
    await store.put('other/keep.bin', bytes('c'));
    const sweeper = startRetentionSweeper(store, 3600, quiet, 0);
    // An hour later nothing is past the retention yet; two hours later both tenant objects are.
    expect(await sweeper.sweep(Date.now() + 1800 * 1000)).toBe(0);
    expect(await sweeper.sweep(Date.now() + 7200 * 1000)).toBe(2);
    expect(await store.head('tenants/t1/in/a.p7m')).toBeNull();
    expect(await store.head('tenants/t2/out/b.jwe')).toBeNull();
    expect(await store.head('other/keep.bin')).not.toBeNull();
    await sweeper.close();
  });

  it('when the retention is set, then the sweep runs every tenth of it, between a minute and an hour', () => {
    expect(sweepIntervalMs(3600)).toBe(360_000);
    expect(sweepIntervalMs(100)).toBe(60_000);
    expect(sweepIntervalMs(30 * 86400)).toBe(3_600_000);
  });
});

describe('MIGRATION_OBJECT_RETENTION', () => {
  it('when it is below an hour (and not 0), then the configuration is refused naming it', () => {
    expect(() => loadConfig({ MIGRATION_OBJECT_RETENTION: '600' })).toThrow(
      /MIGRATION_OBJECT_RETENTION must be 0 \(off\) or at least 3600 seconds/,
    );
    expect(loadConfig({ MIGRATION_OBJECT_RETENTION: '86400' }).migrationObjectRetention).toBe(
      86400,
    );
    expect(loadConfig({}).migrationObjectRetention).toBe(0);
  });
});
