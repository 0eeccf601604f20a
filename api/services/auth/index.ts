/** The auth services of one process, built once from the context's parts. */
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Config } from '../../../shared/config/index.ts';
import type { MasterKey } from '../../../shared/crypto/master-key.ts';
import type { Logger } from '../../../shared/logger.ts';
import { createSigningKeys, type SigningKeys } from './signing-keys.ts';
import { createRevocationList, type RevocationList, type SubjectRevocationInput } from './revocation.ts';
import { createAccessTokens, type AccessTokens } from './access-tokens.ts';
import { createClientSecrets, type ClientSecrets } from './client-secrets.ts';
import { createRateLimits, type RateLimits } from './rate-limits.ts';
import { outboxMailer, type Mailer } from './password-reset.ts';

export interface AuthServices {
  signingKeys: SigningKeys;
  revocation: RevocationList;
  tokens: AccessTokens;
  secrets: ClientSecrets;
  limits: RateLimits;
  mailer: Mailer;
  /** Longest access-token lifetime: how long a retired signing key stays published. */
  maxTokenLifetime: number;
  /**
   * Ends every access token of a user or workload within a second, on every instance (refresh
   * tokens are revoked separately): on disable and delete (strict), on a password reset (not).
   */
  revokeSubjectTokens(input: Omit<SubjectRevocationInput, 'maxTokenLifetimeSeconds'>): Promise<void>;
  /** The platform tenant's id (looked up once). */
  platformTenantId(): Promise<string>;
  close(): Promise<void>;
}

/** Builds the auth services; starts scheduled signing-key rotation. */
export async function createAuthServices(config: Config, db: Knex, master: MasterKey, logger: Logger, redis?: Redis): Promise<AuthServices> {
  const signingKeys = await createSigningKeys(db, master);
  const revocation = await createRevocationList(db, logger, redis);
  const tokens = createAccessTokens(config.publicBaseUrl, signingKeys, revocation);
  const secrets = await createClientSecrets(db, master.derive('client-secret-pepper'), redis);
  const maxTokenLifetime = Math.max(config.accessTokenTtl, config.humanTokenTtl, config.exchangeTokenTtl);
  const rotation = setInterval(() => {
    signingKeys.rotateIfDue(config.signingKeyRotation, maxTokenLifetime)
      .then((rotated) => rotated && logger.info({ kid: signingKeys.current().kid }, 'token signing key rotated on schedule'))
      .catch((err) => logger.warn({ err: err.message }, 'scheduled signing key rotation failed'));
  }, Math.min(config.signingKeyRotation * 1000, 3_600_000) / 4);
  rotation.unref();
  let platform: string | null = null;
  return {
    signingKeys, revocation, tokens, secrets, maxTokenLifetime,
    limits: createRateLimits(config, redis),
    mailer: outboxMailer(db, logger),
    revokeSubjectTokens: (input) => revocation.revokeSubject({ ...input, maxTokenLifetimeSeconds: maxTokenLifetime }),
    async platformTenantId() {
      platform ??= ((await db('tenants').where({ is_platform: true }).first('id'))?.id as string | undefined) ?? null;
      if (!platform) throw new Error('no platform tenant: bootstrap has not run');
      return platform;
    },
    async close() {
      clearInterval(rotation);
      await revocation.close();
      await secrets.close();
    },
  };
}
