/**
 * Key lifecycle: states active, suspended, revoked, archived; rotation adds a
 * version. The transition table is data, checked in one place.
 */
import { problem, type AppError } from '../errors/index.ts';

/** Every key state, in lifecycle order. */
export const KEY_STATES = ['active', 'suspended', 'revoked', 'archived'] as const;
export type KeyState = (typeof KEY_STATES)[number];
export type KeyAction = 'suspend' | 'resume' | 'revoke' | 'archive' | 'rotate';

/** action → states it may start from → state it leads to (rotate keeps the state). */
export const TRANSITIONS: Readonly<
  Record<KeyAction, { from: readonly KeyState[]; to: KeyState | null }>
> = {
  suspend: { from: ['active'], to: 'suspended' },
  resume: { from: ['suspended'], to: 'active' },
  revoke: { from: ['active', 'suspended'], to: 'revoked' },
  archive: { from: ['revoked'], to: 'archived' },
  rotate: { from: ['active'], to: null },
};

/** The next state, or a 409 problem naming the states the action needs. */
export function nextState(kid: string, state: KeyState, action: KeyAction): KeyState {
  const t = TRANSITIONS[action];
  if (!t.from.includes(state)) {
    throw problem(
      'invalid_transition',
      `cannot ${action} key ${kid} in state ${state}; ${action} needs ${t.from.join(' or ')}`,
      { details: { kid, state, action } },
    );
  }
  return t.to ?? state;
}

/** The problem for a kid the tenant has no key of (also for a kid no key can have). */
export function keyNotFound(kid: string): AppError {
  return problem('key_not_found', `no key ${kid.slice(0, 128)} in this tenant`);
}

/**
 * The problem for using a key that is not active (runtime operations). A suspended key with a
 * `deletionAt` is pending deletion: it is destroyed then, unless the deletion is cancelled.
 */
export function unusable(kid: string, state: KeyState, deletionAt?: Date | null): AppError {
  if (state === 'suspended' && deletionAt)
    return problem(
      'key_pending_deletion',
      `key ${kid} is pending deletion on ${deletionAt.toISOString()}; resume it to cancel the deletion`,
      { details: { kid, deletionDate: deletionAt.toISOString() } },
    );
  if (state === 'suspended') return problem('key_suspended', `key ${kid} is suspended`);
  if (state === 'revoked' || state === 'archived')
    return problem('key_revoked', `key ${kid} is ${state}; no operation is allowed`);
  return problem('internal', 'unexpected key state');
}

/**
 * A retained version that may still decrypt or verify: 409 key-version-retired below the key's
 * minDecryptionVersion, decryption-failed when the key has no such version.
 */
export function retainedVersion<V>(
  key: { kid: string; minDecryptionVersion: number; versions: ReadonlyMap<number, V> },
  version: number,
): V {
  if (version < key.minDecryptionVersion && key.versions.has(version)) {
    throw problem(
      'key_version_retired',
      `version ${version} of key ${key.kid} is below its minimum decryption version ${key.minDecryptionVersion}`,
      { details: { kid: key.kid, version, minDecryptionVersion: key.minDecryptionVersion } },
    );
  }
  const v = key.versions.get(version);
  if (v === undefined) throw problem('decryption_failed', 'decryption failed');
  return v;
}
