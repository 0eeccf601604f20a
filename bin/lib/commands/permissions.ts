/**
 * `keyward permissions`: the permission catalogue (shared/permissions.ts, the list the service
 * checks roles against), one permission a line, so `roles create --permission` has something to
 * pick from. No login: the catalogue ships with the CLI.
 */
import { PERMISSIONS, isPlatformPermission } from '../../../shared/permissions.ts';
import { EXIT, print, type Command } from '../command.ts';

export const permissionsCommand: Command = {
  name: 'permissions',
  local: true,
  summary: 'The permission catalogue, one permission a line (no login needed)',
  details:
    'admin.platform.* permissions may be held only by roles of the platform tenant. With --output json, an array of {permission, platformOnly}.',
  async run(inv) {
    const rows = PERMISSIONS.map((p) => ({ permission: p, platformOnly: isPlatformPermission(p) }));
    print(inv, rows, () => `${PERMISSIONS.join('\n')}\n`);
    return EXIT.ok;
  },
};

/** Catalogue permissions close to an unknown one (same family), for the error that names it. */
export function closeTo(unknown: string): string[] {
  const family = unknown.split('.').slice(0, -1).join('.');
  return family ? PERMISSIONS.filter((p) => p.startsWith(`${family}.`)) : [];
}

/** A usage message for permissions outside the catalogue, or null when all are known. */
export function unknownPermissions(permissions: string[]): string | null {
  const known = new Set(PERMISSIONS);
  const unknown = permissions.filter((p) => !known.has(p));
  if (unknown.length === 0) return null;
  const hints = unknown
    .map((u) => [u, closeTo(u)] as const)
    .filter(([, near]) => near.length)
    .map(([u, near]) => `\n  instead of ${u}: ${near.join(', ')}`)
    .join('');
  return `unknown permission${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}${hints}\nRun \`keyward permissions\` for the catalogue (${PERMISSIONS.length} permissions).`;
}
