/**
 * Raw key bytes as the KeyObject Node's cipher and HMAC constructors take fastest. Given a Buffer,
 * `createCipheriv`, `createDecipheriv` and `createHmac` first test it as a KeyObject and as a
 * CryptoKey, and on Node 24 those failed tests cost about 20 µs a call; `createSecretKey` skips
 * them, so it and the constructor together cost a few µs. A small message's conversion makes
 * three or four such calls. A KeyObject is passed through.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';

export const asSecretKey = (k: KeyObject | Buffer): KeyObject =>
  Buffer.isBuffer(k) ? createSecretKey(k) : k;
