/**
 * The list of sealed sources (shared/keys/sealed-items.ts) against the source tree: every use of
 * a master key's `seal` outside the rewrap is a value the keyring must count, re-seal and check,
 * so its file must be listed by a source, once per call. A value sealed without being listed
 * stays under the old key after a rewrap while the status says that key seals nothing (the
 * access keys' secrets once did, and removing the old key broke every SigV4 call).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SEALED_SOURCES } from '../../../shared/keys/sealed-items.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const SCANNED = ['api', 'shared', 'workers', 'bin', 'scripts'];
/** Re-seals what is already sealed, walking SEALED_SOURCES: it adds no value of its own. */
const REWRAP = 'shared/keys/rewrap.ts';

/** The TypeScript files under `dir`, relative to the repository. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') out.push(...sources(path));
    } else if (/\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The code of a file without its comments (a comment may name `.seal(` without calling it). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/**
 * Uses of a method called `seal`: `x.seal(...)`, `x?.seal`, `x['seal']`, and `{ seal } =` or
 * `{ seal: s } =` (destructured, then called under any name).
 */
const SEAL_USES = [
  /\??\.seal\b/g,
  /\[\s*['"`]seal['"`]\s*\]/g,
  /\{[^{}]*\bseal\b\s*[,:}][^{}]*\}\s*=/g,
];

function sealUses(file: string): number {
  const text = code(readFileSync(join(ROOT, file), 'utf8'));
  return SEAL_USES.reduce((n, re) => n + (text.match(re)?.length ?? 0), 0);
}

describe('the sealed sources against every seal in the source tree', () => {
  const found = new Map<string, number>();
  for (const dir of SCANNED)
    for (const file of sources(dir)) {
      const n = sealUses(file);
      if (n > 0) found.set(file, n);
    }

  it('when the source tree is scanned, then it finds the known sealing files (the scan itself works)', () => {
    expect(found.get('api/services/keys/store.ts')).toBe(1);
    expect(found.get(REWRAP)).toBeGreaterThan(0);
  });

  it('when a file seals with a master key, then sealed-items.ts lists it, once per call, and lists no file that does not', () => {
    const listed = new Map<string, number>();
    for (const s of SEALED_SOURCES)
      for (const file of s.sealedIn) listed.set(file, (listed.get(file) ?? 0) + 1);
    const sealing = new Map(found);
    sealing.delete(REWRAP);
    expect(Object.fromEntries([...sealing].sort())).toEqual(Object.fromEntries([...listed].sort()));
  });

  it('when the rewrap re-seals, then it walks the listed sources and nothing else', () => {
    const rewrap = code(readFileSync(join(ROOT, REWRAP), 'utf8'));
    expect(rewrap).toMatch(/for \(const s of SEALED_SOURCES\) await this\.#source\(s\)/);
    expect(rewrap.match(/\??\.seal\b/g)).toHaveLength(1);
  });

  it('when the access keys are looked for, then they are a source sealed where access keys are made', () => {
    expect(SEALED_SOURCES.find((s) => s.table === 'access_keys')).toMatchObject({
      name: 'access-keys',
      column: 'secret',
      sealedIn: ['api/services/auth/access-keys.ts'],
    });
  });
});
