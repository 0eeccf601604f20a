/**
 * The permission catalogue: exactly 82 distinct strings. Wildcard rows of
 * the spec (`admin.cryptographicexchange.*`, `admin.platform.*`) are families whose members are
 * listed here. Roles hold subsets; tokens carry the role's list in `permissions`.
 */
const FAMILIES = {
  'admin.keys': [
    'read',
    'create',
    'import',
    'rotate',
    'suspend',
    'resume',
    'revoke',
    'archive',
    'orchestrate',
    'update',
    'export-public',
    'versions.read',
  ],
  'admin.policy': ['effective.read', 'templates.read', 'templates.write', 'overrides.write'],
  'admin.cryptographicexchange': ['create', 'read', 'accept', 'reject', 'cancel'],
  'admin.workloads': ['read', 'create', 'update', 'disable', 'rotate-secret', 'delete'],
  'admin.roles': ['read', 'create', 'update', 'delete'],
  'admin.tenant': ['read', 'update'],
  'admin.audit': ['read', 'verify'],
  'admin.platform': [
    'scopes.read',
    'tenants.read',
    'tenants.create',
    'tenants.update',
    'tenants.suspend',
    'tokens.read',
    'tokens.revoke',
    'signing-keys.read',
    'signing-keys.rotate',
    'cross-tenant',
    'introspect',
    'audit.read',
    'policy.write',
    'metrics.read',
    'token-exchange',
    'jobs.read',
  ],
  crypto: [
    'keys.read',
    'encrypt',
    'decrypt',
    'sign',
    'verify',
    'generate-data-key',
    'stream.reencrypt',
    'stream.resign',
  ],
  pqc: [
    'keys.read',
    'encapsulate',
    'decapsulate',
    'sign',
    'verify',
    'hybrid.encapsulate',
    'hybrid.decapsulate',
  ],
  audit: ['events.read', 'verify', 'export'],
  migration: [
    'analyze',
    'convert',
    'jobs.create',
    'jobs.read',
    'jobs.cancel',
    'jobs.result.read',
    'uploads.write',
    'keystore.import',
  ],
  auth: ['token-exchange', 'introspect.self'],
} as const;

/** Permissions that stand alone rather than in a family. */
const SINGLES = [
  'admin.humanuser',
  'admin.humanuser.read',
  'admin.humanuser.reset-password',
] as const;

/** The whole catalogue, sorted. */
export const PERMISSIONS: readonly string[] = Object.freeze(
  [
    ...Object.entries(FAMILIES).flatMap(([family, members]) =>
      members.map((m) => `${family}.${m}`),
    ),
    ...SINGLES,
  ].sort(),
);

const PERMISSION_SET = new Set(PERMISSIONS);

/** True for a string of the catalogue. */
export function isPermission(p: string): boolean {
  return PERMISSION_SET.has(p);
}

/** Permissions only the platform tenant's roles may hold. */
export function isPlatformPermission(p: string): boolean {
  return p.startsWith('admin.platform.');
}

/**
 * Legacy role names and the catalogue permission each maps onto. A legacy token
 * carries the legacy names in `scopes`; a role grants a legacy name when it holds the mapped
 * permission.
 */
export const LEGACY_ROLES: Readonly<Record<string, string>> = Object.freeze({
  'key_management.listKeys': 'crypto.keys.read',
  'key_management.generateKey': 'admin.keys.create',
  'key_management.importKey': 'admin.keys.import',
  'secure.encrypt': 'crypto.encrypt',
  'secure.decrypt': 'crypto.decrypt',
  'secure.sign': 'crypto.sign',
  'secure.verifySignature': 'crypto.verify',
});

/** Legacy scopes granted by a permission list. */
export function legacyScopesFor(permissions: readonly string[]): string[] {
  const held = new Set(permissions);
  return Object.entries(LEGACY_ROLES)
    .filter(([, p]) => held.has(p))
    .map(([legacy]) => legacy);
}
