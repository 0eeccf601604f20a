/**
 * The offline check of a manifest (docs/manifest.md): its signature with a JWK Set, the report's
 * rows against the signed root, each row's inclusion proof, and each output's size and SHA-256
 * against its row. Everything that differs is named: a row edited, added or removed, an output
 * changed, missing or added. Rows and outputs stream; only the output keys the rows claim are
 * held, to find the files no row claims.
 */
import { createHash, createPublicKey, type JsonWebKey } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, opendir } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { streamVerifier } from '../jose/jws.ts';
import { MANIFEST_TYP, TREE_ALG, type ManifestPayload } from './payload.ts';
import { compareKeys, leafBytes, parseReportLine, rowOf, type ReportLine } from './row.ts';
import { TreeBuilder, leafHash, verifyInclusion } from './tree.ts';

/** What a verification found wrong, one thing at a time. */
export interface Finding {
  kind:
    | 'signature'
    | 'report'
    | 'root'
    | 'row-edited'
    | 'row-added'
    | 'rows-removed'
    | 'output-changed'
    | 'output-missing'
    | 'output-added';
  /** The row's source key or the output's key, when the finding is about one. */
  name?: string;
  detail: string;
}

/** The outputs to check: a local folder, or anything that can size, hash and list keys. */
export interface OutputTree {
  /** The size and SHA-256 (hex) of the output `key`, or null when it does not exist. */
  digest(key: string): Promise<{ size: number; sha256: string } | null>;
  /** Every output key the tree holds. */
  keys(): AsyncIterable<string>;
}

export interface VerifyInput {
  /** The manifest: a compact JWS. */
  jws: string;
  /** The tenant's public keys (RFC 7517 section 5). */
  jwks: { keys: JsonWebKey[] };
  /** The report's bytes: JSON Lines, one row a line, in source-key order. */
  report: AsyncIterable<Buffer>;
  outputs?: OutputTree;
  /** Findings kept (the rest are counted). */
  limit?: number;
}

export interface VerifyResult {
  ok: boolean;
  payload: ManifestPayload | null;
  findings: Finding[];
  /** Findings past the limit, counted only. */
  omitted: number;
  rows: number;
  outputs: number;
}

/** Longest report line read: far above any row, short of a reader holding a whole file. */
const MAX_LINE = 1 << 20;

/** The non-empty lines of a report (JSON Lines), each at most MAX_LINE bytes. */
export async function* linesOf(chunks: AsyncIterable<Buffer>): AsyncGenerator<string> {
  let carry: Buffer = Buffer.alloc(0);
  for await (const chunk of chunks) {
    let data = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let nl: number;
    while ((nl = data.indexOf(0x0a)) >= 0) {
      const line = data.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      if (line !== '') yield line;
      data = data.subarray(nl + 1);
    }
    if (data.length > MAX_LINE) throw new Error(`a report line is longer than ${MAX_LINE} bytes`);
    carry = Buffer.from(data);
  }
  const last = carry.toString('utf8').trim();
  if (last !== '') yield last;
}

const HEX64 = /^[0-9a-f]{64}$/;

function decodeJson(part: string): Record<string, unknown> | null {
  if (!/^[A-Za-z0-9_-]+$/.test(part)) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The manifest's payload when its JWS verifies with the JWK Set's key of its kid, or the reason it
 * does not. The header must carry the manifest `typ`: the archive key also re-signs content
 * from outside signers, and a converted object's JWS never has it.
 */
export function verifyManifestSignature(
  jws: string,
  jwks: { keys: JsonWebKey[] },
): ManifestPayload | string {
  const parts = jws.trim().split('.');
  if (parts.length !== 3) return 'the manifest is not a compact JWS';
  const header = decodeJson(parts[0]);
  if (!header) return 'the JWS header is not base64url JSON';
  if (header.typ !== MANIFEST_TYP) return `the JWS typ is not ${MANIFEST_TYP}`;
  if (header.crit !== undefined) return 'the JWS has critical headers, which a manifest never has';
  if (typeof header.alg !== 'string' || typeof header.kid !== 'string')
    return 'the JWS header names no alg or kid';
  const jwk = (Array.isArray(jwks?.keys) ? jwks.keys : []).find((k) => k.kid === header.kid);
  if (!jwk) return `the JWK Set has no key ${header.kid}`;
  if (
    (jwk.alg !== undefined && jwk.alg !== header.alg) ||
    (jwk.use !== undefined && jwk.use !== 'sig')
  )
    return `key ${header.kid} is not a ${header.alg} signing key`;
  let valid = false;
  try {
    const verifier = streamVerifier(header.alg);
    verifier.update(Buffer.from(`${parts[0]}.${parts[1]}`, 'ascii'));
    valid = verifier.verify(
      createPublicKey({ key: jwk, format: 'jwk' }),
      Buffer.from(parts[2], 'base64url'),
    );
  } catch {
    valid = false;
  }
  if (!valid) return `the signature does not verify with key ${header.kid}`;
  const p = decodeJson(parts[1]) as Partial<ManifestPayload> | null;
  const tree = p?.tree;
  if (
    !p ||
    p.v !== 1 ||
    p.kid !== header.kid ||
    typeof p.parameters?.outputPrefix !== 'string' ||
    tree?.alg !== TREE_ALG ||
    typeof tree.root !== 'string' ||
    !HEX64.test(tree.root) ||
    !Number.isSafeInteger(tree.size) ||
    tree.size < 0
  )
    return 'the payload is not a version 1 manifest';
  return p as ManifestPayload;
}

/** The key of an output in a tree that holds the output prefix's objects. */
const relativeKey = (key: string, prefix: string): string =>
  prefix && key.startsWith(prefix) ? key.slice(prefix.length) : key;

/** Checks a manifest, its report and optionally its outputs; names everything that differs. */
export async function verifyManifest(input: VerifyInput): Promise<VerifyResult> {
  const limit = input.limit ?? 1000;
  const findings: Finding[] = [];
  let omitted = 0;
  const found = (f: Finding) => (findings.length < limit ? findings.push(f) : (omitted += 1));
  const result = (
    payload: ManifestPayload | null,
    rows: number,
    outputs: number,
  ): VerifyResult => ({
    ok: findings.length === 0 && omitted === 0,
    payload,
    findings,
    omitted,
    rows,
    outputs,
  });

  const payload = verifyManifestSignature(input.jws, input.jwks);
  if (typeof payload === 'string') {
    found({ kind: 'signature', detail: payload });
    return result(null, 0, 0);
  }
  const root = Buffer.from(payload.tree.root, 'hex');
  const size = payload.tree.size;
  const prefix = payload.parameters?.outputPrefix ?? '';

  const tree = new TreeBuilder();
  const claimed = new Set<string>();
  let previous: string | undefined;
  // The index the next row's proof should carry: a gap means rows were removed before it.
  let expected = 0;
  let lineNo = 0;
  let proofs: boolean | undefined;
  let outputs = 0;
  for await (const text of linesOf(input.report)) {
    lineNo += 1;
    let value: unknown;
    let line: ReportLine | string;
    try {
      value = JSON.parse(text);
      line = parseReportLine(value);
    } catch {
      line = 'not JSON';
    }
    if (typeof line === 'string') {
      const key = (value as { sourceKey?: unknown } | undefined)?.sourceKey;
      found({
        kind: 'report',
        ...(typeof key === 'string' ? { name: key } : {}),
        detail: `line ${lineNo}: ${line}`,
      });
      continue;
    }
    const name = line.sourceKey;
    if (previous !== undefined && compareKeys(previous, name) >= 0)
      found({
        kind: 'report',
        name,
        detail: `line ${lineNo} is out of source-key order or repeated`,
      });
    previous = name;
    const row = rowOf(line);
    const hash = leafHash(leafBytes(row));
    tree.push(hash);

    // A report either carries proofs on every line or on none: a line without one among lines
    // with them is not a row the ledger reported.
    proofs ??= line.proof !== undefined;
    if (proofs && !line.proof)
      found({ kind: 'row-added', name, detail: 'the row carries no inclusion proof' });
    if (line.proof) {
      const path = line.proof.path.map((h) => Buffer.from(h, 'hex'));
      const proven = verifyInclusion(hash, line.proof.index, size, path, root);
      if (proven && line.proof.index > expected)
        found({
          kind: 'rows-removed',
          name,
          detail: `${line.proof.index - expected} row(s) signed before ${JSON.stringify(name)} are not in the report (indexes ${expected} to ${line.proof.index - 1})`,
        });
      if (proven && line.proof.index < expected)
        found({
          kind: 'row-added',
          name,
          detail: `the row repeats signed row ${line.proof.index}, already in the report`,
        });
      else if (proven) expected = line.proof.index + 1;
      else if (line.proof.index === expected) {
        found({
          kind: 'row-edited',
          name,
          detail: 'the row differs from the signed one (its proof fails)',
        });
        expected += 1;
      } else
        found({
          kind: 'row-added',
          name,
          detail: 'the row is not in the signed tree (its proof fails)',
        });
    }

    for (const out of row.outputs) {
      outputs += 1;
      const key = relativeKey(out.key, prefix);
      claimed.add(key);
      if (!input.outputs) continue;
      const actual = await input.outputs.digest(key);
      if (!actual)
        found({
          kind: 'output-missing',
          name: out.key,
          detail: `the output of ${JSON.stringify(name)} is missing`,
        });
      else if (actual.size !== out.size || actual.sha256 !== out.sha256)
        found({
          kind: 'output-changed',
          name: out.key,
          detail: `the output of ${JSON.stringify(name)} has size ${actual.size} and SHA-256 ${actual.sha256}, the row says ${out.size} and ${out.sha256}`,
        });
    }
  }

  if (expected > 0 && expected < size)
    found({
      kind: 'rows-removed',
      detail: `the last ${size - expected} signed row(s) are not in the report`,
    });
  if (tree.size !== size || !tree.root().equals(root)) {
    const named = findings.some((f) => f.kind.startsWith('row'));
    found({
      kind: 'root',
      detail: `the report's ${tree.size} rows lead to root ${tree.root().toString('hex')}, the manifest signs ${size} rows and root ${payload.tree.root}${named ? '' : ' (the report carries no proofs that name the rows)'}`,
    });
  }
  if (input.outputs)
    for await (const key of input.outputs.keys())
      if (!claimed.has(key))
        found({ kind: 'output-added', name: key, detail: 'no row of the report has this output' });
  return result(payload, tree.size, outputs);
}

/** The outputs under a local folder that holds a copy of the output prefix. */
export function folderTree(dir: string): OutputTree {
  return {
    async digest(key) {
      const path = join(dir, key);
      // A key that climbs out of the folder names nothing in it.
      if (!resolve(path).startsWith(resolve(dir) + sep)) return null;
      const st = await lstat(path).catch(() => null);
      if (!st?.isFile()) return null;
      const h = createHash('sha256');
      for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
      return { size: st.size, sha256: h.digest('hex') };
    },
    async *keys() {
      async function* walk(d: string): AsyncGenerator<string> {
        for await (const e of await opendir(d)) {
          const p = join(d, e.name);
          if (e.isDirectory()) yield* walk(p);
          else yield relative(dir, p).split(sep).join('/');
        }
      }
      yield* walk(dir);
    },
  };
}
