/**
 * RC2 (RFC 2268), which `openssl pkcs12 -export -legacy` still uses for the certificate bags
 * (pbeWithSHAAnd40BitRC2-CBC) and which Node's OpenSSL default provider no longer offers.
 * Only what reading legacy PKCS#12 needs: key expansion, the block functions, and CBC decryption.
 */

/** RFC 2268 section 2: PITABLE, a permutation of 0..255 from the digits of pi. */
const PITABLE = Uint8Array.from(
  Buffer.from(
    'd978f9c419ddb5ed28e9fd794aa0d89dc67e37832b76538e624c6488448bfba2179a59f587b34f1361456d8d09817d32' +
      'bd8f40eb86b77b0bf09521225c6b4e8254d66593ce60b21c7356c014a78cf1dc1275ca1f3bbee4d1423dd430a33cb626' +
      '6fbf0eda4669075727f21d9bbc944303f811c7f690ef3ee706c3d52fc8661ed708e8eade8052eef784aa72ac354d6a2a' +
      '961ad2715a1549744b9fd05e0418a4ecc2e0416e0f51cbcc2491af50a1f47039997c3a8523b8b47afc02365b25559731' +
      '2d5dfa98e38a92ae05df2910676cbac9d300e6cfe19ea82c6316013f58e289a90d38341bab33ffb0bb480c5fb9b1cd2e' +
      'c5f3db47e5a59c770aa62068fe7fc1ad',
    'hex',
  ),
);

/**
 * RFC 2268 section 2: expands `key` to the 64 16-bit words K[0..63], limited to `effectiveBits`.
 */
export function rc2ExpandKey(key: Uint8Array, effectiveBits: number): Uint16Array {
  const T = key.length;
  if (T < 1 || T > 128 || effectiveBits < 1 || effectiveBits > 1024)
    throw new RangeError('RC2 key or effective bits out of range');
  const L = new Uint8Array(128);
  L.set(key);
  for (let i = T; i < 128; i++) L[i] = PITABLE[(L[i - 1] + L[i - T]) & 0xff];
  const T8 = Math.ceil(effectiveBits / 8);
  const TM = 0xff >> (8 * T8 - effectiveBits);
  L[128 - T8] = PITABLE[L[128 - T8] & TM];
  for (let i = 127 - T8; i >= 0; i--) L[i] = PITABLE[L[i + 1] ^ L[i + T8]];
  const K = new Uint16Array(64);
  for (let i = 0; i < 64; i++) K[i] = L[2 * i] | (L[2 * i + 1] << 8);
  return K;
}

const S = [1, 2, 3, 5];

/** RFC 2268 section 3: 5 mixing rounds, a mash, 6 mixing rounds, a mash, 5 mixing rounds. */
export function rc2EncryptBlock(K: Uint16Array, block: Uint8Array): Uint8Array {
  const R = toWords(block);
  let j = 0;
  for (let round = 0; round < 16; round++) {
    for (let i = 0; i < 4; i++) {
      const sum =
        R[i] + K[j++] + (R[(i + 3) & 3] & R[(i + 2) & 3]) + (~R[(i + 3) & 3] & R[(i + 1) & 3]);
      R[i] = rotl16(sum & 0xffff, S[i]);
    }
    if (round === 4 || round === 10)
      for (let i = 0; i < 4; i++) R[i] = (R[i] + K[R[(i + 3) & 3] & 63]) & 0xffff;
  }
  return fromWords(R);
}

/** RFC 2268 section 4: the same rounds reversed. */
export function rc2DecryptBlock(K: Uint16Array, block: Uint8Array): Uint8Array {
  const R = toWords(block);
  let j = 63;
  for (let round = 15; round >= 0; round--) {
    for (let i = 3; i >= 0; i--) {
      const x = rotl16(R[i], 16 - S[i]);
      R[i] =
        (x - K[j--] - (R[(i + 3) & 3] & R[(i + 2) & 3]) - (~R[(i + 3) & 3] & R[(i + 1) & 3])) &
        0xffff;
    }
    if (round === 11 || round === 5)
      for (let i = 3; i >= 0; i--) R[i] = (R[i] - K[R[(i + 3) & 3] & 63]) & 0xffff;
  }
  return fromWords(R);
}

/**
 * RC2-CBC decryption with PKCS#7 padding removal (RFC 8018 section 6.1.1 step 4 pads this way).
 * Returns undefined when the length or padding is wrong, which for a password-based cipher
 * almost always means a wrong password.
 */
export function rc2CbcDecrypt(
  key: Uint8Array,
  effectiveBits: number,
  iv: Uint8Array,
  data: Uint8Array,
): Buffer | undefined {
  if (iv.length !== 8 || data.length === 0 || data.length % 8 !== 0) return undefined;
  const K = rc2ExpandKey(key, effectiveBits);
  const out = Buffer.alloc(data.length);
  let prev = iv;
  for (let o = 0; o < data.length; o += 8) {
    const c = data.subarray(o, o + 8);
    const p = rc2DecryptBlock(K, c);
    for (let i = 0; i < 8; i++) out[o + i] = p[i] ^ prev[i];
    prev = c;
  }
  const pad = out[out.length - 1];
  if (pad < 1 || pad > 8) return undefined;
  for (let i = out.length - pad; i < out.length; i++) if (out[i] !== pad) return undefined;
  return out.subarray(0, out.length - pad);
}

function rotl16(x: number, s: number): number {
  return ((x << s) | (x >>> (16 - s))) & 0xffff;
}

/** The block is four little-endian 16-bit words R[0..3] (RFC 2268 section 3). */
function toWords(b: Uint8Array): number[] {
  return [b[0] | (b[1] << 8), b[2] | (b[3] << 8), b[4] | (b[5] << 8), b[6] | (b[7] << 8)];
}

function fromWords(R: number[]): Uint8Array {
  const out = new Uint8Array(8);
  for (let i = 0; i < 4; i++) {
    out[2 * i] = R[i] & 0xff;
    out[2 * i + 1] = R[i] >>> 8;
  }
  return out;
}
