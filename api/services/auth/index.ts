/** The auth services of one process, built once from the context's parts. */
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';
import type { Config } from '../../../shared/config/index.ts';
import type { MasterKey } from '../../../shared/crypto/master-key.ts';
import type { MasterSecrets } from '../../../shared/keys/sealed-items.ts';
import type { Logger } from '../../../shared/logger.ts';
import { createSigningKeys, type SigningKeys } from './signing-keys.ts';
import { FAMILY, RevocationList, type SubjectRevocationInput } from './revocation.ts';
import { createAccessTokens, type AccessTokens } from './access-tokens.ts';
import type { TokenSigner } from './token-signer.ts';
import { ClientSecrets } from './client-secrets.ts';
import { createRateLimits, type RateLimits } from './rate-limits.ts';
import { outboxMailer, type Mailer } from './password-reset.ts';
import { smtpMailer, smtpOptions } from './smtp-mailer.ts';
import { createHashBudget, type HashBudget } from './hash-budget.ts';
import { Tenant } from '../../../shared/db/models/tenants.ts';
import { User, Workload } from '../../../shared/db/models/identities.ts';

export interface AuthServices {
  signingKeys: SigningKeys;
  revocation: RevocationList;
  tokens: AccessTokens;
  secrets: ClientSecrets;
  limits: RateLimits;
  /** Password hashing that callers without credentials can start (resets). */
  hashBudget: HashBudget;
  mailer: Mailer;
  /** Longest access-token lifetime: how long a retired signing key stays published. */
  maxTokenLifetime: number;
  /**
   * Ends every access token of a user or workload within a second, on every instance (refresh
   * tokens are revoked separately): on disable and delete (strict), on a password reset (not).
   */
  revokeSubjectTokens(
    input: Omit<SubjectRevocationInput, 'maxTokenLifetimeSeconds'>,
  ): Promise<void>;
  /** Ends every access token issued from a refresh-token family (reuse detected, RFC 7009 revocation). */
  revokeFamilyTokens(familyId: string, tenantId: string, reason: string): Promise<void>;
  /**
   * Ends the tokens of every user and workload holding a role whose permissions were narrowed:
   * their tokens carry the old permissions (strict: a token of the same second may too).
   */
  revokeRoleTokens(tenantId: string, roleId: string, revokedBy: string | null): Promise<void>;
  /** The platform tenant's id (looked up once). */
  platformTenantId(): Promise<string>;
  close(): Promise<void>;
}

/** SMTP when configured, with the outbox as its fallback; else the outbox alone. */
function mailerOf(config: Config, db: Knex, logger: Logger): Mailer {
  const outbox = outboxMailer(db, logger);
  const smtp = smtpOptions(config);
  return smtp ? smtpMailer(smtp, config.smtpFrom, outbox, logger) : outbox;
}

/** Builds the auth services; starts scheduled signing-key rotation. */
export async function createAuthServices(
  config: Config,
  db: Knex,
  master: MasterKey,
  masterSecrets: MasterSecrets,
  logger: Logger,
  feed: ChangeFeed,
  signer: TokenSigner,
  redis?: Redis,
): Promise<AuthServices> {
  const signingKeys = await createSigningKeys(db, master, feed);
  const revocation = await RevocationList.open(db, logger, feed);
  const tokens = createAccessTokens(config.publicBaseUrl, signingKeys, revocation, signer);
  const secrets = new ClientSecrets(db, masterSecrets.get('client-secret-pepper'), feed);
  const maxTokenLifetime = Math.max(
    config.accessTokenTtl,
    config.humanTokenTtl,
    config.exchangeTokenTtl,
  );
  const rotation = setInterval(
    () => {
      signingKeys
        .rotateIfDue(config.signingKeyRotation, maxTokenLifetime)
        .then(
          (rotated) =>
            rotated &&
            logger.info(
              { kid: signingKeys.current().kid },
              'token signing key rotated on schedule',
            ),
        )
        .catch((err) => logger.warn({ err: err.message }, 'scheduled signing key rotation failed'));
    },
    Math.min(config.signingKeyRotation * 1000, 3_600_000) / 4,
  );
  rotation.unref();
  let platform: string | null = null;
  return {
    signingKeys,
    revocation,
    tokens,
    secrets,
    maxTokenLifetime,
    limits: createRateLimits(config, redis),
    hashBudget: createHashBudget(config.authHashConcurrency),
    mailer: mailerOf(config, db, logger),
    revokeSubjectTokens: (input) =>
      revocation.revokeSubject({ ...input, maxTokenLifetimeSeconds: maxTokenLifetime }),
    revokeFamilyTokens: (familyId, tenantId, reason) =>
      revocation.revoke({
        jti: `${FAMILY}${familyId}`,
        tenantId,
        sub: null,
        revokedBy: null,
        reason,
        expiresAt: new Date(Date.now() + maxTokenLifetime * 1000),
      }),
    async revokeRoleTokens(tenantId, roleId, revokedBy) {
      const users = await User.query(db)
        .where({ tenant_id: tenantId, role_id: roleId })
        .select('id');
      const workloads = await Workload.query(db)
        .where({ tenant_id: tenantId, role_id: roleId })
        .select('id', 'client_id');
      for (const w of workloads) await secrets.invalidate(w.client_id);
      for (const s of [...users, ...workloads]) {
        await revocation.revokeSubject({
          tenantId,
          sub: s.id,
          revokedBy,
          reason: 'role narrowed',
          strict: true,
          maxTokenLifetimeSeconds: maxTokenLifetime,
        });
      }
    },
    async platformTenantId() {
      platform ??= (await Tenant.query(db).findOne({ is_platform: true }))?.id ?? null;
      if (!platform) throw new Error('no platform tenant: bootstrap has not run');
      return platform;
    },
    async close() {
      clearInterval(rotation);
      await revocation.close();
    },
  };
}
