/** The identity records of a tenant: roles, workloads with their secrets, users, their resets and the mail outbox. */
import { Model } from 'objection';

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

/** A single-use password reset, stored as the hash of its token. */
export class PasswordReset extends Model {
  static override tableName = 'password_resets';
  declare id: string;
  declare user_id: string;
  declare token_hash: string;
  declare expires_at: Date;
  declare used_at: Date | null;
}

/** A mail the default mailer wrote instead of sending (the outbox a relay or an operator reads). */
export class OutboxMail extends Model {
  static override tableName = 'outbox';
  declare id: string;
  declare recipient: string;
  declare subject: string;
  declare body: string;
  declare created_at: Date;
}
