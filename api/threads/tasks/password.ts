/**
 * argon2id password hashing with Node's built-in crypto.argon2 (OWASP parameters: 19 MiB,
 * 2 passes, 1 lane). Runs in the piscina pool: ~35 ms of CPU per hash must not block the
 * event loop. Hashes are PHC strings so parameters can change without breaking old hashes.
 */
import { argon2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const argon2Async = promisify(argon2);
const PARAMS = { memory: 19456, passes: 2, parallelism: 1, tagLength: 32 } as const;

async function derive(
  password: string,
  nonce: Buffer,
  p: { memory: number; passes: number; parallelism: number; tagLength: number },
): Promise<Buffer> {
  return argon2Async('argon2id', { message: Buffer.from(password, 'utf8'), nonce, ...p });
}

/** Hashes a password into a PHC string: $argon2id$v=19$m=..,t=..,p=..$salt$hash. */
export async function hashPassword(input: { password: string }): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(input.password, salt, PARAMS);
  return `$argon2id$v=19$m=${PARAMS.memory},t=${PARAMS.passes},p=${PARAMS.parallelism}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Checks a password against a PHC string in constant time; malformed hashes never match. */
export async function verifyPassword(input: { password: string; hash: string }): Promise<boolean> {
  const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([\w-]+)\$([\w-]+)$/.exec(input.hash);
  if (!m) return false;
  const expected = Buffer.from(m[5], 'base64url');
  const actual = await derive(input.password, Buffer.from(m[4], 'base64url'), {
    memory: Number(m[1]),
    passes: Number(m[2]),
    parallelism: Number(m[3]),
    tagLength: expected.length,
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
