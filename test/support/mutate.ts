/**
 * The one byte mutator of the fuzz tests (multipart, form, JSON, PEM, BER): a seeded choice among
 * generic mutations, plus the insert strings and format-aware mutations a reader's test adds.
 * Each result carries a description for the failure message, so a finding can be replayed.
 */

export interface Mutant {
  data: Buffer;
  how: string;
}

type Int = (n: number) => number;

export interface MutationOptions {
  /** Byte strings worth inserting for this format (delimiters, junk, a large run). */
  inserts?: Buffer[];
  /** Other inputs to splice from; the seed itself when none. */
  donors?: Buffer[];
  /** Format-aware mutations (e.g. BER length bytes), chosen like the generic ones. */
  extra?: Array<(b: Buffer, int: Int) => Mutant>;
}

const DEFAULT_INSERTS = [
  Buffer.from('\r\n'),
  Buffer.alloc(1),
  Buffer.from('\uFEFF'),
  Buffer.alloc(20_000, 0x41),
];

/** One mutation of `seed` drawn with `rand` (support/prng.ts). */
export function mutateBytes(rand: () => number, seed: Buffer, opts: MutationOptions = {}): Mutant {
  const int: Int = (n) => Math.floor(rand() * n);
  const b = Buffer.from(seed);
  const inserts = opts.inserts ?? DEFAULT_INSERTS;
  const generic: Array<() => Mutant> = [
    () => {
      const flips = 1 + int(8);
      for (let i = 0; i < flips && b.length > 0; i++) b[int(b.length)] ^= 1 << int(8);
      return { data: b, how: `${flips} bit flips` };
    },
    () => {
      const at = int(b.length);
      return { data: b.subarray(0, at), how: `truncated at ${at}/${b.length}` };
    },
    () => {
      const at = int(b.length);
      const len = 1 + int(64);
      return {
        data: Buffer.concat([b.subarray(0, at), b.subarray(at + len)]),
        how: `removed ${len} bytes at ${at}`,
      };
    },
    () => {
      const at = int(b.length);
      const junk = inserts[int(inserts.length)];
      return {
        data: Buffer.concat([b.subarray(0, at), junk, b.subarray(at)]),
        how: `inserted ${junk.length} bytes at ${at}`,
      };
    },
    () => {
      const at = int(b.length);
      const len = 1 + int(Math.min(2048, b.length - at));
      return {
        data: Buffer.concat([b.subarray(0, at + len), b.subarray(at)]),
        how: `duplicated ${len} bytes at ${at}`,
      };
    },
    () => {
      const donors = opts.donors ?? [seed];
      const other = donors[int(donors.length)];
      const from = int(other.length);
      const len = 1 + int(Math.min(512, other.length - from));
      const at = int(b.length);
      return {
        data: Buffer.concat([
          b.subarray(0, at),
          other.subarray(from, from + len),
          b.subarray(at + int(64)),
        ]),
        how: `splice of ${len} bytes at ${at}`,
      };
    },
    () => {
      const at = int(b.length);
      const len = 1 + int(256);
      b.fill(int(2) ? 0 : 0xff, at, Math.min(b.length, at + len));
      return { data: b, how: `fill of ${len} bytes at ${at}` };
    },
    () => ({ data: b, how: 'unmutated' }),
  ];
  const all = [...generic, ...(opts.extra ?? []).map((m) => () => m(b, int))];
  return all[int(all.length)]();
}
