/**
 * The RFC 6962 tree of migration manifests: the roots and audit paths of the published
 * Certificate Transparency vectors (transparency-dev/merkle, testonly/constants.go and
 * proof/verify_test.go), and, for every size up to 130 and around 256 and 512, the streaming root, the
 * one-pass and two-pass paths against a naive implementation of RFC 6962 section 2.1 written
 * from its recursive definitions.
 */
import { createHash } from 'node:crypto';
import {
  AuditPathCollector,
  EMPTY_ROOT,
  TreeBuilder,
  leafHash,
  pathFromLevels,
  rootFromPath,
  rootOfLevels,
  treeLevels,
  verifyInclusion,
} from '../../../shared/manifest/tree.ts';
import { inclusionProof, leavesOf, withProofs } from '../../../shared/manifest/manifest.ts';
import { leafBytes, type LedgerRow } from '../../../shared/manifest/row.ts';
import { prng } from '../../../support/prng.ts';

const hex = (h: string) => Buffer.from(h, 'hex');

// transparency-dev/merkle testonly/constants.go: LeafInputs and RootHashes (sizes 1 to 8).
const LEAVES = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map(hex);
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
// proof/verify_test.go inclusionProofs: {leaf (1-based), size, proof}.
const PATHS: Array<[number, number, string[]]> = [
  [
    1,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    6,
    8,
    [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [3, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
  [
    2,
    5,
    [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
];

// RFC 6962 section 2.1, as written: MTH and PATH by recursion at the largest power of two below n.
const sha = (...parts: Buffer[]) =>
  parts.reduce((h, p) => h.update(p), createHash('sha256')).digest();
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
function naiveRoot(d: Buffer[]): Buffer {
  if (d.length === 0) return sha();
  if (d.length === 1) return sha(Buffer.from([0]), d[0]);
  const k = split(d.length);
  return sha(Buffer.from([1]), naiveRoot(d.slice(0, k)), naiveRoot(d.slice(k)));
}
function naivePath(m: number, d: Buffer[]): Buffer[] {
  if (d.length <= 1) return [];
  const k = split(d.length);
  return m < k
    ? [...naivePath(m, d.slice(0, k)), naiveRoot(d.slice(k))]
    : [...naivePath(m - k, d.slice(k)), naiveRoot(d.slice(0, k))];
}

/** The streaming path: a builder up to the leaf, then a collector for the rest. */
function streamedPath(hashes: Buffer[], index: number): Buffer[] {
  const b = new TreeBuilder();
  hashes.slice(0, index).forEach((h) => b.push(h));
  const c = new AuditPathCollector(index, b.peaks);
  hashes.slice(index + 1).forEach((h) => c.push(h));
  return c.finish();
}

function rowsOf(n: number): LedgerRow[] {
  return Array.from({ length: n }, (_, i) => ({
    sourceKey: `in/${String(i).padStart(6, '0')}.p7m`,
    inputSize: i,
    inputSha256: sha(Buffer.from(String(i))).toString('hex'),
    form: 'enveloped-data',
    outcome: 'converted' as const,
    outputs: [],
    keys: [],
    signers: [],
    attempts: 1,
  }));
}
async function* stream<T>(items: T[]): AsyncGenerator<T> {
  for (const x of items) yield x;
}

describe('the published RFC 6962 vectors', () => {
  it('when the vector leaves are added one by one, then the root of every size is the published one', () => {
    const b = new TreeBuilder();
    expect(b.root().toString('hex')).toBe(ROOTS[0]);
    LEAVES.forEach((leaf, i) => {
      b.push(leafHash(leaf));
      expect(b.root().toString('hex')).toBe(ROOTS[i + 1]);
      expect(rootOfLevels(treeLevels(LEAVES.slice(0, i + 1).map(leafHash))).toString('hex')).toBe(
        ROOTS[i + 1],
      );
    });
    expect(EMPTY_ROOT.toString('hex')).toBe(ROOTS[0]);
  });

  it.each(PATHS)(
    'when leaf %i of %i is proven, then its audit path is the published one and verifies',
    (leaf, size, path) => {
      const hashes = LEAVES.slice(0, size).map(leafHash);
      const index = leaf - 1;
      expect(pathFromLevels(treeLevels(hashes), index).map((h) => h.toString('hex'))).toEqual(path);
      expect(streamedPath(hashes, index).map((h) => h.toString('hex'))).toEqual(path);
      const root = hex(ROOTS[size]);
      expect(verifyInclusion(hashes[index], index, size, path.map(hex), root)).toBe(true);
    },
  );

  it.each(PATHS)(
    'when the path of leaf %i of %i is corrupted, then it no longer verifies',
    (leaf, size, path) => {
      const hashes = LEAVES.slice(0, size).map(leafHash);
      const index = leaf - 1;
      const root = hex(ROOTS[size]);
      const p = path.map(hex);
      const wrong: Array<[number, number, Buffer[], Buffer]> = [
        [index - 1, size, p, hashes[index]],
        [index + 1, size, p, hashes[index]],
        [index ^ 2, size, p, hashes[index]],
        [index, size * 2, p, hashes[index]],
        [index, Math.floor(size / 2), p, hashes[index]],
        [index, size, p, leafHash(Buffer.from('WrongLeaf'))],
        [index, size, [...p, root], hashes[index]],
        [index, size, [root, ...p], hashes[index]],
        [index, size, p.slice(0, -1), hashes[index]],
        ...p.map((_, i): [number, number, Buffer[], Buffer] => {
          const q = p.map((h) => Buffer.from(h));
          q[i][0] ^= 8;
          return [index, size, q, hashes[index]];
        }),
      ];
      for (const [i, n, q, h] of wrong) expect(verifyInclusion(h, i, n, q, root)).toBe(false);
      expect(verifyInclusion(hashes[index], index, size, p, EMPTY_ROOT)).toBe(false);
    },
  );
});

describe('the tree against a naive RFC 6962 implementation', () => {
  it('when trees of 0 to 130 random leaves, and around 256 and 512, are built, then roots and every audit path agree and verify', () => {
    const rand = prng(6962);
    for (const n of [...Array(131).keys(), 255, 256, 257, 511, 512, 513]) {
      const data = Array.from({ length: n }, (_, i) =>
        Buffer.from(`${Math.floor(rand() * 1e9)}:${n}:${i}`),
      );
      const hashes = data.map(leafHash);
      const root = naiveRoot(data);
      const b = new TreeBuilder();
      hashes.forEach((h) => b.push(h));
      expect(b.root().equals(root)).toBe(true);
      const levels = treeLevels(hashes);
      expect(rootOfLevels(levels).equals(root)).toBe(true);
      // Every index for small trees; the ends and two random ones for larger.
      const indexes =
        n <= 33
          ? [...Array(n).keys()]
          : [0, n - 1, ...Array.from({ length: 2 }, () => Math.floor(rand() * n))];
      for (const m of indexes) {
        const path = naivePath(m, data);
        const want = path.map((h) => h.toString('hex'));
        expect(pathFromLevels(levels, m).map((h) => h.toString('hex'))).toEqual(want);
        expect(streamedPath(hashes, m).map((h) => h.toString('hex'))).toEqual(want);
        expect(rootFromPath(hashes[m], m, n, path)?.equals(root)).toBe(true);
        if (n > 1) expect(verifyInclusion(hashes[m], (m + 1) % n, n, path, root)).toBe(false);
      }
    }
  });

  it.each([1, 2, 4, 8, 4096])(
    'when every row is proven in two passes with blocks of %i, then each proof is the naive path',
    async (block) => {
      for (const n of [0, 1, 7, 33, 100]) {
        const rows = rowsOf(n);
        const data = rows.map(leafBytes);
        const gen = withProofs(() => stream(rows), block);
        let step = await gen.next();
        let i = 0;
        while (!step.done) {
          expect(step.value.proof.index).toBe(i);
          expect(step.value.proof.path).toEqual(naivePath(i, data).map((h) => h.toString('hex')));
          i += 1;
          step = await gen.next();
        }
        expect(i).toBe(n);
        expect(step.value).toEqual({ root: naiveRoot(data).toString('hex'), size: n });
      }
    },
  );

  it('when one row is proven in one pass, then its proof is the naive path, and a key not there has none', async () => {
    const rows = rowsOf(37);
    const data = rows.map(leafBytes);
    for (const m of [0, 5, 31, 32, 36]) {
      const p = await inclusionProof(stream(rows), rows[m].sourceKey);
      expect(p).toEqual({
        index: m,
        path: naivePath(m, data).map((h) => h.toString('hex')),
        size: 37,
        root: naiveRoot(data).toString('hex'),
      });
    }
    expect(await inclusionProof(stream(rows), 'in/none')).toBeNull();
  });

  it('when rows come out of UTF-8 byte order or twice, then the leaves are refused', async () => {
    const [a, b] = rowsOf(2);
    const drain = async (rows: LedgerRow[]) => {
      for await (const _ of leavesOf(stream(rows)));
    };
    await expect(drain([b, a])).rejects.toThrow(/strictly increasing source-key order/);
    await expect(drain([a, a])).rejects.toThrow(/strictly increasing/);
    // U+1F600 sorts before U+FF5E in UTF-16 code units (a surrogate, D83D) but after it in UTF-8 bytes.
    const wide = { ...a, sourceKey: 'k\u{1F600}' };
    const narrow = { ...a, sourceKey: 'k\uFF5E' };
    await expect(drain([wide, narrow])).rejects.toThrow(/order/);
    await drain([narrow, wide]);
  });
});
