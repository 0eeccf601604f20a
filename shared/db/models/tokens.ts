/** Token records: signing keys (JWKS), refresh tokens and revoked access tokens. */
import { Model } from 'objection';

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
