/** Cryptographic exchanges: an offer of one key version from one tenant to another. */
import { Model } from 'objection';

/** One offer; `payload` is cleared as soon as it is decided or expires. */
export class Exchange extends Model {
  static override tableName = 'cryptographic_exchanges';
  static override jsonAttributes = ['certificate_chain'];
  declare id: string;
  declare from_tenant_id: string;
  declare to_tenant_id: string;
  declare source_kid: string;
  declare source_version: number;
  declare key_type: string;
  declare usage: string;
  declare mode: 'public' | 'wrapped';
  declare wrapping_kid: string | null;
  declare wrapping_version: number | null;
  declare payload: string | null;
  declare public_key_sha256: string | null;
  /** Base64 DER certificates copied from the offered version. */
  declare certificate_chain: string[] | null;
  declare issuer_serial: string | null;
  declare subject_key_id: string | null;
  declare state: 'pending' | 'accepted' | 'rejected' | 'cancelled' | 'expired';
  declare accepted_kid: string | null;
  declare created_by: string;
  declare decided_by: string | null;
  declare created_at: Date;
  declare expires_at: Date;
  declare decided_at: Date | null;
}
