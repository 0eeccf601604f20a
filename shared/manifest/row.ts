/**
 * A migration ledger row as a Merkle leaf (docs/manifest.md): the schema of the row, its canonical
 * bytes, and the order leaves take. Only what a re-verification finds the same every time is in
 * a leaf: no times, no worker ids, so the root of a finished migration never changes.
 */
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { canonicalJson } from '../canonical-json.ts';

const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$' });
// Integers only, within the doubles every JSON reader holds exactly: the canonical form of a
// number is then its decimal digits in every language (docs/manifest.md, "Leaf encoding").
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

/** One object of a migration, as the ledger records it and a leaf encodes it. */
export const LedgerRow = Type.Object(
  {
    sourceKey: Type.String({ minLength: 1 }),
    inputSize: Count,
    inputSha256: Sha256Hex,
    /** The form found: enveloped-data, signed-data, clear-signed, signed-then-enveloped... */
    form: Type.String(),
    outcome: Type.Union([Type.Literal('converted'), Type.Literal('refused')]),
    /** The problem slug, only when refused. */
    problem: Type.Optional(Type.String({ pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' })),
    /** The problem's detail, only when refused. */
    detail: Type.Optional(Type.String()),
    outputs: Type.Array(
      Type.Object(
        { key: Type.String({ minLength: 1 }), size: Count, sha256: Sha256Hex },
        { additionalProperties: false },
      ),
    ),
    keys: Type.Array(
      Type.Object({ kid: Type.String(), version: Count }, { additionalProperties: false }),
    ),
    /** SHA-256 of each original signer's certificate. */
    signers: Type.Array(Sha256Hex),
    attempts: Count,
  },
  { additionalProperties: false },
);
export type LedgerRow = Static<typeof LedgerRow>;

/** An inclusion proof: the leaf's index and its audit path, bottom up, as hex (RFC 6962 section 2.1.1). */
export const InclusionProof = Type.Object(
  { index: Count, path: Type.Array(Sha256Hex, { maxItems: 64 }) },
  { additionalProperties: false },
);
export type InclusionProof = Static<typeof InclusionProof>;

/** A line of a migration report: a ledger row, with its inclusion proof when the report carries them. */
export const ReportLine = Type.Object(
  { ...LedgerRow.properties, proof: Type.Optional(InclusionProof) },
  { additionalProperties: false },
);
export type ReportLine = Static<typeof ReportLine>;

const rowCheck = Compile(ReportLine);

/** The row of a report line, or the reason it is not one (the first failing member). */
export function parseReportLine(value: unknown): ReportLine | string {
  if (rowCheck.Check(value)) {
    const row = value as ReportLine;
    const refused = row.outcome === 'refused';
    if (refused !== (row.problem !== undefined) || refused !== (row.detail !== undefined))
      return 'problem and detail are present exactly when the outcome is refused';
    return row;
  }
  for (const e of rowCheck.Errors(value) as Iterable<{ instancePath?: string; message?: string }>)
    return `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`;
  return 'not a ledger row';
}

/** The row alone, without the proof a report line may carry. */
export function rowOf(line: ReportLine): LedgerRow {
  const { proof: _proof, ...row } = line;
  return row;
}

/**
 * The leaf: the row's canonical JSON (shared/canonical-json.ts: members sorted, no whitespace,
 * which for a row this schema admits is RFC 8785 JCS) in UTF-8.
 */
export const leafBytes = (row: LedgerRow): Buffer => Buffer.from(canonicalJson(row), 'utf8');

/**
 * Leaves are ordered by source key in UTF-8 byte order (PostgreSQL's `COLLATE "C"` on a UTF-8
 * database), which every language computes the same way; JavaScript's `<` compares UTF-16 code
 * units, which orders some characters differently.
 */
export const compareKeys = (a: string, b: string): number =>
  Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
