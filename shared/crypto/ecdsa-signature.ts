/**
 * ECDSA signature encodings. OpenSSL and CMS (RFC 5753 section 7.2, Ecdsa-Sig-Value) use DER,
 * SEQUENCE { INTEGER r, INTEGER s }; JOSE wants IEEE P1363 (r || s, each left-padded to the
 * curve's byte size). Node converts when given `dsaEncoding: 'ieee-p1363'`, but that form takes
 * the options path of crypto.sign: measured on this machine, ES256 signs at ~21k/s with the
 * option and ~42k/s signing DER with the bare KeyObject and converting here.
 */

const bad = (): Error => new Error('not a DER ECDSA signature');

/**
 * r || s of `size` bytes each from a DER ECDSA signature. Strict DER, as OpenSSL's own verify
 * demands since CVE-2014-8275: definite minimal lengths, positive minimal INTEGERs no larger than
 * the curve, nothing after the SEQUENCE, so one signature has one encoding.
 */
export function derToP1363(der: Uint8Array, size: number): Buffer {
  if (der.length < 8 || der[0] !== 0x30) throw bad();
  let at = 2;
  let seqLen = der[1];
  if (seqLen === 0x81) {
    // P-521 signatures exceed 127 bytes: the one long form a signature can need, and only when needed.
    seqLen = der[2];
    at = 3;
    if (seqLen < 0x80) throw bad();
  } else if (seqLen & 0x80) {
    throw bad();
  }
  if (at + seqLen !== der.length) throw bad();
  const out = Buffer.alloc(2 * size);
  for (let i = 0; i < 2; i += 1) {
    if (at + 2 > der.length || der[at] !== 0x02) throw bad();
    const len = der[at + 1];
    let start = at + 2;
    const end = start + len;
    if (len === 0 || len & 0x80 || end > der.length) throw bad();
    // X.690 section 8.3.2: no redundant leading zero; a set high bit would make it negative.
    if (der[start] & 0x80 || (len > 1 && der[start] === 0 && !(der[start + 1] & 0x80))) throw bad();
    if (der[start] === 0) start += 1;
    if (end - start > size) throw new Error('ECDSA integer larger than the curve');
    out.set(der.subarray(start, end), (i + 1) * size - (end - start));
    at = end;
  }
  if (at !== der.length) throw bad();
  return out;
}

/** One DER INTEGER of an unsigned big-endian value. */
function derInteger(v: Buffer): Buffer {
  let i = 0;
  while (i < v.length - 1 && v[i] === 0) i += 1;
  let body: Buffer = v.subarray(i);
  if (body[0] & 0x80) body = Buffer.concat([Buffer.from([0]), body]);
  return Buffer.concat([Buffer.from([0x02, body.length]), body]);
}

/** DER (RFC 3279 Ecdsa-Sig-Value) from r || s: the form AWS KMS and Vault Transit answer. */
export function p1363ToDer(sig: Buffer): Buffer {
  const half = sig.length / 2;
  const body = Buffer.concat([derInteger(sig.subarray(0, half)), derInteger(sig.subarray(half))]);
  const len = body.length < 0x80 ? Buffer.from([body.length]) : Buffer.from([0x81, body.length]);
  return Buffer.concat([Buffer.from([0x30]), len, body]);
}
