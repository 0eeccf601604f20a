import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS, compileCacheDir } from '../../shared/node-flags.ts';

const PROBE = new URL('../fixtures/relaunch-probe.ts', import.meta.url).pathname;

function probe(env: Record<string, string> = {}): {
  pid: number;
  execArgv: string[];
  args: string[];
  arenas?: string;
  cache?: string;
  childPid: number;
} {
  const base = { ...process.env };
  for (const name of [
    'MALLOC_ARENA_MAX',
    'MALLOC_TRIM_THRESHOLD_',
    'MALLOC_MMAP_THRESHOLD_',
    'NODE_COMPILE_CACHE',
    'KEYWARD_NODE_FLAGS',
  ])
    delete base[name];
  const r = spawnSync(process.execPath, [PROBE, 'one', 'two words'], {
    env: { ...base, ...env },
    encoding: 'utf8',
  });
  expect(r.status).toBe(0);
  return { ...JSON.parse(r.stdout), childPid: r.pid };
}

describe('relaunchWithServiceFlags', () => {
  it('when an entry starts without the service settings, then it becomes, in the same process, a Node with them and the same arguments', () => {
    const p = probe();
    expect(p.pid).toBe(p.childPid);
    for (const flag of SERVICE_NODE_FLAGS) expect(p.execArgv).toContain(flag);
    expect(p.args).toEqual(['one', 'two words']);
    expect(p.arenas).toBe('2');
    expect(p.cache).toBe(compileCacheDir());
    expect(p.cache).toContain(`keyward-node-compile-cache-${process.getuid!()}`);
  });

  it("when the operator set a variable already, then the operator's value stays", () => {
    expect(probe({ MALLOC_ARENA_MAX: '4' }).arenas).toBe('4');
  });

  it('when the operator gives the flag a value of their own, then that value stays', () => {
    const p = probe({ NODE_OPTIONS: '--max-semi-space-size=8' });
    expect(p.execArgv.some((f) => f.startsWith('--max-semi-space-size'))).toBe(false);
    expect(p.arenas).toBe('2');
  });

  it('when KEYWARD_NODE_FLAGS=off, then the process runs as it was started', () => {
    const p = probe({ KEYWARD_NODE_FLAGS: 'off' });
    expect(p.execArgv).toEqual([]);
    expect(p.arenas).toBeUndefined();
  });
});

describe('compileCacheDir', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'keyward-cache-test-'));
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));
  const dir = () => join(base, `keyward-node-compile-cache-${process.getuid!()}`);

  it('when the directory does not exist, then it is made private to this user and used', () => {
    expect(compileCacheDir(base)).toBe(dir());
    expect(compileCacheDir(base)).toBe(dir());
  });

  it('when the directory is writable by others, then it is not used (Node would run what another user planted)', () => {
    mkdirSync(dir(), { mode: 0o700 });
    chmodSync(dir(), 0o777);
    expect(compileCacheDir(base)).toBeNull();
  });

  it('when the path is a symlink, then it is not used', () => {
    const elsewhere = join(base, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, dir());
    expect(compileCacheDir(base)).toBeNull();
  });
});
