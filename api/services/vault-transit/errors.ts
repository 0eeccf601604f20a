/**
 * The Vault Transit API's errors: `{"errors": ["..."]}` with the status Vault answers
 * (docs/vault-transit.md), and the one table from Keyward's problem codes to them, so a failure of
 * the shared services answers what hvac, node-vault and Vault's Go client expect.
 */
import { AppError, type ProblemCode } from '../../../shared/errors/index.ts';

/** A Vault error answer: status, messages (empty for Vault's bare 404), Retry-After on a 429. */
export class VaultError extends Error {
  readonly status: number;
  readonly messages: readonly string[];
  readonly retryAfter?: number;
  constructor(status: number, message: string | null, retryAfter?: number) {
    super(message ?? 'not found');
    this.status = status;
    this.messages = message === null ? [] : [message];
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

/** A 400 with Vault's words. */
export const invalidRequest = (message: string): VaultError => new VaultError(400, message);

/** Vault's answer to a missing, invalid or unpermitted token: 403 "permission denied". */
export const permissionDenied = (): VaultError => new VaultError(403, 'permission denied');

/** The one answer of every ciphertext that does not open (no oracle). */
export const invalidCiphertext = (): VaultError =>
  new VaultError(400, 'invalid ciphertext: unable to decrypt');

/** Vault's answer to a data operation on a key the tenant does not hold. */
export const keyNotFound = (): VaultError => new VaultError(400, 'encryption key not found');

/** Keyward problem code → Vault status (the message is the problem's own, or Vault's words). */
const BY_CODE = new Map<ProblemCode, [number, string | null]>([
  ['forbidden', [403, 'permission denied']],
  ['unauthorized', [403, 'permission denied']],
  ['key_not_found', [400, 'encryption key not found']],
  ['decryption_failed', [400, 'invalid ciphertext: unable to decrypt']],
  [
    'key_version_retired',
    [400, 'ciphertext or signature version is disallowed by policy (too old)'],
  ],
  ['rate_limited', [429, null]],
  ['pool_busy', [429, null]],
  ['database_unavailable', [503, null]],
]);

/** The Vault error of anything thrown by a service; 500 "internal error" for the unexpected. */
export function toVaultError(err: unknown): VaultError {
  if (err instanceof VaultError) return err;
  if (err instanceof AppError) {
    const mapped = BY_CODE.get(err.code as ProblemCode);
    const retry = err.headers?.['Retry-After'];
    const retryAfter = retry === undefined ? undefined : Number(retry);
    if (mapped) return new VaultError(mapped[0], mapped[1] ?? err.message, retryAfter);
    if (err.status >= 500) return new VaultError(err.status === 503 ? 503 : 500, 'internal error');
    return new VaultError(400, err.message);
  }
  return new VaultError(500, 'internal error');
}
