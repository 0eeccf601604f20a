/**
 * JSON with object keys sorted at every depth and undefined members left out: one byte string per
 * value, whatever the key order. The audit chain hashes it (shared/audit/chain.ts) and job ids are
 * derived from it (shared/queues), so both read equal content as equal.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  // As JSON.stringify writes undefined inside an array.
  return JSON.stringify(value ?? null);
}
