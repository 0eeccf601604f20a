import { AppError } from '../../../shared/errors/index.ts';
import {
  MAX_KEY_BYTES,
  assertObjectKey,
  assertPrefix,
  assertTenantId,
  tenantPrefix,
} from '../../../shared/storage/index.ts';

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('object keys', () => {
  it.each([
    'a',
    'jobs/42/input.p7m',
    '.hidden',
    'a/.b/c..d',
    'spaces are fine',
    'ünïcødé/ключ',
    'k'.repeat(MAX_KEY_BYTES),
  ])('when the key is %j, then it is accepted as is', (key) => {
    expect(assertObjectKey(key)).toBe(key);
  });

  it.each([
    ['is empty', ''],
    ['is a parent segment', '..'],
    ['climbs out midway', 'a/../b'],
    ['is a current-directory segment', 'a/./b'],
    ['is absolute', '/a'],
    ['has a backslash', 'a\\b'],
    ['has an empty segment', 'a//b'],
    ['ends with a slash', 'a/'],
    ['has a NUL byte', 'a\u0000'],
    ['has another control character', 'a\nb'],
    ['has a lone surrogate', 'a\ud800'],
    ['is over 1024 bytes once encoded', 'é'.repeat(513)],
  ])('when the key %s, then it is refused as a validation problem', (_why, key) => {
    const err = refusal(() => assertObjectKey(key));
    expect({ code: err.code, status: err.status }).toEqual({
      code: 'validation_failed',
      status: 400,
    });
  });

  it('when the key is not a string, then it is refused', () => {
    expect(refusal(() => assertObjectKey(42)).code).toBe('validation_failed');
  });

  it('when a problem reports a refused key, then it does not echo the key back', () => {
    expect(JSON.stringify(refusal(() => assertObjectKey('../secret')).toJSON())).not.toContain(
      'secret',
    );
  });
});

describe('listing prefixes', () => {
  it.each(['', 'jobs/', 'jobs/4', 'a/b/'])(
    'when the prefix is %j, then it is accepted',
    (prefix) => {
      expect(assertPrefix(prefix)).toBe(prefix);
    },
  );

  it.each(['../', '/', 'a//', 'a/../', '..', 'a\\'])(
    'when the prefix is %j, then it is refused',
    (prefix) => {
      expect(refusal(() => assertPrefix(prefix)).code).toBe('validation_failed');
    },
  );
});

describe('tenant ids', () => {
  it('when the id is a safe segment, then the tenant prefix is tenants/<id>/', () => {
    expect(tenantPrefix('acme-01')).toBe('tenants/acme-01/');
    expect(assertTenantId('t_1.prod')).toBe('t_1.prod');
  });

  it.each(['', '.', '..', '.hidden', 'a/b', 'a\\b', 'a b', 'x'.repeat(129)])(
    'when the id is %j, then it is refused',
    (id) => {
      expect(refusal(() => assertTenantId(id)).code).toBe('validation_failed');
    },
  );
});
