/**
 * Says what an input is when it is not what the reader expected, so keystore-malformed can name
 * what was found (a DER certificate, a truncated file, base64 text, random bytes).
 */
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';
import { EncryptedPrivateKeyInfo, PrivateKeyInfo } from '@peculiar/asn1-pkcs8';
import { ContentInfo } from '@peculiar/asn1-cms';
import { ASN1_LIMITS } from '../asn1/der.ts';

/** The keystore formats parseKeystore reads. */
export type KeystoreFormat = 'pkcs12' | 'pem';

/** The format by content: DER SEQUENCE is PKCS#12, a PEM boundary is PEM, else undefined. */
export function detectFormat(data: Buffer): KeystoreFormat | undefined {
  if (data[0] === 0x30) return 'pkcs12';
  // RFC 7468 section 2: text may precede the boundary (OpenSSL writes "Bag Attributes" there).
  if (data.includes('-----BEGIN ')) return 'pem';
  return undefined;
}

/** Names an input that is neither PKCS#12 nor PEM. */
export function describeUnknown(data: Buffer): string {
  const head = data.subarray(0, 8).toString('hex').replace(/(..)/g, '$1 ').trim();
  const text = data.subarray(0, 4096).toString('latin1').trim();
  if (/^[A-Za-z0-9+/=\r\n]+$/.test(text) && text.length >= 16) {
    return 'input is base64 text without PEM boundaries; send the binary PKCS#12 file or a PEM bundle';
  }
  return `input is neither PKCS#12 DER nor PEM (first bytes 0x${head.replaceAll(' ', ' 0x')})`;
}

/** Names a DER input that did not parse as a PFX: truncated, or another DER type. */
export function describeDer(data: Buffer): string {
  const declared = declaredLength(data);
  if (declared === undefined)
    return `input is truncated: it ends inside the first DER header (${data.length} bytes)`;
  if (declared > data.length) {
    return `input is truncated: the outer DER SEQUENCE declares ${declared} bytes but only ${data.length} are present`;
  }
  if (parses(data, Certificate))
    return 'input is a DER X.509 certificate, not a PKCS#12 file: it holds no private key';
  if (parses(data, PrivateKeyInfo))
    return 'input is a DER PKCS#8 private key, not a PKCS#12 file; send it as PEM';
  if (parses(data, EncryptedPrivateKeyInfo))
    return 'input is a DER encrypted PKCS#8 key, not a PKCS#12 file; send it as PEM';
  if (parses(data, ContentInfo)) return 'input is a CMS/PKCS#7 structure, not a PKCS#12 PFX';
  return 'input starts like DER but is not a PKCS#12 PFX (RFC 7292 section 4)';
}

function parses(data: Buffer, type: new () => unknown): boolean {
  try {
    AsnConvert.parse(data, type, ASN1_LIMITS);
    return true;
  } catch {
    return false;
  }
}

/**
 * Total length of the first DER element from its header (X.690 section 8.1.3), or undefined
 * when the header itself is cut short. Indefinite length (BER) counts as the whole input.
 */
export function declaredLength(data: Buffer): number | undefined {
  if (data.length < 2) return undefined;
  const first = data[1];
  if (first < 0x80) return 2 + first;
  const n = first & 0x7f;
  if (n === 0) return data.length;
  if (n > 4 || data.length < 2 + n) return undefined;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + data[2 + i];
  return 2 + n + len;
}
