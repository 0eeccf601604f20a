/**
 * Per-process memos for the public-key work every signed message of an archive repeats with the
 * same few keys: a tenant key's SubjectPublicKeyInfo, and the KeyObject made from an SPKI. Both
 * are keyed by what determines them exactly (the KeyObject itself, the SPKI's own bytes), so a
 * hit answers what a fresh computation would; the SPKI memo is bounded and drops its oldest entry.
 * See docs/pkcs7-performance.md.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';

/** Most SPKIs held as KeyObjects at once. */
export const SPKI_CACHE_SIZE = 256;

const spkiOfKey = new WeakMap<KeyObject, Buffer>();
const keyOfSpki = new Map<string, KeyObject>();

/** The DER SubjectPublicKeyInfo of `source` (a public or private KeyObject), exported once per object. */
export function spkiOf(source: KeyObject): Buffer {
  let der = spkiOfKey.get(source);
  if (!der) {
    const pub = source.type === 'private' ? createPublicKey(source) : source;
    der = pub.export({ type: 'spki', format: 'der' });
    spkiOfKey.set(source, der);
  }
  // A copy: the caller may hand it to another thread or keep it.
  return Buffer.from(der);
}

/** The public KeyObject of a DER SPKI; the same bytes give the same (immutable) KeyObject. */
export function spkiPublicKey(spki: Buffer): KeyObject {
  const id = spki.toString('latin1');
  const hit = keyOfSpki.get(id);
  if (hit) {
    // Most recently used last, so the oldest is the one dropped.
    keyOfSpki.delete(id);
    keyOfSpki.set(id, hit);
    return hit;
  }
  const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  keyOfSpki.set(id, key);
  if (keyOfSpki.size > SPKI_CACHE_SIZE) keyOfSpki.delete(keyOfSpki.keys().next().value!);
  return key;
}

/** How many SPKIs are held now (for tests). */
export function spkiCacheSize(): number {
  return keyOfSpki.size;
}
