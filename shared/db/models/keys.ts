/** Managed keys, their material versions, and the progress of bulk key operations. */
import { Model } from 'objection';

/** A managed key; its material lives in KeyVersion rows. */
export class Key extends Model {
  static override tableName = 'keys';
  declare id: string;
  declare tenant_id: string;
  declare kid: string;
  declare type: string;
  declare usage: string;
  /** The enabled usages and those the certificate (or type) allows (shared/keys/usages.ts). */
  declare usages: string[] | null;
  declare allowed_usages: string[] | null;
  declare state: 'active' | 'suspended' | 'revoked' | 'archived';
  declare current_version: number;
  declare source: string;
  declare description: string | null;
  declare rotation_period_days: number | null;
  declare min_decryption_version: number;
  declare next_rotation_at: Date | null;
  declare last_rotated_at: Date | null;
  /** A pending deletion (the key is suspended): when it is destroyed, since when and by whom (docs/aws-kms.md). */
  declare deletion_at: Date | null;
  declare deletion_requested_at: Date | null;
  declare deletion_requested_by: string | null;
  /** Vault Transit's flags (docs/vault-transit.md): every request names a context; DELETE may destroy the key. */
  declare transit_derived: boolean;
  declare transit_deletion_allowed: boolean;
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
  /** Base64 DER certificates, leaf first. */
  declare certificate_chain: string[] | null;
  declare issuer_serial: string | null;
  declare subject_key_id: string | null;
  declare created_at: Date;
}

/** A bulk key operation running off the request path, readable from any instance. */
export class KeyOperation extends Model {
  static override tableName = 'key_operations';
  static override jsonAttributes = ['results'];
  declare id: string;
  declare tenant_id: string;
  declare operation: string;
  declare total: number;
  declare done: number;
  declare failed: number;
  declare state: string;
  declare results: unknown[];
  declare started_by: string;
  declare started_at: Date;
  declare updated_at: Date;
  declare finished_at: Date | null;
}
