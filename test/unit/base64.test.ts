/**
 * shared/base64.ts against the definition it replaces: RFC 4648 base64 by regular expression,
 * over random strings drawn from the alphabets, padding, and characters outside them.
 */
import { decodeBase64 } from '../../shared/base64.ts';

const STANDARD = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const ANY = /^[A-Za-z0-9+/_-]*$/;

/** The reference: `standard` padded to 4 in the section 4 alphabet; `any` either alphabet, padded or not. */
function reference(s: string, form: 'standard' | 'any'): Buffer | undefined {
  if (form === 'standard') return STANDARD.test(s) ? Buffer.from(s, 'base64') : undefined;
  const data = s.replace(/={1,2}$/, '');
  if (!ANY.test(data) || data.length % 4 === 1) return undefined;
  if (s.length > data.length && (data.length + (s.length - data.length)) % 4 !== 0)
    return undefined;
  return Buffer.from(data, 'base64');
}

describe('decodeBase64', () => {
  it('accepts exactly what RFC 4648 base64 is, and decodes it as Buffer does', () => {
    const alphabet = 'AQg+/-_=$ \n.\u00e9';
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 50_000; i++) {
      let s = '';
      for (let n = Math.floor(next() * 10); n > 0; n--)
        s += alphabet[Math.floor(next() * alphabet.length)];
      for (const form of ['standard', 'any'] as const) {
        const want = reference(s, form);
        const got = decodeBase64(s, form);
        expect([s, form, got?.toString('hex')]).toEqual([s, form, want?.toString('hex')]);
      }
    }
  });

  it('reads 1 KiB of either alphabet and refuses one stray character in it', () => {
    const bytes = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 37) % 256));
    expect(decodeBase64(bytes.toString('base64'), 'standard')).toEqual(bytes);
    expect(decodeBase64(bytes.toString('base64url'), 'any')).toEqual(bytes);
    expect(decodeBase64(bytes.toString('base64url'), 'standard')).toBeUndefined();
    const s = bytes.toString('base64');
    for (const stray of ['$', ' ', '\n', '=', '.'])
      expect(decodeBase64(`${s.slice(0, 100)}${stray}${s.slice(101)}`, 'standard')).toBeUndefined();
  });
});
