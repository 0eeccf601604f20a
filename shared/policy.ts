/**
 * Policies: platform defaults, named templates and tenant overrides, resolved into the
 * effective policy that key creation, token lifetimes and rate limits follow.
 */
import type { Config } from './config/index.ts';
import { KEY_TYPES } from './crypto/registry.ts';

export interface Policy {
  allowedKeyTypes: string[];
  rotationPeriodDays: number;
  tokenLifetimes: {
    clientCredentials: number;
    human: number;
    tokenExchange: number;
    refresh: number;
    rememberMeRefresh: number;
  };
  rateLimits: {
    tokenRequestsPerMinute: number;
    failedAuthenticationsPerMinute: number;
    apiRequestsPerMinutePerEndpoint: number;
  };
  /** The paths below /v1/ where the tenant's Vault Transit API answers (Vault's mounts). */
  vaultTransitMounts: string[];
}

/** Every type of the crypto registry. */
export const ALL_KEY_TYPES: string[] = [...KEY_TYPES];

export interface PolicyTemplate {
  description: string;
  policy: Partial<Pick<Policy, 'allowedKeyTypes' | 'rotationPeriodDays'>>;
}

/**
 * Named templates a tenant can adopt (`template` in its overrides). A Map, not an object: the
 * name comes from a request, and "constructor" or "__proto__" must name nothing.
 */
export const POLICY_TEMPLATES: ReadonlyMap<string, PolicyTemplate> = new Map([
  ['default', { description: 'Every supported key type; yearly rotation', policy: {} }],
  [
    'strict',
    {
      description: 'No 128-bit symmetric or 2048-bit RSA keys; rotation every 90 days',
      policy: {
        allowedKeyTypes: ALL_KEY_TYPES.filter(
          (t) => t !== 'aes-128' && t !== 'rsa-2048' && t !== 'rsa-pss-2048',
        ),
        rotationPeriodDays: 90,
      },
    },
  ],
  [
    'pqc-only',
    {
      description: 'Post-quantum and hybrid key types plus AES-256 only',
      policy: {
        allowedKeyTypes: ALL_KEY_TYPES.filter(
          (t) => t === 'aes-256' || /^(ml-|slh-|x25519-)/.test(t),
        ),
        rotationPeriodDays: 180,
      },
    },
  ],
]);

/** The platform defaults, from configuration. */
export function platformDefaults(config: Config): Policy {
  return {
    allowedKeyTypes: ALL_KEY_TYPES,
    rotationPeriodDays: 365,
    tokenLifetimes: {
      clientCredentials: config.accessTokenTtl,
      human: config.humanTokenTtl,
      tokenExchange: config.exchangeTokenTtl,
      refresh: config.refreshTokenTtl,
      rememberMeRefresh: config.rememberMeRefreshTtl,
    },
    rateLimits: {
      tokenRequestsPerMinute: config.rateLimitTokenPerMinute,
      failedAuthenticationsPerMinute: config.rateLimitFailuresPerMinute,
      apiRequestsPerMinutePerEndpoint: config.rateLimitApiPerMinute,
    },
    vaultTransitMounts: [...DEFAULT_TRANSIT_MOUNTS],
  };
}

/** Tenant overrides: a template name and/or narrower values. */
export interface PolicyOverrides {
  template?: string;
  allowedKeyTypes?: string[];
  rotationPeriodDays?: number;
  /** Replaces the default Transit mount (`transit`); see {@link transitMountsProblem}. */
  vaultTransitMounts?: string[];
}

/** Vault's default Transit mount, the one a tenant serves until it names its own. */
export const DEFAULT_TRANSIT_MOUNT = 'transit';
const DEFAULT_TRANSIT_MOUNTS: readonly string[] = [DEFAULT_TRANSIT_MOUNT];

/** How many Transit mounts a tenant may name. */
export const MAX_TRANSIT_MOUNTS = 8;

/**
 * A Transit mount name: one path segment, as the matcher reads the first segment below /v1/ as
 * the mount (a mount of several segments, `team/transit`, is not served).
 */
export const TRANSIT_MOUNT_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$';
const MOUNT_NAME = new RegExp(TRANSIT_MOUNT_PATTERN);

/**
 * Names Vault keeps for itself (it refuses to mount anything there); `auth` is also where the
 * AppRole login and the token paths are served.
 */
export const RESERVED_TRANSIT_MOUNTS: readonly string[] = [
  'auth',
  'sys',
  'identity',
  'cubbyhole',
  'audit',
];

/** What is wrong with a list of Transit mounts, in a sentence; null when it can be stored. */
export function transitMountsProblem(mounts: readonly unknown[]): string | null {
  if (mounts.length < 1 || mounts.length > MAX_TRANSIT_MOUNTS)
    return `vaultTransitMounts names 1 to ${MAX_TRANSIT_MOUNTS} mounts`;
  const seen = new Set<string>();
  for (const mount of mounts) {
    if (typeof mount !== 'string' || !MOUNT_NAME.test(mount))
      return `vaultTransitMounts: ${JSON.stringify(mount)} is not one path segment of 1 to 64 letters, digits, '_' or '-' (starting with a letter or digit)`;
    if (RESERVED_TRANSIT_MOUNTS.includes(mount.toLowerCase()))
      return `vaultTransitMounts: '${mount}' is a path Vault reserves (${RESERVED_TRANSIT_MOUNTS.join(', ')})`;
    if (seen.has(mount)) return `vaultTransitMounts: '${mount}' is named twice`;
    seen.add(mount);
  }
  return null;
}

/** The Transit mounts stored overrides give: theirs when they are valid, else the default. */
export const transitMountsOf = (overrides: PolicyOverrides | null | undefined): string[] => {
  const mounts = overrides?.vaultTransitMounts;
  return Array.isArray(mounts) && transitMountsProblem(mounts) === null
    ? [...mounts]
    : [...DEFAULT_TRANSIT_MOUNTS];
};

/** defaults ⊕ template ⊕ overrides; overrides may only narrow the allowed key types. */
export function effectivePolicy(
  config: Config,
  overrides: PolicyOverrides,
): Policy & { template: string } {
  const base = platformDefaults(config);
  // A stored name that is no template (written before validation used the Map) reads as the default.
  const template =
    overrides.template !== undefined && POLICY_TEMPLATES.has(overrides.template)
      ? overrides.template
      : 'default';
  const fromTemplate = POLICY_TEMPLATES.get(template)!.policy;
  const allowed = fromTemplate.allowedKeyTypes ?? base.allowedKeyTypes;
  return {
    ...base,
    template,
    allowedKeyTypes: overrides.allowedKeyTypes
      ? allowed.filter((t) => overrides.allowedKeyTypes!.includes(t))
      : allowed,
    rotationPeriodDays:
      overrides.rotationPeriodDays ?? fromTemplate.rotationPeriodDays ?? base.rotationPeriodDays,
    vaultTransitMounts: transitMountsOf(overrides),
  };
}
