/**
 * The audit records. The chain append (shared/audit/log.ts) stays raw knex: it locks the head
 * row and inserts events in chunks inside one transaction, which is what the chain needs and
 * what a model adds nothing to; reads go through these models.
 */
import { Model } from 'objection';

/** One link of a tenant's audit hash chain. */
export class AuditEvent extends Model {
  static override tableName = 'audit_events';
  static override jsonAttributes = ['details'];
  declare id: string;
  declare tenant_id: string;
  /** bigint: the driver hands it back as a string. */
  declare seq: string;
  declare at: Date;
  declare actor: string;
  declare action: string;
  /** What AuditInput allows: the only values the chain append writes. */
  declare outcome: 'success' | 'failure' | 'denied';
  declare target: string | null;
  declare details: Record<string, unknown>;
  declare prev_hash: string;
  declare hash: string;
}

/** The head of a tenant's chain: last position and hash, for verifiers to anchor. */
export class AuditHead extends Model {
  static override tableName = 'audit_heads';
  static override idColumn = 'tenant_id';
  declare tenant_id: string;
  declare seq: string;
  declare hash: string;
  declare at: Date | null;
  declare last_event: string | null;
}
