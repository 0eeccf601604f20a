/**
 * The audit hash chain: each event's hash covers the previous event's hash and the event's
 * canonical content, so editing, removing or reordering a row breaks every later link.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json.ts';

export const GENESIS_HASH = '0'.repeat(64);

/** What an event says; `at` is an ISO timestamp. */
export interface AuditContent {
  tenantId: string;
  seq: number;
  at: string;
  actor: string;
  action: string;
  outcome: string;
  target: string | null;
  details: Record<string, unknown>;
}

/** hash = SHA-256(prevHash || canonical content), hex. */
export function chainHash(prevHash: string, content: AuditContent): string {
  return createHash('sha256').update(prevHash).update(canonicalJson(content)).digest('hex');
}
