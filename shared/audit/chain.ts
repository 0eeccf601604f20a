/**
 * The audit hash chain: each event's hash covers the previous event's hash and the event's
 * canonical content, so editing, removing or reordering a row breaks every later link.
 */
import { createHash } from 'node:crypto';

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

/** JSON with sorted keys at every depth: one byte string per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** hash = SHA-256(prevHash || canonical content), hex. */
export function chainHash(prevHash: string, content: AuditContent): string {
  return createHash('sha256').update(prevHash).update(canonicalJson(content)).digest('hex');
}
