/**
 * The signed manifest of a migration (docs/manifest.md): the ledger's rows, in source-key order,
 * are the leaves of an RFC 6962 Merkle tree; the root, the tree size, the migration's parameters
 * and counts are signed as a compact JWS by the tenant's archive signing key. Rows stream in:
 * the root costs O(log n) memory, one row's proof one more pass, every row's proof two passes.
 */
import { problem } from '../errors/index.ts';
import { KEY_TYPE_SPECS, isKeyType } from '../crypto/registry.ts';
import { resolveSignatureAlgorithm, signMessage } from '../crypto/sign.ts';
import { versionedKid } from '../jose/kid.ts';
import type { ResolvedKey } from '../jose/types.ts';
import {
  MANIFEST_TYP,
  TREE_ALG,
  type ManifestParameters,
  type ManifestPayload,
} from './payload.ts';
import { compareKeys, leafBytes, type InclusionProof, type LedgerRow } from './row.ts';
import {
  AuditPathCollector,
  TreeBuilder,
  leafHash,
  pathFromLevels,
  rootOfLevels,
  treeLevels,
} from './tree.ts';

/** A key that signs manifests: the name its JWK goes by, its JWS alg, and the signature of a signing input. */
export interface ManifestSigner {
  kid: string;
  alg: string;
  sign(signingInput: Buffer): Promise<Buffer>;
}

/**
 * The tenant's archive signing key as a manifest signer, through the key resolver every
 * conversion uses; the signature is the Sign API's data-mode signature, which is the JWS
 * signature of RFC 7515 over the signing input (shared/crypto/sign.ts), in the key's default alg.
 */
export async function archiveManifestSigner(resolver: {
  archiveSigningKey?(): Promise<ResolvedKey | null>;
}): Promise<ManifestSigner> {
  const key = (await resolver.archiveSigningKey?.()) ?? null;
  if (!key?.privateKey || !isKeyType(key.type))
    throw problem(
      'unprocessable',
      'the tenant has no archive signing key to sign the manifest with: make an active signing key the archive signing key (archiveSigning)',
    );
  const signing = {
    type: key.type,
    spec: KEY_TYPE_SPECS[key.type],
    privateKey: key.privateKey,
    publicKey: key.publicKey,
    usage: 'sign' as const,
    kid: key.kid,
  };
  const alg = resolveSignatureAlgorithm(signing);
  return {
    kid: versionedKid(key.kid, key.version),
    alg,
    sign: async (input) => signMessage(signing, { data: input }, alg).signature,
  };
}

/** A row with its leaf hash. */
export interface Leaf<R extends LedgerRow = LedgerRow> {
  row: R;
  hash: Buffer;
}

/**
 * The leaves of rows, refusing rows out of source-key order or repeated: two readers of the same
 * ledger must build the same tree, and a key met twice would be two leaves for one object.
 */
export async function* leavesOf<R extends LedgerRow>(
  rows: AsyncIterable<R>,
): AsyncGenerator<Leaf<R>> {
  let previous: string | undefined;
  for await (const row of rows) {
    if (previous !== undefined && compareKeys(previous, row.sourceKey) >= 0)
      throw problem(
        'unprocessable',
        `the rows are not in strictly increasing source-key order (UTF-8 bytes): ${JSON.stringify(row.sourceKey)} after ${JSON.stringify(previous)}`,
      );
    previous = row.sourceKey;
    yield { row, hash: leafHash(leafBytes(row)) };
  }
}

/** The tree head and counts of rows in one pass. */
export async function treeOf(
  rows: AsyncIterable<LedgerRow>,
): Promise<{ root: Buffer; size: number; counts: ManifestPayload['counts'] }> {
  const tree = new TreeBuilder();
  const counts = { total: 0, converted: 0, refused: 0 };
  for await (const { row, hash } of leavesOf(rows)) {
    tree.push(hash);
    counts.total += 1;
    counts[row.outcome] += 1;
  }
  return { root: tree.root(), size: tree.size, counts };
}

const b64u = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * Builds and signs the manifest of rows in source-key order: `{jws, root, size}` with the root
 * as lowercase hex, as the payload carries it.
 */
export async function buildManifest(
  rows: AsyncIterable<LedgerRow>,
  params: { migration: string; tenant: string; parameters: ManifestParameters; now?: Date },
  signer: ManifestSigner,
): Promise<{ jws: string; root: string; size: number; payload: ManifestPayload }> {
  const { root, size, counts } = await treeOf(rows);
  const payload: ManifestPayload = {
    v: 1,
    migration: params.migration,
    tenant: params.tenant,
    parameters: params.parameters,
    counts,
    tree: { alg: TREE_ALG, size, root: root.toString('hex') },
    iat: Math.floor((params.now ?? new Date()).getTime() / 1000),
    kid: signer.kid,
  };
  const input = `${b64u({ alg: signer.alg, kid: signer.kid, typ: MANIFEST_TYP })}.${b64u(payload)}`;
  const signature = await signer.sign(Buffer.from(input, 'ascii'));
  return {
    jws: `${input}.${signature.toString('base64url')}`,
    root: payload.tree.root,
    size,
    payload,
  };
}

/**
 * The inclusion proof of the row of `sourceKey`, in one pass over the rows (O(log n) memory), or
 * null when no row has that key. One object's proof at a time; a report of every proof uses
 * withProofs, which does not rescan the ledger per row.
 */
export async function inclusionProof(
  rows: AsyncIterable<LedgerRow>,
  sourceKey: string,
): Promise<(InclusionProof & { size: number; root: string }) | null> {
  const tree = new TreeBuilder();
  let collector: AuditPathCollector | null = null;
  for await (const { row, hash } of leavesOf(rows)) {
    if (collector) collector.push(hash);
    else if (row.sourceKey === sourceKey) collector = new AuditPathCollector(tree.size, tree.peaks);
    tree.push(hash);
  }
  if (!collector) return null;
  return {
    index: collector.index,
    path: collector.finish().map((h) => h.toString('hex')),
    size: tree.size,
    root: tree.root().toString('hex'),
  };
}

/** Rows per block of withProofs: its memory is one block plus one hash per block. */
export const PROOF_BLOCK = 4096;

/**
 * Every row with its inclusion proof, in order, from two passes over the rows (`open` is called
 * twice and must give the same rows). The first keeps the hash of each aligned block of
 * PROOF_BLOCK leaves (a node of the tree: 3 MB for 10^8 rows); the second builds each block's
 * levels in memory and ends each path with the block's path among the blocks. A ledger that
 * changed between the passes is refused rather than proven against another root.
 */
export async function* withProofs(
  open: () => AsyncIterable<LedgerRow>,
  block = PROOF_BLOCK,
): AsyncGenerator<LedgerRow & { proof: InclusionProof }, { root: string; size: number }> {
  const blocks: Buffer[] = [];
  let current = new TreeBuilder();
  const whole = new TreeBuilder();
  for await (const { hash } of leavesOf(open())) {
    current.push(hash);
    whole.push(hash);
    if (current.size === block) {
      blocks.push(current.root());
      current = new TreeBuilder();
    }
  }
  if (current.size > 0) blocks.push(current.root());
  const upper = treeLevels(blocks);
  const root = whole.root();
  if (blocks.length > 0 && !rootOfLevels(upper).equals(root))
    throw new Error('the block tree does not lead to the root (a block size not a power of two?)');

  let rows: LedgerRow[] = [];
  let hashes: Buffer[] = [];
  let seen = 0;
  function* flush(): Generator<LedgerRow & { proof: InclusionProof }> {
    const j = Math.floor((seen - rows.length) / block);
    const levels = treeLevels(hashes);
    if (j >= blocks.length || !rootOfLevels(levels).equals(blocks[j]))
      throw problem('unprocessable', 'the rows changed between the two passes of the proofs');
    const above = pathFromLevels(upper, j).map((h) => h.toString('hex'));
    for (let i = 0; i < rows.length; i++) {
      const path = [...pathFromLevels(levels, i).map((h) => h.toString('hex')), ...above];
      yield { ...rows[i], proof: { index: j * block + i, path } };
    }
    rows = [];
    hashes = [];
  }
  for await (const { row, hash } of leavesOf(open())) {
    rows.push(row);
    hashes.push(hash);
    seen += 1;
    if (rows.length === block) yield* flush();
  }
  if (rows.length > 0) yield* flush();
  if (seen !== whole.size)
    throw problem('unprocessable', 'the rows changed between the two passes of the proofs');
  return { root: root.toString('hex'), size: whole.size };
}
