/**
 * The piscina entry file: every task is a named export, run as pool.run(input, { name }).
 * One task family per file in this folder, each imported on its first task: an idle thread
 * carries only what it has been asked to do (a thread that only hashes passwords never loads
 * the key-material and keystore graphs, about 20 MB of RSS each).
 */
import type * as Password from './password.ts';
import type * as Keystore from './keystore.ts';
import type * as Crypto from './crypto.ts';
import type * as Convert from './convert.ts';
import type * as Expensive from './expensive.ts';

type Task<M, K extends keyof M> = M[K] extends (input: infer I) => infer R
  ? (input: I) => Promise<Awaited<R>>
  : never;

/** A task whose module is imported on the first call (then cached by the module loader). */
function lazy<M, K extends keyof M & string>(load: () => Promise<M>, name: K): Task<M, K> {
  return (async (input: unknown) =>
    ((await load())[name] as (i: unknown) => unknown)(input)) as Task<M, K>;
}

const password = () => import('./password.ts');
const keystore = () => import('./keystore.ts');
const crypto = () => import('./crypto.ts');
const convert = () => import('./convert.ts');
const expensive = () => import('./expensive.ts');

export const hashPassword = lazy<typeof Password, 'hashPassword'>(password, 'hashPassword');
export const verifyPassword = lazy<typeof Password, 'verifyPassword'>(password, 'verifyPassword');
export const parseKeystoreTask = lazy<typeof Keystore, 'parseKeystoreTask'>(
  keystore,
  'parseKeystoreTask',
);
export const parseKeystoreCosted = lazy<typeof Keystore, 'parseKeystoreCosted'>(
  keystore,
  'parseKeystoreCosted',
);
export const generateKey = lazy<typeof Expensive, 'generateKey'>(expensive, 'generateKey');
export const signWithKey = lazy<typeof Crypto, 'signWithKey'>(crypto, 'signWithKey');
export const verifyWithKey = lazy<typeof Crypto, 'verifyWithKey'>(crypto, 'verifyWithKey');
export const encryptCompactWithKey = lazy<typeof Crypto, 'encryptCompactWithKey'>(
  crypto,
  'encryptCompactWithKey',
);
export const decryptCompactWithKey = lazy<typeof Crypto, 'decryptCompactWithKey'>(
  crypto,
  'decryptCompactWithKey',
);
export const encapsulateWithKey = lazy<typeof Crypto, 'encapsulateWithKey'>(
  crypto,
  'encapsulateWithKey',
);
export const decapsulateWithKey = lazy<typeof Crypto, 'decapsulateWithKey'>(
  crypto,
  'decapsulateWithKey',
);
export const convertStream = lazy<typeof Convert, 'convertStream'>(convert, 'convertStream');
export const derivePbkdf2 = lazy<typeof Expensive, 'derivePbkdf2'>(expensive, 'derivePbkdf2');
export const generateDataKeyPairTask = lazy<typeof Expensive, 'generateDataKeyPairTask'>(
  expensive,
  'generateDataKeyPairTask',
);
export const checkSignersTask = lazy<typeof Convert, 'checkSignersTask'>(
  convert,
  'checkSignersTask',
);
