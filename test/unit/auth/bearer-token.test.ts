import { bearerToken } from '../../../api/services/auth/access-tokens.ts';

describe('bearerToken: the one reader of an Authorization: Bearer header', () => {
  it('when the scheme is Bearer in any case, then the token after it, trimmed', () => {
    expect(bearerToken('Bearer abc.def.ghi')).toBe('abc.def.ghi');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('BEARER  abc ')).toBe('abc');
  });

  it('when the header is absent, of another scheme, or names no token, then null', () => {
    for (const header of [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      'Bearer    ',
      'Basic abc',
      'Bearerabc',
    ])
      expect([header, bearerToken(header)]).toEqual([header, null]);
  });
});
