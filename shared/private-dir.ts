/**
 * Directories of this user's under the OS temp directory (the Node compile cache, the embedded
 * database's template): what the process finds there it runs or trusts, so each must be its own.
 */
import { lstatSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `<base>/<prefix>-<uid>`, made with mode 0700, or null when there is none to trust: refused
 * when it exists owned by someone else, as a symlink, or writable by group or others (another
 * local user could plant code or data in the process holding the master key).
 */
export function privateTempDir(prefix: string, base = tmpdir()): string | null {
  if (typeof process.getuid !== 'function') return null;
  const uid = process.getuid();
  const dir = join(base, `${prefix}-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0 ? dir : null;
  } catch {
    return null;
  }
}
