import { UnfitInput, canonicalId, canonicalInput, canonicalPath } from '../../shared/ids.ts';

const UPPER = '0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D';
const LOWER = UPPER.toLowerCase();

describe('shared/ids canonical input', () => {
  it('when a UUID is upper case anywhere in the input, then it is lower-cased; other text is left as it is', () => {
    expect(canonicalId(UPPER)).toBe(LOWER);
    expect(canonicalId('Key-One')).toBe('Key-One');
    expect(canonicalInput({ tenantId: UPPER, nested: { ids: [UPPER, 'X'] } }, 'body')).toEqual({
      tenantId: LOWER,
      nested: { ids: [LOWER, 'X'] },
    });
    expect(canonicalPath(`/api/v3/admin/tenants/${UPPER}/keys/Key-One`)).toBe(
      `/api/v3/admin/tenants/${LOWER}/keys/Key-One`,
    );
  });

  it('when a password or secret looks like an upper-case UUID, then it is kept as typed', () => {
    expect(canonicalInput({ password: UPPER, client_secret: UPPER, data: UPPER }, 'body')).toEqual({
      password: UPPER,
      client_secret: UPPER,
      data: UPPER,
    });
  });

  it('when a value or member name holds NUL or a lone surrogate, then UnfitInput names the field', () => {
    expect(() => canonicalInput({ a: [{ name: 'x\u0000' }] }, 'body')).toThrow(
      new UnfitInput('body.a[0].name', 'contains a NUL character (U+0000)'),
    );
    expect(() => canonicalInput({ 'k\ud800': 1 }, 'body')).toThrow(UnfitInput);
    expect(() => canonicalPath('/api/v3/admin/tenants/a%00b')).toThrow(UnfitInput);
  });

  it('when a JSON body has an own "__proto__" member holding a UUID, then it stays a member and the prototype is untouched', () => {
    const body = canonicalInput(
      JSON.parse(`{"__proto__": "${UPPER}"}`) as Record<string, unknown>,
      'body',
    );
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(body, '__proto__')?.value).toBe(LOWER);
  });

  it('when the input nests deeper than any endpoint needs, then it is refused without overflowing the stack', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(() => canonicalInput(deep, 'body')).toThrow(/nests deeper/);
  });
});
