import { mkdtemp, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FsObjectStore, STAGING_DIR } from '../../../shared/storage/index.ts';
import { behavesAsAnObjectStore } from './behaviour.ts';
import { generated, keysOf, problemFrom, text } from './helpers.ts';

async function tempStore(): Promise<{ store: FsObjectStore; dir: string; close(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'keyward-fs-store-'));
  const store = new FsObjectStore({ root: path.join(dir, 'objects') });
  await store.init();
  return { store, dir, close: () => rm(dir, { recursive: true, force: true }) };
}

describe('FsObjectStore', () => {
  behavesAsAnObjectStore(tempStore);

  describe('on its own', () => {
    let fixture: Awaited<ReturnType<typeof tempStore>>;
    beforeAll(async () => {
      fixture = await tempStore();
    });
    afterAll(() => fixture.close());

    it('when a key would resolve outside the root, then the store refuses it before touching the disk', () => {
      for (const key of ['../outside', 'a/../../outside', '/abs', 'a\\..\\..\\b']) {
        expect(() => fixture.store.pathOf(key)).toThrow(
          expect.objectContaining({ code: 'validation_failed' }),
        );
      }
      expect(fixture.store.pathOf('a/b')).toBe(path.join(fixture.store.root, 'a', 'b'));
    });

    it('when a put fails, then its temp file is removed from the staging directory', async () => {
      await expect(
        fixture.store.put('failed', generated(3, { failAfterMiB: 2 }).chunks),
      ).rejects.toThrow('source broke');
      expect(await readdir(path.join(fixture.store.root, STAGING_DIR))).toEqual([]);
    });

    it('when objects are listed, then the staging directory never shows up and its name is reserved', async () => {
      await writeFile(path.join(fixture.store.root, STAGING_DIR, 'leftover.part'), 'partial');
      await fixture.store.put('visible', text('yes'));
      expect(await keysOf(fixture.store.list(''))).toEqual(['visible']);
      expect((await problemFrom(fixture.store.put(`${STAGING_DIR}/x`, text('x')))).code).toBe(
        'validation_failed',
      );
    });

    it('when a key names an existing directory of keys, then the put is a conflict', async () => {
      await fixture.store.put('dir/child', text('child'));
      expect((await problemFrom(fixture.store.put('dir', text('x')))).code).toBe('conflict');
      expect((await problemFrom(fixture.store.get('dir'))).code).toBe('not_found');
      expect(await fixture.store.head('dir')).toBeNull();
    });

    it('when the last object of a directory is deleted, then the emptied directories are pruned', async () => {
      await fixture.store.put('deep/er/still/obj', text('x'));
      await fixture.store.delete('deep/er/still/obj');
      expect(await readdir(fixture.store.root)).not.toContain('deep');
    });

    it('when listing a partial name, then keys come back in S3 key order (a directory sorts as name + "/")', async () => {
      for (const key of ['ord/rep/a', 'ord/rep/b/c', 'ord/rep-x', 'ord/repz', 'ord/re'])
        await fixture.store.put(key, text(key));
      expect(await keysOf(fixture.store.list('ord/rep'))).toEqual([
        'ord/rep-x',
        'ord/rep/a',
        'ord/rep/b/c',
        'ord/repz',
      ]);
    });

    it('when a directory exists that the store did not write, then listing skips what is not a file', async () => {
      await mkdir(path.join(fixture.store.root, 'emptydir'), { recursive: true });
      expect(await keysOf(fixture.store.list('emptydir'))).toEqual([]);
    });
  });
});
