/**
 * A CBC EnvelopedData (DER, its content at the end of the file, two blocks or more) whose content
 * fails to decrypt every time: the last byte of the next-to-last ciphertext block XORed with
 * 0x20, which XORs the last plaintext byte, the padding length (1 to 16), to 33 to 48: never
 * valid padding. Flipping a bit of the last byte instead garbles the whole last block at random,
 * and about 1 time in 256 its padding still fits, so the "damaged" file converts (a CI run failed
 * so).
 */
export function withBadPadding(der: Buffer): Buffer {
  const damaged = Buffer.from(der);
  damaged[damaged.length - 17] ^= 0x20;
  return damaged;
}
