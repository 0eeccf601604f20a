import { Certificate } from '@peculiar/asn1-x509';
import { ASN1_LIMITS, parseAsn, unsignedInteger, walk } from '../../../shared/asn1/der.ts';
import { AppError } from '../../../shared/errors/index.ts';

/** `depth` SEQUENCEs, each holding the next, around an INTEGER (definite lengths, DER). */
function nested(depth: number): Buffer {
  let inner = Buffer.from([0x02, 0x01, 0x01]);
  for (let i = 0; i < depth; i++) {
    const len = inner.length;
    const head =
      len < 0x80
        ? Buffer.from([0x30, len])
        : len < 0x100
          ? Buffer.from([0x30, 0x81, len])
          : Buffer.from([0x30, 0x82, len >> 8, len & 0xff]);
    inner = Buffer.concat([head, inner]);
  }
  return inner;
}

function thrown(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error('nothing thrown');
}

describe('the one bounded ASN.1 parse', () => {
  // Regression: the CMS engine parsed its captured elements with the library defaults (depth 100),
  // the keystore with these limits; both now use the same ones.
  it.each(['cms_malformed', 'keystore_malformed'] as const)(
    'when the input nests deeper than the limit, then it is %s, for either reader',
    (code) => {
      const err = thrown(() =>
        parseAsn(nested(ASN1_LIMITS.berOptions.maxDepth + 8), Certificate, 'certificate', code),
      );
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({ code, message: 'certificate is not valid DER' });
      expect(String(err.cause)).toMatch(/nesting depth exceeded/);
    },
  );

  it('when the input has more elements than the node limit, then it is refused', () => {
    const items = Buffer.concat(
      Array.from({ length: ASN1_LIMITS.berOptions.maxNodes + 10 }, () => Buffer.from([0x05, 0x00])),
    );
    const seq = Buffer.concat([
      Buffer.from([
        0x30,
        0x83,
        items.length >> 16,
        (items.length >> 8) & 0xff,
        items.length & 0xff,
      ]),
      items,
    ]);
    const err = thrown(() => parseAsn(seq, Certificate, 'certificate', 'cms_malformed'));
    expect(err).toMatchObject({ code: 'cms_malformed' });
    expect(String(err.cause)).toMatch(/node count exceeded/);
  });

  it('when walk meets a length past the end or an indefinite length, then it answers null rather than reading on', () => {
    expect(walk(Buffer.from([0x30, 0x05, 0x02, 0x01]))).toBeNull();
    expect(walk(Buffer.from([0x30, 0x80, 0x00, 0x00]))).toBeNull();
    expect(walk(Buffer.from([0x30, 0x85, 0x01, 0x00, 0x00, 0x00, 0x00]))).toBeNull();
  });

  it('when an INTEGER has its sign byte, then unsignedInteger drops it (one copy for serials of both readers)', () => {
    expect(unsignedInteger(Uint8Array.from([0x00, 0x9f, 0x01]))).toEqual(Buffer.from([0x9f, 0x01]));
    expect(unsignedInteger(Uint8Array.from([0x00]))).toEqual(Buffer.from([0x00]));
  });
});
