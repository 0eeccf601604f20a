/**
 * The header block reader against a plain reference (a regular expression over the whole text):
 * the same end and fields however the input is cut into chunks, CRLF or LF, an empty block, and
 * the cap.
 */
import { ByteSource, readHeaderBlock } from '../../../shared/mime/entity.ts';

const fault = (f: { kind: string }) => new Error(f.kind);
const opts = { maxHeaderBytes: 200, fault };

async function* pieces(bytes: Buffer, cuts: number[]) {
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    if (c > at) yield bytes.subarray(at, c);
    at = c;
  }
}

async function read(bytes: Buffer, cuts: number[]) {
  const src = new ByteSource(pieces(bytes, cuts));
  const fields = await readHeaderBlock(src, opts);
  const rest: Buffer[] = [];
  for await (const c of src) rest.push(c);
  return { fields: Object.fromEntries(fields), rest: Buffer.concat(rest).toString('latin1') };
}

/** Where the reference says the block ends: the first blank line, or a line end at the start. */
function reference(text: string) {
  const m = /^\r?\n|\r?\n\r?\n/.exec(text)!;
  return text.slice(m.index + m[0].length);
}

const BLOCKS = [
  'Content-Type: application/pkcs7-mime\r\nContent-Transfer-Encoding: base64\r\n\r\nQUJD\r\n',
  'Content-Type: text/plain\n\nbody\n\nmore',
  'A: 1\r\n\nB: not a field\r\n',
  'A: 1\n\r\nbody',
  'A: 1\r\n folded\r\n\r\n\r\nbody',
  'X-Long: ' + 'y'.repeat(120) + '\r\n\r\nbody',
];

describe('readHeaderBlock', () => {
  it.each(BLOCKS.map((b, i) => [i, b]))(
    'when block %i is read whole, cut once anywhere or byte by byte, then it ends where the reference ends it',
    async (_i, text) => {
      const bytes = Buffer.from(text as string, 'latin1');
      const whole = await read(bytes, []);
      expect(whole.rest).toBe(reference(text as string));
      for (let cut = 1; cut < bytes.length; cut++) expect(await read(bytes, [cut])).toEqual(whole);
      const each = Array.from({ length: bytes.length - 1 }, (_, k) => k + 1);
      expect(await read(bytes, each)).toEqual(whole);
    },
  );

  it.each(['\r\nbody', '\nbody'])(
    'when a block starts with a line end (%j), then it is refused however cut',
    async (text) => {
      const bytes = Buffer.from(text, 'latin1');
      for (const cuts of [[], [1], [2]])
        await expect(read(bytes, cuts)).rejects.toThrow(/bad-header|no-body/);
    },
  );

  it('when no blank line comes within the cap, then the block is refused as too large', async () => {
    const bytes = Buffer.from(`A: ${'z'.repeat(300)}\r\n\r\nbody`);
    await expect(read(bytes, [])).rejects.toThrow('headers-too-large');
    await expect(read(bytes, [100, 250])).rejects.toThrow('headers-too-large');
  });

  it('when the input ends before a blank line, then it is an entity without a body', async () => {
    await expect(read(Buffer.from('A: 1\r\nB: 2\r\n'), [5])).rejects.toThrow('no-body');
  });
});
