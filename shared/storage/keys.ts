/**
 * Object key rules, shared by every store so both backends accept exactly the same keys.
 * A key is '/'-separated segments: no empty, '.' or '..' segment, no leading slash, no backslash,
 * no control character (NUL included), well-formed Unicode, at most 1024 UTF-8 bytes.
 */
import { problem } from '../errors/index.ts';

export const MAX_KEY_BYTES = 1024;
/** Tenant ids become one key segment: letters, digits, '.', '_' and '-', not starting with '.'. */
const TENANT_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function invalid(field: string, reason: string): never {
  throw problem('validation_failed', `invalid object ${field}: ${reason}`, {
    details: { field, reason },
  });
}

/** Checks what keys and prefixes share; `partialLast` lets the last segment be empty (a prefix). */
function checkPath(value: unknown, field: 'key' | 'prefix', partialLast: boolean): string {
  if (typeof value !== 'string') invalid(field, 'must be a string');
  if (!partialLast && value.length === 0) invalid(field, 'must not be empty');
  if (Buffer.byteLength(value, 'utf8') > MAX_KEY_BYTES)
    invalid(field, `longer than ${MAX_KEY_BYTES} bytes`);
  if (!value.isWellFormed()) invalid(field, 'not well-formed Unicode');
  if (CONTROL.test(value)) invalid(field, 'contains a control character');
  if (value.includes('\\')) invalid(field, 'contains a backslash');
  if (value.startsWith('/')) invalid(field, 'is an absolute path');
  if (value.length === 0) return value;
  const segments = value.split('/');
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '' && !(partialLast && last)) invalid(field, 'has an empty segment');
    if (segment === '.' || segment === '..') invalid(field, "has a '.' or '..' segment");
  });
  return value;
}

/** Returns the key when it is a valid object key; throws a validation_failed problem otherwise. */
export function assertObjectKey(key: unknown): string {
  return checkPath(key, 'key', false);
}

/** Returns the prefix when it is a valid listing prefix ('' and a trailing '/' are allowed). */
export function assertPrefix(prefix: unknown): string {
  return checkPath(prefix, 'prefix', true);
}

/**
 * The first key segment Keyward keeps for the objects it writes itself into a tenant's store (a
 * completed migration's signed manifest, shared/migrations/manifest.ts): a tenant's upload,
 * delete or output must not replace or remove them.
 */
export const RESERVED_SEGMENT = '.keyward';

/** Returns the key or prefix when a tenant may write there, not below `.keyward/`; throws otherwise. */
export function assertTenantWritable(value: string, field: 'key' | 'prefix'): string {
  if (value.split('/')[0] === RESERVED_SEGMENT)
    invalid(field, `'${RESERVED_SEGMENT}/' is kept for the objects Keyward writes`);
  return value;
}

/** Returns the tenant id when it is safe as a single key segment. */
export function assertTenantId(tenantId: unknown): string {
  if (typeof tenantId !== 'string' || !TENANT_ID.test(tenantId)) {
    throw problem('validation_failed', 'invalid tenant id for object storage', {
      details: { field: 'tenantId', reason: 'not a safe key segment' },
    });
  }
  return tenantId;
}
