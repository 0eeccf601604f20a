/** How JOSE headers and JWKs name a key version. */

/** The name a key version goes by in JOSE headers and JWKs: `<kid>#<version>` (kids never hold `#`). */
export const versionedKid = (kid: string, version: number): string => `${kid}#${version}`;

/**
 * The kid and version a JOSE header or JWK names: `<kid>#<version>` as the service writes it, or a
 * bare kid (no version: older outputs, a target kid). Kids never hold `#` (shared/ids.ts KID), so the
 * last one splits; a suffix that is not a version leaves the name whole.
 */
export function splitVersionedKid(name: string): { kid: string; version?: number } {
  const at = name.lastIndexOf('#');
  const suffix = name.slice(at + 1);
  if (at <= 0 || !/^[1-9][0-9]{0,8}$/.test(suffix)) return { kid: name };
  return { kid: name.slice(0, at), version: Number(suffix) };
}
