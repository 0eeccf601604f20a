/**
 * The Merkle tree of RFC 6962 section 2.1 over SHA-256: a leaf hashes as SHA-256(0x00 || leaf), a
 * node as SHA-256(0x01 || left || right), and a tree of n leaves splits at the largest power of
 * two below n. Everything here works on leaf hashes as they stream: the root is built in
 * O(log n) memory (a stack of the perfect subtrees seen so far), one leaf's audit path in one
 * pass, and every leaf's path in two passes (docs/manifest.md says why).
 */
import { createHash } from 'node:crypto';

const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

/** SHA-256(0x00 || leaf): the leaf's hash (RFC 6962 section 2.1). */
export const leafHash = (leaf: Buffer): Buffer =>
  createHash('sha256').update(LEAF).update(leaf).digest();

/** SHA-256(0x01 || left || right): an interior node's hash. */
export const nodeHash = (left: Buffer, right: Buffer): Buffer =>
  createHash('sha256').update(NODE).update(left).update(right).digest();

/** The root of the empty tree: SHA-256 of nothing (RFC 6962 section 2.1). */
export const EMPTY_ROOT = createHash('sha256').digest();

/** 2^k for k up to 53, without 32-bit shifts (indexes may pass 2^31). */
const pow2 = (k: number): number => 2 ** k;
const bit = (n: number, k: number): number => Math.floor(n / pow2(k)) % 2;

/** A perfect subtree: its hash and its number of leaves (a power of two). */
export interface Peak {
  hash: Buffer;
  size: number;
}

/**
 * The root of leaves pushed one by one. The stack holds the perfect subtrees that cover the
 * leaves so far, largest first (at most log2(n) + 1 of them); the RFC 6962 root is the right-to-left
 * fold of the stack, because the largest-power-of-two split puts every perfect subtree but the
 * last on the left of all that follows it.
 */
export class TreeBuilder {
  #peaks: Peak[] = [];
  #size = 0;

  /** Adds the next leaf's hash. */
  push(hash: Buffer): void {
    let node: Peak = { hash, size: 1 };
    while (this.#peaks.length > 0 && this.#peaks[this.#peaks.length - 1].size === node.size) {
      const left = this.#peaks.pop()!;
      node = { hash: nodeHash(left.hash, node.hash), size: node.size * 2 };
    }
    this.#peaks.push(node);
    this.#size += 1;
  }

  /** The number of leaves pushed. */
  get size(): number {
    return this.#size;
  }

  /** The perfect subtrees covering the leaves so far, largest (leftmost) first. */
  get peaks(): readonly Peak[] {
    return this.#peaks;
  }

  /** The root of the leaves pushed so far (RFC 6962 section 2.1's MTH). */
  root(): Buffer {
    const p = this.#peaks;
    if (p.length === 0) return EMPTY_ROOT;
    let hash = p[p.length - 1].hash;
    for (let i = p.length - 2; i >= 0; i--) hash = nodeHash(p[i].hash, hash);
    return hash;
  }
}

/**
 * One leaf's audit path, collected in the same pass as the root. The siblings on its left are the
 * perfect subtrees on the stack when the leaf arrives (one per set bit of its index); those on its
 * right cover consecutive ranges of the leaves that follow (one per clear bit), each a small tree
 * of its own, the last one cut short by the end of the tree, and none past it.
 */
export class AuditPathCollector {
  readonly index: number;
  #siblings = new Map<number, Buffer>();
  #level = -1;
  #end = 0;
  #next: number;
  #range = new TreeBuilder();

  /** `peaks`: the builder's peaks just before the leaf at `index` was pushed. */
  constructor(index: number, peaks: readonly Peak[]) {
    this.index = index;
    this.#next = index + 1;
    for (const p of peaks) this.#siblings.set(Math.log2(p.size), p.hash);
    this.#advance();
  }

  #advance(): void {
    let k = this.#level + 1;
    while (bit(this.index, k) === 1) k += 1;
    this.#level = k;
    this.#end = (Math.floor(this.index / pow2(k)) + 2) * pow2(k);
    this.#range = new TreeBuilder();
  }

  /** Adds the hash of the next leaf after the proven one. */
  push(hash: Buffer): void {
    this.#range.push(hash);
    this.#next += 1;
    if (this.#next === this.#end) {
      this.#siblings.set(this.#level, this.#range.root());
      this.#advance();
    }
  }

  /** The audit path, bottom up, once every leaf has been pushed. */
  finish(): Buffer[] {
    if (this.#range.size > 0) this.#siblings.set(this.#level, this.#range.root());
    return [...this.#siblings.entries()].sort(([a], [b]) => a - b).map(([, h]) => h);
  }
}

/**
 * Every level of a tree held in memory: level 0 the leaf hashes, each level above the pairs of
 * the one below, a last node without a pair carried up as it is. Node i of level k is then the
 * RFC 6962 hash of leaves [i * 2^k, min((i + 1) * 2^k, n)).
 */
export function treeLevels(leafHashes: readonly Buffer[]): Buffer[][] {
  const levels: Buffer[][] = [[...leafHashes]];
  while (levels[levels.length - 1].length > 1) {
    const below = levels[levels.length - 1];
    const up: Buffer[] = [];
    for (let i = 0; i < below.length; i += 2)
      up.push(i + 1 < below.length ? nodeHash(below[i], below[i + 1]) : below[i]);
    levels.push(up);
  }
  return levels;
}

/** The root of a tree held as levels. */
export const rootOfLevels = (levels: readonly Buffer[][]): Buffer =>
  levels[levels.length - 1][0] ?? EMPTY_ROOT;

/** The audit path of leaf `index` in a tree held as levels: one sibling per level where it has one. */
export function pathFromLevels(levels: readonly Buffer[][], index: number): Buffer[] {
  const path: Buffer[] = [];
  for (let k = 0; k < levels.length - 1; k++) {
    const i = Math.floor(index / pow2(k));
    const sibling = i % 2 === 0 ? i + 1 : i - 1;
    if (sibling < levels[k].length) path.push(levels[k][sibling]);
  }
  return path;
}

/**
 * The root an audit path leads to from a leaf hash, or null when the path cannot belong to leaf
 * `index` of a tree of `size` leaves (RFC 9162 section 2.1.3.2, the verification of RFC 6962's
 * paths written out).
 */
export function rootFromPath(
  hash: Buffer,
  index: number,
  size: number,
  path: readonly Buffer[],
): Buffer | null {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size)
    return null;
  let fn = index;
  let sn = size - 1;
  let r = hash;
  for (const p of path) {
    if (sn === 0 || p.length !== 32) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

/** True when the path proves the leaf hash is leaf `index` of the tree of `size` leaves and `root`. */
export function verifyInclusion(
  hash: Buffer,
  index: number,
  size: number,
  path: readonly Buffer[],
  root: Buffer,
): boolean {
  const r = rootFromPath(hash, index, size, path);
  return r !== null && r.equals(root);
}
