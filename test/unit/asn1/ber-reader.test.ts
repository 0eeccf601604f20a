import { randomBytes } from 'node:crypto';
import { BerReader } from '../../../shared/asn1/ber-reader.ts';
import { isEoc } from '../../../shared/asn1/ber-header.ts';
import { chunked, collect } from '../../../support/fixtures/pkcs7.ts';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** An indefinite SEQUENCE holding an OID and a [0] with a constructed OCTET STRING nested twice. */
const NESTED = hex(`
  30 80
    06 03 2a 03 04
    a0 80
      24 80
        04 03 616263
        24 80 04 02 6465 04 00 00 00
        04 81 01 66
      00 00
    00 00
  00 00`);

async function contentOf(
  buf: Buffer,
  size: number,
  random = false,
): Promise<{ content: Buffer; ber: boolean; end: boolean }> {
  const r = new BerReader(chunked(buf, size, random), { batchSize: 2 });
  r.enter(await r.readHeader());
  await r.skipBody(await r.readHeader());
  r.enter(await r.readHeader());
  const content = await collect(r.octets(await r.readHeader()));
  expect(await r.more()).toBe(false);
  await r.leave();
  await r.leave();
  return { content, ber: r.ber, end: await r.atEof() };
}

describe('BerReader', () => {
  it('when a constructed OCTET STRING nests segments, then octets() yields their concatenation', async () => {
    expect(await contentOf(NESTED, 1000)).toEqual({
      content: Buffer.from('abcdef'),
      ber: true,
      end: true,
    });
  });

  it('when the input comes one byte at a time or split at random, then the result is the same', async () => {
    expect((await contentOf(NESTED, 1)).content.toString()).toBe('abcdef');
    for (let i = 0; i < 50; i++)
      expect((await contentOf(NESTED, 5, true)).content.toString()).toBe('abcdef');
  });

  it('when octets() reuses its batch buffer, then a consumer that copies each chunk sees the same bytes, gathered in one buffer', async () => {
    // 4 KiB segments as `openssl cms -stream` writes them, arriving in 1000-byte reads.
    const content = randomBytes(100_000);
    const segments: Buffer[] = [];
    for (let at = 0; at < content.length; at += 4096) {
      const piece = content.subarray(at, at + 4096);
      segments.push(hex(`04 82 ${piece.length.toString(16).padStart(4, '0')}`), piece);
    }
    const ber = Buffer.concat([hex('24 80'), ...segments, hex('00 00')]);
    const r = new BerReader(chunked(ber, 1000), { batchSize: 16 * 1024 });
    const copies: Buffer[] = [];
    const stores = new Set<ArrayBufferLike>();
    for await (const c of r.octets(await r.readHeader(), { reuse: true })) {
      copies.push(Buffer.from(c)); // what a hash or a decipher does: consume before the next
      stores.add(c.buffer);
    }
    expect(Buffer.concat(copies).equals(content)).toBe(true);
    expect(copies.length).toBeGreaterThan(3);
    expect(stores.size).toBe(1);
    expect(stores.has(ber.buffer)).toBe(false); // gathered, not views of the input
  });

  it('when segments nest 60 deep, then the content still streams', async () => {
    let inner = hex('04 01 7a');
    for (let i = 0; i < 60; i++) inner = Buffer.concat([hex('24 80'), inner, hex('00 00')]);
    const r = new BerReader(chunked(inner, 3));
    expect((await collect(r.octets(await r.readHeader()))).toString()).toBe('z');
  });

  it('when a DER element is read, then ber stays false and the header reports the definite length', async () => {
    const r = new BerReader(chunked(Buffer.concat([hex('30 82 0100'), Buffer.alloc(256)]), 1));
    const h = await r.readHeader();
    expect(h).toMatchObject({
      tagClass: 0,
      constructed: true,
      tag: 16,
      length: 256,
      headerLength: 4,
      offset: 0,
    });
    await r.skipBody(h);
    expect(r.ber).toBe(false);
    expect(await r.atEof()).toBe(true);
  });

  it('when the input is empty, then peekHeader answers null', async () => {
    expect(await new BerReader(chunked(Buffer.alloc(0), 1)).peekHeader()).toBeNull();
  });

  it('when a length is 2^62, then it is refused as malformed', async () => {
    const r = new BerReader(chunked(hex('04 88 4000000000000000 00'), 1));
    await expect(r.readHeader()).rejects.toMatchObject({ code: 'cms_malformed', status: 400 });
  });

  it('when a length field has 9 bytes, then it is refused as malformed', async () => {
    await expect(
      new BerReader(chunked(hex('04 89 010000000000000000'), 4)).readHeader(),
    ).rejects.toMatchObject({ code: 'cms_malformed' });
  });

  it('when a length exceeds the input, then streaming the value ends in cms-truncated', async () => {
    const r = new BerReader(chunked(hex('04 83 100000 010203'), 2));
    await expect(collect(r.octets(await r.readHeader()))).rejects.toMatchObject({
      code: 'cms_truncated',
      status: 400,
    });
  });

  it('when an indefinite element never ends, then skipping it ends in cms-truncated', async () => {
    const r = new BerReader(chunked(hex('30 80 02 01 01'), 1));
    await expect(r.skipBody(await r.readHeader())).rejects.toMatchObject({ code: 'cms_truncated' });
  });

  it('when hundreds of indefinite lengths nest, then the depth limit refuses them', async () => {
    const deep = Buffer.concat([
      ...Array(300).fill(hex('30 80')),
      ...Array(300).fill(hex('00 00')),
    ]);
    const r = new BerReader(chunked(deep, 64));
    await expect(r.skipBody(await r.readHeader())).rejects.toMatchObject({
      code: 'cms_malformed',
      message: expect.stringMatching(/nesting/),
    });
  });

  it('when a child overruns its definite-length parent, then it is malformed', async () => {
    const r = new BerReader(chunked(hex('30 03 04 05 0102030405'), 8));
    r.enter(await r.readHeader());
    await expect(r.readHeader()).rejects.toMatchObject({
      code: 'cms_malformed',
      message: expect.stringMatching(/overruns/),
    });
  });

  it('when a captured element is larger than the cap, then cms-element-too-large, even in indefinite form', async () => {
    const big = Buffer.concat([hex('30 80 04 82 0400'), Buffer.alloc(1024), hex('00 00')]);
    const r = new BerReader(chunked(big, 100));
    await expect(r.capture(await r.readHeader(), 512)).rejects.toMatchObject({
      code: 'cms_too_large',
      slug: 'cms-element-too-large',
    });
    const r2 = new BerReader(chunked(big, 100));
    expect((await r2.capture(await r2.readHeader(), 2048)).equals(big)).toBe(true);
  });

  it('when the end-of-contents marker has a length, then it is malformed', async () => {
    await expect(new BerReader(chunked(hex('00 01 00'), 1)).readHeader()).rejects.toMatchObject({
      code: 'cms_malformed',
    });
  });

  it('when an EOC is read, then isEoc recognises it', async () => {
    expect(isEoc(await new BerReader(chunked(hex('00 00'), 1)).readHeader())).toBe(true);
  });

  it('when random bytes are walked, then every outcome is a problem or a clean end, never a hang', async () => {
    for (let i = 0; i < 300; i++) {
      const r = new BerReader(chunked(randomBytes(1 + (i % 200)), 1 + (i % 7)));
      try {
        while (!(await r.atEof())) await r.skipBody(await r.readHeader());
      } catch (err) {
        expect((err as { code: string }).code).toMatch(/^cms_(malformed|truncated|too_large)$/);
      }
    }
  });
});
