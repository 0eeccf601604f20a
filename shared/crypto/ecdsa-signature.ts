/**
 * ECDSA signature encodings. OpenSSL signs in DER (SEQUENCE { INTEGER r, INTEGER s }); JOSE wants
 * IEEE P1363 (r || s, each left-padded to the curve's byte size). Node converts when given
 * `dsaEncoding: 'ieee-p1363'`, but that form takes the options path of crypto.sign: measured on
 * this machine, ES256 signs at ~21k/s with the option and ~42k/s signing DER with the bare
 * KeyObject and converting here.
 */

/** r || s of `size` bytes each from a DER ECDSA signature that OpenSSL produced. */
export function derToP1363(der: Uint8Array, size: number): Buffer {
  let at = 2;
  if (der[0] !== 0x30) throw new Error('not a DER ECDSA signature');
  if (der[1] & 0x80) at = 2 + (der[1] & 0x7f); // P-521 signatures exceed 127 bytes: long-form length
  const out = Buffer.alloc(2 * size);
  for (let i = 0; i < 2; i += 1) {
    if (der[at] !== 0x02 || der[at + 1] & 0x80) throw new Error('not a DER ECDSA signature');
    const len = der[at + 1];
    let start = at + 2;
    const end = start + len;
    while (end - start > size && der[start] === 0) start += 1; // the sign byte of a high r or s
    if (end - start > size || end > der.length) throw new Error('ECDSA integer larger than the curve');
    out.set(der.subarray(start, end), (i + 1) * size - (end - start));
    at = end;
  }
  return out;
}
