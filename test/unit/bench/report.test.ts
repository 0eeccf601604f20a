import { readFileSync } from 'node:fs';
import {
  describeTarget,
  metText,
  parseResults,
  targetMet,
  type BenchResult,
} from '../../../bench/lib/result.ts';
import {
  README_END,
  README_START,
  readmeBlock,
  replaceReadmeBlock,
  resultsTable,
  type Outcome,
  type RunMeta,
} from '../../../bench/lib/report.ts';

const figure = (over: Partial<BenchResult> = {}): BenchResult => ({
  name: 'crypto-encrypt-vs-floor',
  metric: 'encrypt 1 KiB',
  value: 8000,
  baseline: 'encrypt floor',
  baselineValue: 10000,
  ratio: 0.8,
  unit: 'req/s',
  notes: 'p99 4 ms',
  ...over,
});

const meta: RunMeta = {
  date: '2026-11-27T00:00:00.000Z',
  node: 'v24.0.0',
  cpu: '2 x test cpu',
  load: 'wrk',
  loadAtStart: [1, 0.5, 0.25],
  loadAtEnd: [2.5, 1, 0.5],
  seconds: 3725,
};

describe('bench results', () => {
  it('when a figure has a target, then met is computed from the field it names, bounds included only for >= and <=', () => {
    const ratio = (op: '>=' | '<=' | '<' | '>', value: number, r: number) =>
      targetMet(figure({ ratio: r, target: { op, value, of: 'ratio' } }));
    expect([ratio('>=', 0.8, 0.8), ratio('>=', 0.8, 0.799)]).toEqual([true, false]);
    expect([ratio('<=', 0.5, 0.5), ratio('<=', 0.5, 0.501)]).toEqual([true, false]);
    expect([ratio('>', 1, 1), ratio('>', 1, 1.01)]).toEqual([false, true]);
    expect([ratio('<', 1.25, 1.25), ratio('<', 1.25, 1.2)]).toEqual([false, true]);
    // `of: 'value'` reads the value, not the ratio (peak RSS 191 MB against a JVM's 600 MB).
    const rss = figure({ value: 191, ratio: 0.3, unit: 'MB' });
    expect(targetMet({ ...rss, target: { op: '<', value: 200, of: 'value' } })).toBe(true);
    expect(targetMet({ ...rss, value: 200, target: { op: '<', value: 200, of: 'value' } })).toBe(
      false,
    );
  });

  it('when a figure has no target or an unmeasured value, then it is reported only, or not met', () => {
    expect(targetMet(figure())).toBeUndefined();
    expect(metText(figure())).toBe('reported only');
    // JSON turns NaN into null: a figure that could not be measured never counts as met.
    const unmeasured = figure({
      ratio: null as unknown as number,
      target: { op: '<=', value: 1, of: 'ratio' },
    });
    expect(metText(unmeasured)).toBe('NOT met');
  });

  it('when RESULT lines are parsed, then met is recomputed from the target, whatever the script wrote', () => {
    const line = (r: object) => `RESULT ${JSON.stringify(r)}`;
    const [a, b] = parseResults(
      [
        'a human line',
        line({
          ...figure({ ratio: 0.62, target: { op: '>=', value: 0.8, of: 'ratio', issue: 29 } }),
          met: true,
        }),
        line({ ...figure(), met: false }),
      ].join('\n'),
    );
    expect(a.met).toBe(false);
    expect(b).not.toHaveProperty('met');
    expect(describeTarget(a)).toBe('ratio >= 0.8 (issue 29)');
    expect(
      describeTarget(figure({ unit: 'MB', target: { op: '<', value: 200, of: 'value' } })),
    ).toBe('< 200 MB');
  });

  it('when the table is rendered, then it has target and met columns, a failed script as a failed row, and the run line gives load and duration', () => {
    const outcomes: Outcome[] = [
      {
        script: 'crypto.bench.ts',
        ok: true,
        exitCode: 0,
        seconds: 60,
        results: [
          figure({ target: { op: '>=', value: 0.8, of: 'ratio' } }),
          figure({ name: 'x', notes: 'a | b' }),
        ],
      },
      { script: 'pkcs7.bench.ts', ok: false, exitCode: 1, seconds: 3, results: [] },
    ];
    const lines = resultsTable(outcomes).split('\n');
    expect(lines[0]).toBe(
      '| benchmark | metric | value | baseline | baseline value | ratio | target | met | notes |',
    );
    expect(lines[2]).toContain('| ratio >= 0.8 | met |');
    expect(lines[3]).toContain('|  | reported only | a \\| b |');
    expect(lines[4]).toBe(
      '| pkcs7.bench.ts | failed (exit 1, no RESULT line) | | | | | | failed | |',
    );
    expect(readmeBlock(outcomes, meta)).toContain(
      'load average 1.00 0.50 0.25 at the start, 2.50 1.00 0.50 at the end; 62 min 5 s in all.',
    );
  });

  it('when the README block is replaced, then only the text between the markers changes, and again gives the same', () => {
    const readme = `# Keyward\n\n## Benchmarks\n\nintro\n\n${README_START}\nold table\n${README_END}\n\nprose after\n`;
    const once = replaceReadmeBlock(readme, '| new | table |\n');
    expect(once).toBe(
      `# Keyward\n\n## Benchmarks\n\nintro\n\n${README_START}\n| new | table |\n${README_END}\n\nprose after\n`,
    );
    expect(replaceReadmeBlock(once, '| new | table |\n')).toBe(once);
  });

  it('when a marker is missing, repeated or out of order, then the README is not touched and the error says why', () => {
    expect(() => replaceReadmeBlock('no markers', 'x')).toThrow(README_START);
    expect(() => replaceReadmeBlock(`${README_START}\n`, 'x')).toThrow(README_END);
    expect(() => replaceReadmeBlock(`${README_END}\n${README_START}\n`, 'x')).toThrow('once');
    expect(() =>
      replaceReadmeBlock(`${README_START}${README_END}${README_START}${README_END}`, 'x'),
    ).toThrow('once');
  });
});

describe('docs/benchmarks.md', () => {
  it('when it is read, then it holds the bench:results markers once each, so --record can rewrite the table', () => {
    const readme = readFileSync(new URL('../../../docs/benchmarks.md', import.meta.url), 'utf8');
    expect(() => replaceReadmeBlock(readme, 'table')).not.toThrow();
    expect(readme.indexOf(README_START)).toBeGreaterThan(readme.indexOf('# Benchmarks'));
  });
});
