import { randomBytes } from 'node:crypto';
import { decodeBase64, type Base64Fault } from '../../../shared/mime/base64.ts';

class Fault extends Error {
  readonly kind: Base64Fault;
  readonly at: number;
  constructor(kind: Base64Fault, at: number) {
    super(kind);
    this.kind = kind;
    this.at = at;
  }
}

async function decode(text: string, size: number, onDash?: (r: Buffer) => void): Promise<Buffer> {
  const bytes = Buffer.from(text, 'latin1');
  const chunks = (async function* () {
    for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
  })();
  const out: Buffer[] = [];
  for await (const c of decodeBase64(chunks, { fault: (k, at) => new Fault(k, at), onDash }))
    out.push(c);
  return Buffer.concat(out);
}

describe('the streaming base64 decoder', () => {
  const data = randomBytes(10_001);
  const lines = (w: number, eol: string) =>
    (data.toString('base64').match(new RegExp(`.{1,${w}}`, 'g')) ?? []).join(eol) + eol;

  it.each([
    [1, 64, '\n'],
    [7, 76, '\r\n'],
    [4096, 64, '\r\n'],
    [65536, 10_000_000, ''],
    [3, 61, ' \t\r\n'],
  ])(
    'when base64 comes in chunks of %i with lines of %i, then the bytes come back exactly',
    async (size, width, eol) => {
      expect((await decode(lines(width, eol), size)).equals(data)).toBe(true);
    },
  );

  it('when lines change width midway or carry spaces, then the exact path takes over and the bytes still come back', async () => {
    const b64 = data.toString('base64');
    const mixed =
      (b64.slice(0, 6400).match(/.{64}/g) ?? []).join('\r\n') +
      '\r\n' +
      (b64.slice(6400, 6460).match(/.{1,30}/g) ?? []).join('\n') +
      '\n' +
      (b64.slice(6460).match(/.{1,64}/g) ?? []).join(' \n') +
      '\n';
    for (const size of [1, 100, 4096, 65536])
      expect((await decode(mixed, size)).equals(data)).toBe(true);
  });

  it('when a full-width line in the middle holds a stray character, then it is refused as invalid', async () => {
    const text = lines(64, '\n');
    const at = 64 * 50 + 50 + 10; // inside line 51
    const bad = text.slice(0, at) + '*' + text.slice(at + 1);
    for (const size of [7, 65536])
      await expect(decode(bad, size)).rejects.toMatchObject({ kind: 'invalid' });
  });

  it('when a small message comes whole in one chunk, then its full lines and its short last line decode, and a bad character in that last line is refused at the same offset as line by line', async () => {
    const small = randomBytes(3_001);
    const text = (small.toString('base64').match(/.{1,64}/g) ?? []).join('\r\n') + '\r\n';
    expect((await decode(text, text.length)).equals(small)).toBe(true);
    const at = text.lastIndexOf('\r\n', text.length - 3) + 4;
    const bad = text.slice(0, at) + '*' + text.slice(at + 1);
    const faults = await Promise.all(
      [text.length, 1, 64].map((size) => decode(bad, size).catch((e: unknown) => e as Fault)),
    );
    for (const f of faults) expect(f).toMatchObject({ kind: 'invalid', at: faults[0].at });
  });

  it('when the padding is left out, then the last group still decodes', async () => {
    expect(
      (await decode(Buffer.from('abcd').toString('base64').replace(/=+$/, ''), 1)).toString(),
    ).toBe('abcd');
  });

  it.each([
    ['a character outside the alphabet', 'QUJD*REVG', 'invalid'],
    ['a non-ASCII byte', 'QUJD\xc1REVG', 'invalid'],
    ['padding in the middle', 'QUI=QUJD', 'invalid'],
    ['text after the padding', 'QUI=\nQUJD', 'invalid'],
    ['one character after the last quartet', 'QUJDR', 'truncated'],
  ])('when it holds %s, then it is refused as %s', async (_n, text, kind) => {
    for (const size of [1, 2, 100])
      await expect(decode(text, size)).rejects.toMatchObject({ kind });
  });

  it('when a dash starts armour after the base64, then decoding stops there and hands the rest over', async () => {
    let rest = '';
    const out = await decode('QUJD\nREVG\n-----END CMS-----\n', 5, (r) => (rest = r.toString()));
    expect(out.toString()).toBe('ABCDEF');
    expect(rest.startsWith('-')).toBe(true);
  });
});
