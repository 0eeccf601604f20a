/**
 * Where each runtime operation runs (the key-type table's `onLoop` column), decided by measurement
 * (µs per operation on one core; the figures are in bench/results/design-figures.md): work under
 * ~100 µs stays on the event loop (a hop to the pool costs about as much), anything slower goes
 * to the piscina pool so the loop keeps serving.
 */
import { keyTypeSpec, type KeyType, type RuntimeOp } from '../../../shared/crypto/registry.ts';

export type { RuntimeOp };

/** True when the operation on this key type should run in the worker pool (the registry's `onLoop` column). */
export function runsInPool(op: RuntimeOp, type: KeyType, digestMode = false): boolean {
  const spec = keyTypeSpec(type);
  return (digestMode && spec.digestInPool === true) || !spec.onLoop.includes(op);
}
