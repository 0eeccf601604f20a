/**
 * The tenant record. Models are bound to a database per call (`Tenant.query(db)`), never through
 * a global `Model.knex()`: tests and tools open several databases in one process.
 */
import { Model } from 'objection';
import type { PolicyOverrides } from '../../policy.ts';

/** A tenant: every identity, key and event belongs to exactly one. */
export class Tenant extends Model {
  static override tableName = 'tenants';
  static override jsonAttributes = ['policy_overrides'];
  declare id: string;
  declare name: string;
  declare status: 'active' | 'suspended';
  declare is_platform: boolean;
  declare policy_overrides: PolicyOverrides;
  declare created_at: Date;
}
