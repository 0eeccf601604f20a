/**
 * The one strict base64 reader of request members (the Core API's and the AWS KMS API's).
 * Buffer.from(s, 'base64') never fails: it skips or stops at any character outside the alphabet,
 * so a member is accepted only when every character decoded, which the decoded length tells
 * (each data character carries 6 bits; one or two '=' end it). That check costs a multiplication
 * where the regular expression it replaces scanned the string a second time.
 */

/**
 * The bytes of `s`, or undefined when it is not base64. `standard`: the RFC 4648 section 4
 * alphabet with padding to a multiple of 4, as AWS requires; `any`: section 4 or 5 (base64url),
 * padded or not.
 */
export function decodeBase64(s: string, form: 'standard' | 'any'): Buffer | undefined {
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  const data = s.length - pad;
  // Padding completes the last group of 4; without it, a lone character in a group is no byte.
  if (pad > 0 ? (data + pad) % 4 !== 0 : data % 4 === 1) return undefined;
  if (form === 'standard' && (s.length % 4 !== 0 || s.includes('-') || s.includes('_')))
    return undefined;
  const bytes = Buffer.from(s, 'base64');
  return bytes.length === Math.floor((data * 3) / 4) ? bytes : undefined;
}
