/**
 * The CLI's download of a migration's outputs in one stream (fetchAllOutputs): small outputs are
 * written several at once, yet a SignedData's result is written only after its content, so a
 * content that fails its check leaves no result on disk and the object goes to the per-object
 * download instead. The answer here is a multipart/mixed body written by hand, as the outputs
 * endpoint sends it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchAllOutputs, type Outputs, type Run } from '../../../bin/lib/migrate-run.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A multipart/mixed answer of [source key, role, bytes] parts, then an empty page. */
function runAnswering(parts: Array<[string, string, Buffer]>, notes: string[]): Run {
  const boundary = 'b0undary';
  const body = Buffer.concat([
    ...parts.map(([key, role, bytes], i) =>
      Buffer.concat([
        Buffer.from(
          `${i ? '\r\n' : ''}--${boundary}\r\nContent-Type: application/octet-stream\r\n` +
            `Content-Length: ${bytes.length}\r\nKeyward-Source-Key: ${encodeURIComponent(key)}\r\n` +
            `Keyward-Role: ${role}\r\n\r\n`,
        ),
        bytes,
      ]),
    ),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  let calls = 0;
  const api = {
    getMigrationOutputs: async () =>
      new Response(calls++ === 0 ? body : `--${boundary}--\r\n`, {
        headers: { 'content-type': `multipart/mixed; boundary=${boundary}` },
      }),
  };
  return {
    api,
    outDir,
    progress: { note: (line: string) => notes.push(line) },
  } as unknown as Run;
}

let outDir: string;
beforeEach(() => {
  outDir = mkdtempSync(join(tmpdir(), 'keyward-outputs-stream-'));
});
afterEach(() => rmSync(outDir, { recursive: true, force: true }));

const content = Buffer.from('the signed content\r\n');
const jws = Buffer.from('{"payload":"","signatures":[]}');
const encrypted = (i: number) => Buffer.alloc(100 + i, i);
/** Source keys in the answer's (source-key) order, the signed one between the sixth and seventh. */
const m = (i: number) => `m${String(i).padStart(2, '0')}.p7m`;

function wanted(badContent = false): Map<string, Outputs> {
  const w = new Map<string, Outputs>();
  for (let i = 0; i < 12; i++)
    w.set(`in/${m(i)}`, {
      rel: m(i),
      outputs: [
        { role: 'result', key: `out/${m(i)}.jwe`, size: 100 + i, sha256: sha(encrypted(i)) },
      ],
    });
  w.set('in/m05s.p7m', {
    rel: 'm05s.p7m',
    outputs: [
      {
        role: 'content',
        key: 'out/m05s.p7m.content',
        size: content.length,
        sha256: badContent ? sha(Buffer.from('other')) : sha(content),
      },
      { role: 'result', key: 'out/m05s.p7m.jws.json', size: jws.length, sha256: sha(jws) },
    ],
  });
  return w;
}

const parts = (): Array<[string, string, Buffer]> => [
  ...Array.from({ length: 6 }, (_, i): [string, string, Buffer] => [
    `in/${m(i)}`,
    'result',
    encrypted(i),
  ]),
  ['in/m05s.p7m', 'content', content],
  ['in/m05s.p7m', 'result', jws],
  ...Array.from({ length: 6 }, (_, i): [string, string, Buffer] => [
    `in/${m(i + 6)}`,
    'result',
    encrypted(i + 6),
  ]),
];

describe('outputs downloaded in one stream', () => {
  it('when every part checks, then each output is on disk with its bytes and every object is done', async () => {
    const notes: string[] = [];
    const done = await fetchAllOutputs(runAnswering(parts(), notes), 'mig', wanted());
    expect(notes).toEqual([]);
    expect(done.size).toBe(13);
    for (let i = 0; i < 12; i++)
      expect(readFileSync(join(outDir, `${m(i)}.jwe`)).equals(encrypted(i))).toBe(true);
    expect(readFileSync(join(outDir, 'm05s.p7m.content')).equals(content)).toBe(true);
    expect(readFileSync(join(outDir, 'm05s.p7m.jws.json')).equals(jws)).toBe(true);
  });

  it('when a content fails its check, then its result is not written, the stream stops and says so, and what was written before stays done', async () => {
    const notes: string[] = [];
    const done = await fetchAllOutputs(runAnswering(parts(), notes), 'mig', wanted(true));
    expect(notes.join('\n')).toMatch(
      /in one stream stopped .*differs from what the service recorded/,
    );
    expect(existsSync(join(outDir, 'm05s.p7m.content'))).toBe(false);
    expect(existsSync(join(outDir, 'm05s.p7m.jws.json'))).toBe(false);
    expect(done.has('in/m05s.p7m')).toBe(false);
    for (let i = 0; i < 6; i++) expect(done.has(`in/${m(i)}`)).toBe(true);
  });

  it('when writing a content fails after its check, then its result is not written either', async () => {
    // A directory where the content file goes: its rename into place fails.
    mkdirSync(join(outDir, 'm05s.p7m.content', 'in-the-way'), { recursive: true });
    const notes: string[] = [];
    const done = await fetchAllOutputs(runAnswering(parts(), notes), 'mig', wanted());
    expect(notes.join('\n')).toMatch(/in one stream stopped/);
    expect(existsSync(join(outDir, 'm05s.p7m.jws.json'))).toBe(false);
    expect(done.has('in/m05s.p7m')).toBe(false);
  });
});
