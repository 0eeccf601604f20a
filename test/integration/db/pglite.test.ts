/**
 * The embedded database's new directories: the first this user opens is initialised (in a
 * worker thread) and kept as this user's template under the temp directory; later ones are
 * copies of it, each with its own data and Keyward's migrations applied.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../../shared/db/knex.ts';
import { Tenant } from '../../../shared/db/models/tenants.ts';

describe('embedded database directories', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'keyward-pglite-test-'));
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('when two new DATA_DIRs are opened one after the other, then a template is kept, the second is made from it, and each keeps its own rows', async () => {
    const steps: string[] = [];
    const first = await openDatabase({
      dataDir: join(root, 'one'),
      onStep: (step) => steps.push(step),
    });
    const id = randomUUID();
    try {
      await Tenant.query(first).insert({ id, name: 'only-in-one' });
    } finally {
      await first.destroy();
    }
    expect(steps).toEqual(['embedded database open', 'migrations']);
    const cache = join(tmpdir(), `keyward-pglite-template-${process.getuid!()}`);
    const templates = readdirSync(cache).filter((d) => /^pglite-[\d.]+$/.test(d));
    expect(templates.some((t) => existsSync(join(cache, t, 'PG_VERSION')))).toBe(true);

    const second = await openDatabase({ dataDir: join(root, 'two') });
    try {
      expect(await Tenant.query(second).findById(id)).toBeUndefined();
      await Tenant.query(second).insert({ id, name: 'only-in-two' });
      expect((await Tenant.query(second).findById(id))?.name).toBe('only-in-two');
    } finally {
      await second.destroy();
    }
    const reopened = await openDatabase({ dataDir: join(root, 'one') });
    try {
      expect((await Tenant.query(reopened).findById(id))?.name).toBe('only-in-one');
    } finally {
      await reopened.destroy();
    }
  }, 180_000);
});
