import { MultipartScanner, type ScannerOptions } from '../../../shared/mime/multipart.ts';
import { MixedReader, mixedBoundary } from '../../../shared/jose/mixed-reader.ts';
import { AppError } from '../../../shared/errors/index.ts';

class Malformed extends Error {}

/** A scanner over `body` cut into `size`-byte chunks. */
function scanner(body: string, opts: Partial<ScannerOptions> = {}, size = 3): MultipartScanner {
  const bytes = Buffer.from(body, 'latin1');
  let at = 0;
  const pull = async () => {
    if (at >= bytes.length) return null;
    at += size;
    return bytes.subarray(at - size, at);
  };
  return new MultipartScanner(pull, {
    boundary: 'XB',
    malformed: (why) => new Malformed(why),
    ...opts,
  });
}

async function text(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks).toString('latin1');
}

const twoParts =
  '--XB\r\nContent-Type: a/b\r\nX-Other: 1\r\n\r\none\r\n--XB\r\n\r\ntwo\r\n--XB--\r\n';

describe('the one multipart scanner', () => {
  it('when a body has two parts in small chunks, then their headers (lower-cased names) and bytes come back in order', async () => {
    const s = scanner(twoParts);
    const a = await s.next();
    expect(Object.fromEntries(a!.headers)).toEqual({ 'content-type': 'a/b', 'x-other': '1' });
    expect(await text(a!.body)).toBe('one');
    const b = await s.next();
    expect(b!.headers.size).toBe(0);
    expect(await text(b!.body)).toBe('two');
    expect(await s.next()).toBeNull();
  });

  it.each([
    ['whole', twoParts],
    ['after a preamble', `junk\r\n${twoParts}`],
    ['after an empty first line', `\r\n${twoParts}`],
  ])(
    'when a body %s comes in one chunk, then its parts come back as in small chunks',
    async (_what, body) => {
      for (const size of [3, body.length]) {
        const s = scanner(body, {}, size);
        expect(await text((await s.next())!.body)).toBe('one');
        expect(await text((await s.next())!.body)).toBe('two');
        expect(await s.next()).toBeNull();
      }
    },
  );

  it('when a preamble is a lone line end, then its cap counts it the same in one chunk as in small chunks', async () => {
    const body = `\r\n${twoParts}`;
    for (const size of [1, 3, body.length]) {
      await expect(scanner(body, { maxPreambleBytes: 1 }, size).next()).rejects.toThrow(
        'it does not start with the boundary delimiter',
      );
      const s = scanner(body, { maxPreambleBytes: 2 }, size);
      expect(await text((await s.next())!.body)).toBe('one');
    }
  });

  it("when a skipped part's body is read after next(), then it fails instead of handing out the next part's bytes (the mixed reader gave them)", async () => {
    const s = scanner(twoParts);
    const a = await s.next();
    const b = await s.next();
    await expect(text(a!.body)).rejects.toThrow('the part was skipped');
    expect(await text(b!.body)).toBe('two');
  });

  it.each([
    ['a boundary over 70 characters (RFC 2046)', { boundary: 'x'.repeat(71) }, twoParts],
    ['a preamble past its cap', { maxPreambleBytes: 0 }, `junk\r\n${twoParts}`],
    ['an epilogue past its cap', { maxEpilogueBytes: 4 }, `${twoParts}12345`],
    ['part headers past their cap', { maxHeaderBytes: 8 }, twoParts],
    ['more than 80 bytes of transport padding', {}, `--XB${' '.repeat(81)}\r\n\r\nx\r\n--XB--`],
    ['a header line without a colon', {}, '--XB\r\nno colon\r\n\r\nx\r\n--XB--'],
    ['a body cut inside a part', {}, '--XB\r\n\r\nunfinished'],
    ['a body cut inside part headers', {}, '--XB\r\nContent-Type: a/b'],
  ])('when it gets %s, then the layer’s malformed problem', async (_what, opts, body) => {
    await expect(
      (async () => {
        const s = scanner(body, opts);
        for (let p = await s.next(); p; p = await s.next()) await text(p.body);
      })(),
    ).rejects.toBeInstanceOf(Malformed);
  });

  it('when a preamble, padding and an epilogue are within their caps, then they are dropped', async () => {
    const s = scanner(`preamble\r\n--XB \t\r\n\r\nx\r\n--XB--\r\nepilogue`, {
      maxEpilogueBytes: 20,
    });
    expect(await text((await s.next())!.body)).toBe('x');
    expect(await s.next()).toBeNull();
  });
});

describe('the multipart/mixed layer on it', () => {
  it.each([
    ['multipart/mixed; boundary="----service-abc"', '----service-abc'],
    ['Multipart/Mixed;boundary=abc; charset=x', 'abc'],
    ['multipart/mixed; boundary=a/b', null],
    [`multipart/mixed; boundary=${'x'.repeat(71)}`, null],
    ['multipart/form-data; boundary=abc', null],
    [undefined, null],
  ])('when the Content-Type is %s, then the boundary is %s', (type, want) => {
    expect(mixedBoundary(type)).toBe(want);
  });

  it('when a part repeats its Content-Type, then the first one is its type, like a form-data part', async () => {
    const body = '--XB\r\nContent-Type: A/B\r\nContent-Type: c/d\r\n\r\nx\r\n--XB--';
    const reader = new MixedReader(
      (async function* () {
        yield Buffer.from(body);
      })(),
      'XB',
    );
    expect((await reader.nextSmall(10))?.contentType).toBe('a/b');
  });

  it('when the body is cut, then a 400 jose-malformed problem', async () => {
    const reader = new MixedReader(
      (async function* () {
        yield Buffer.from('--XB\r\n\r\nunfinished');
      })(),
      'XB',
    );
    const err = await reader.nextSmall(100).catch((e: unknown) => e);
    expect(err instanceof AppError && [err.status, err.slug]).toEqual([400, 'jose-malformed']);
  });
});

describe('the scanner on mail (lineEnds any, parseHeaders false)', () => {
  const mail =
    'preamble\n--XB\nContent-Type: text/plain\r\n\r\nhello\r\nworld\r\n\n--XB\r\nContent-Type: x/y\n\nsig\r\n--XB--\n';

  it.each([1, 2, 3, 5, 64, 1000])(
    'when LF and CRLF delimiters mix (chunks of %i), then each part comes whole with its headers and without the line end before the next delimiter',
    async (size) => {
      const s = scanner(mail, { lineEnds: 'any', parseHeaders: false }, size);
      const a = await s.next();
      expect(a!.headers.size).toBe(0);
      expect(await text(a!.body)).toBe('Content-Type: text/plain\r\n\r\nhello\r\nworld\r\n');
      expect(await text((await s.next())!.body)).toBe('Content-Type: x/y\n\nsig');
      expect(await s.next()).toBeNull();
    },
  );

  it('when the default CRLF mode meets LF delimiters, then it finds no part (HTTP bodies keep RFC 2046 strictly)', async () => {
    const s = scanner(mail, { maxPreambleBytes: 1000 });
    // Everything up to the one CRLF delimiter, the closing one, reads as preamble.
    expect(await s.next()).toBeNull();
  });
});
