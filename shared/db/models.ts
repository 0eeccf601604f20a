/**
 * objection models, one per table. Columns are snake_case in SQL and in the models; services
 * map them to the camelCase JSON of the REST API.
 */
import { Model } from 'objection';

/** A tenant: every identity, key and event belongs to exactly one. */
export class Tenant extends Model {
  static override tableName = 'tenants';
  static override jsonAttributes = ['policy_overrides'];
  declare id: string;
  declare name: string;
  declare status: 'active' | 'suspended';
  declare is_platform: boolean;
  declare policy_overrides: Record<string, unknown>;
  declare created_at: Date;
}

/** A named permission list inside a tenant. */
export class Role extends Model {
  static override tableName = 'roles';
  static override jsonAttributes = ['permissions'];
  declare id: string;
  declare tenant_id: string;
  declare name: string;
  declare permissions: string[];
  declare created_at: Date;
}

/** An application identity (client_credentials). */
export class Workload extends Model {
  static override tableName = 'workloads';
  declare id: string;
  declare tenant_id: string;
  declare name: string;
  declare client_id: string;
  declare role_id: string;
  declare disabled: boolean;
  declare created_at: Date;
}

/** A keyed hash of a workload secret with its validity window. */
export class WorkloadSecret extends Model {
  static override tableName = 'workload_secrets';
  declare id: string;
  declare workload_id: string;
  declare secret_hash: string;
  declare valid_from: Date;
  declare valid_until: Date | null;
}

/** A human user (password grant). */
export class User extends Model {
  static override tableName = 'users';
  declare id: string;
  declare tenant_id: string;
  declare email: string;
  declare password_hash: string;
  declare role_id: string;
  declare disabled: boolean;
  declare failed_attempts: number;
  declare lockout_count: number;
  declare locked_until: Date | null;
  declare created_at: Date;
  declare updated_at: Date;
}

/** A managed key; its material lives in KeyVersion rows. */
export class Key extends Model {
  static override tableName = 'keys';
  declare id: string;
  declare tenant_id: string;
  declare kid: string;
  declare type: string;
  declare usage: string;
  declare state: 'active' | 'suspended' | 'revoked' | 'archived';
  declare current_version: number;
  declare source: string;
  declare created_at: Date;
  declare updated_at: Date;
}

/** One material version of a key, encrypted under the master key. */
export class KeyVersion extends Model {
  static override tableName = 'key_versions';
  static override jsonAttributes = ['public_jwk', 'certificate_chain'];
  declare id: string;
  declare key_id: string;
  declare version: number;
  declare material: Buffer;
  declare public_jwk: Record<string, unknown> | null;
  declare certificate_chain: string[] | null;
  declare issuer_serial: string | null;
  declare subject_key_id: string | null;
  declare created_at: Date;
}

/** A token signing key (JWKS). */
export class SigningKey extends Model {
  static override tableName = 'signing_keys';
  static override idColumn = 'kid';
  static override jsonAttributes = ['public_jwk'];
  declare kid: string;
  declare alg: string;
  declare private_material: Buffer;
  declare public_jwk: Record<string, unknown>;
  declare created_at: Date;
  declare retired_at: Date | null;
  declare publish_until: Date | null;
}

/** A refresh token (stored as a hash) in its rotation family. */
export class RefreshToken extends Model {
  static override tableName = 'refresh_tokens';
  static override idColumn = 'token_hash';
  declare token_hash: string;
  declare family_id: string;
  declare tenant_id: string;
  declare subject_kind: 'user' | 'workload';
  declare subject_id: string;
  declare audience: string;
  declare remember_me: boolean;
  declare expires_at: Date;
  declare used_at: Date | null;
  declare revoked_at: Date | null;
}

/** A revoked access token, kept until it would have expired. */
export class RevokedToken extends Model {
  static override tableName = 'revoked_tokens';
  static override idColumn = 'jti';
  declare jti: string;
  declare tenant_id: string | null;
  declare sub: string | null;
  declare expires_at: Date;
  declare revoked_at: Date;
  declare revoked_by: string | null;
  declare reason: string;
}

/** One link of a tenant's audit hash chain. */
export class AuditEvent extends Model {
  static override tableName = 'audit_events';
  static override jsonAttributes = ['details'];
  declare id: string;
  declare tenant_id: string;
  declare seq: string;
  declare at: Date;
  declare actor: string;
  declare action: string;
  declare outcome: string;
  declare target: string | null;
  declare details: Record<string, unknown>;
  declare prev_hash: string;
  declare hash: string;
}
