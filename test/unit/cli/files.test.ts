/**
 * bin/lib/files.ts, the one way the CLI writes a file: whole or not at all. Before, a command
 * that failed midway could leave an empty or partial file under the name asked for.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeWhole } from '../../../bin/lib/files.ts';

describe('writeWhole', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'keyward-files-unit-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('when bytes, text or a stream are written, then the file holds them and the count is answered', async () => {
    expect(await writeWhole(join(dir, 'a'), 'text\n')).toBe(5);
    expect(await writeWhole(join(dir, 'b'), Buffer.from([1, 2, 3]))).toBe(3);
    async function* parts() {
      yield Buffer.from('one ');
      yield Buffer.from('two');
    }
    expect(await writeWhole(join(dir, 'c'), parts())).toBe(7);
    expect(readFileSync(join(dir, 'c'), 'utf8')).toBe('one two');
    expect(readdirSync(dir).sort()).toEqual(['a', 'b', 'c']);
  });

  it('when the source fails midway, then neither the destination nor a temporary file is left, and a file already there is kept as it was', async () => {
    async function* failing() {
      yield Buffer.alloc(100_000, 1);
      throw new Error('the service cut the stream');
    }
    await expect(writeWhole(join(dir, 'new'), failing())).rejects.toThrow('cut the stream');
    expect(readdirSync(dir)).toEqual([]);
    writeFileSync(join(dir, 'old'), 'previous');
    await expect(writeWhole(join(dir, 'old'), failing())).rejects.toThrow('cut the stream');
    expect(readdirSync(dir)).toEqual(['old']);
    expect(readFileSync(join(dir, 'old'), 'utf8')).toBe('previous');
  });

  it('when a mode is asked for, then the file has exactly it, whatever the umask or an older file had', async () => {
    writeFileSync(join(dir, 'secret'), 'old', { mode: 0o644 });
    await writeWhole(join(dir, 'secret'), 'new', { mode: 0o600 });
    expect(statSync(join(dir, 'secret')).mode & 0o777).toBe(0o600);
  });
});
