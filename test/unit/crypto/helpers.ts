/** Helpers shared by the crypto unit tests. */
import { generateKeyMaterial, loadKeyVersion } from '../../../shared/crypto/material.ts';
import type { LoadedKeyVersion } from '../../../shared/crypto/material.ts';
import type { KeyType, KeyUsage } from '../../../shared/crypto/registry.ts';

/** The error a call throws (sync or async), as plain fields; fails the test when nothing is thrown. */
export async function thrown(
  fn: () => unknown,
): Promise<{ code?: string; status?: number; message: string; cause?: unknown }> {
  try {
    await fn();
  } catch (err) {
    return err as { code?: string; status?: number; message: string; cause?: unknown };
  }
  throw new Error('expected a failure, got none');
}

const cache = new Map<string, Promise<LoadedKeyVersion>>();

/** A loaded key version of a type and usage, generated once per test file. */
export function keyOf(
  type: KeyType,
  usage: KeyUsage,
  kid = `kid-${type}-${usage}`,
  version = 1,
): Promise<LoadedKeyVersion> {
  const id = `${type}/${usage}/${kid}/${version}`;
  let key = cache.get(id);
  if (!key)
    cache.set(
      id,
      (key = generateKeyMaterial(type).then((m) => loadKeyVersion(m, { kid, version, usage }))),
    );
  return key;
}

/** The same bytes with one bit flipped at `index` (default: the middle). */
export function flipBit(bytes: Buffer, index = Math.floor(bytes.length / 2)): Buffer {
  const out = Buffer.from(bytes);
  out[index] ^= 0x01;
  return out;
}
