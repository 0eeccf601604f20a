/** jose as the independent checker, plus node's createSecretKey for raw AES keys. */
export {
  CompactEncrypt,
  compactDecrypt,
  compactVerify,
  decodeProtectedHeader,
  flattenedVerify,
  importJWK,
} from 'jose';
export { createSecretKey } from 'node:crypto';
