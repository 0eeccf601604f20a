/**
 * A migration manifest checked from outside, as docs/manifest.md tells an auditor to: written
 * here from RFC 6962 / RFC 9162 and the report's documented members, with node:crypto's SHA-256
 * alone and nothing of shared/manifest, so the tests and benches that use it check Keyward's
 * tree against an implementation it did not write.
 */
import { createHash } from 'node:crypto';

/** RFC 8785 canonical JSON for the values a leaf holds (sorted keys, no spaces). */
export const canonicalJson = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(canonicalJson).join(',')}]`
    : v && typeof v === 'object'
      ? `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
          .join(',')}}`
      : JSON.stringify(v);

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

/** The leaf hash of one report line (JSON Lines), from the members the manifest documents. */
export function reportLineLeaf(line: Record<string, any>): Buffer {
  const leaf = {
    sourceKey: line.sourceKey,
    inputSize: line.inputSize,
    inputSha256: line.inputSha256,
    form: line.form,
    outcome: line.outcome,
    ...(line.outcome === 'refused' ? { problem: line.problem, detail: line.detail } : {}),
    outputs: line.outputs.map((o: Record<string, unknown>) => ({
      key: o.key,
      size: o.size,
      sha256: o.sha256,
    })),
    keys: line.keys.map((k: Record<string, unknown>) => ({ kid: k.kid, version: k.version })),
    signers: line.signers,
    attempts: line.attempts,
  };
  return sha256(LEAF, Buffer.from(canonicalJson(leaf), 'utf8'));
}

/**
 * The RFC 6962 tree head of leaves pushed in order, streaming: a stack of perfect subtree roots
 * (sizes strictly decreasing), merged as leaves arrive and folded right to left at the end.
 */
export class TreeHead {
  readonly #stack: Array<[Buffer, number]> = [];
  size = 0;

  push(leaf: Buffer): void {
    let node: [Buffer, number] = [leaf, 1];
    while (this.#stack.length > 0 && this.#stack[this.#stack.length - 1][1] === node[1]) {
      const [left] = this.#stack.pop()!;
      node = [sha256(NODE, left, node[0]), node[1] * 2];
    }
    this.#stack.push(node);
    this.size += 1;
  }

  /** The root, hex; the tree of no leaf is refused (a manifest always has one). */
  root(): string {
    if (this.#stack.length === 0) throw new Error('no leaf');
    let root = this.#stack[this.#stack.length - 1][0];
    for (let i = this.#stack.length - 2; i >= 0; i--) root = sha256(NODE, this.#stack[i][0], root);
    return root.toString('hex');
  }
}

/** RFC 9162 section 2.1.3.2: the root an inclusion proof leads to from a leaf hash, hex. */
export function rootFromProof(
  leaf: Buffer,
  proof: { index: number; size: number; path: readonly string[] },
): string {
  let fn = proof.index;
  let sn = proof.size - 1;
  let r = leaf;
  for (const p of proof.path) {
    const sibling = Buffer.from(p, 'hex');
    if (fn % 2 === 1 || fn === sn) {
      r = sha256(NODE, sibling, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else r = sha256(NODE, r, sibling);
    fn >>= 1;
    sn >>= 1;
  }
  return r.toString('hex');
}
