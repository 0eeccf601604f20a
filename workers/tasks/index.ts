/**
 * The piscina entry file: every task is a named export, run as pool.run(input, { name }).
 * One task family per file in this folder.
 */
export { hashPassword, verifyPassword } from './password.ts';
export { parseKeystoreTask } from './keystore.ts';
export { generateKey, signWithKey, verifyWithKey, encryptCompactWithKey, decryptCompactWithKey, encapsulateWithKey, decapsulateWithKey } from './crypto.ts';
