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
  };
}

/** Tenant overrides: a template name and/or narrower values. */
export interface PolicyOverrides {
  template?: string;
  allowedKeyTypes?: string[];
  rotationPeriodDays?: number;
}

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
  };
}
