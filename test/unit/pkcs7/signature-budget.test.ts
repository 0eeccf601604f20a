/**
 * What a SignedData may make the converter spend on signature checks: one bound per conversion
 * over the signers and the certificate links together, no issuer walk for verify: signature, and
 * carried certificates whose key the import would refuse never tried. The checks are counted, not
 * timed: every certificate link is an X509Certificate.verify, every signer a SignerInfo check.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { jest } from '@jest/globals';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import { MAX_SIGNATURE_CHECKS } from '../../../shared/pkcs7/signature-budget.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { hostileSignedData, hostileSigner } from '../../../support/fixtures/hostile-cms.ts';
import { issuedKey } from '../../../support/fixtures/cert-chain.ts';

let ssl: OpenSslDir;
let signer: TestKey;
const content = randomBytes(2048);

beforeAll(() => {
  ssl = new OpenSslDir();
  signer = hostileSigner(ssl);
});
afterAll(() => ssl.cleanup());
afterEach(() => jest.restoreAllMocks());

/** Converts `file` with the tenant holding `keys`; the answer's JWS, or the problem thrown. */
async function convert(file: Buffer, metadata: object, keys: TestKey[] = [signer]) {
  const result = await convertPkcs7ToJose(chunked(file, 16384), {
    metadata,
    resolver: resolverFor(keys),
  });
  return JSON.parse((await collect(result.body)).toString()) as { protected: string };
}

const linkChecks = () => jest.spyOn(X509Certificate.prototype, 'verify');

const problemOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return { code: (err as { code: string }).code, message: (err as Error).message };
  }
  throw new Error('expected a problem');
};

describe('the bound on signature checks of one conversion', () => {
  it('when one signer is repeated 64 times among 63 decoy CAs and verify is signature, then it converts without any issuer walk and records the certificate alone', async () => {
    // Decoys with an ordinary exponent: the old walk tried each of them for each signer (4,032 checks).
    const file = hostileSignedData(ssl, signer, content, { exponentBits: 17 });
    const links = linkChecks();
    const jws = await convert(file, { verify: 'signature' });
    expect(links).not.toHaveBeenCalled();
    const header = JSON.parse(Buffer.from(jws.protected, 'base64url').toString());
    expect(header.kw_signers).toHaveLength(64);
    for (const s of header.kw_signers)
      expect(s).toEqual(
        expect.objectContaining({
          x5c: [signer.certificate.toString('base64')],
          verified: 'signature',
        }),
      );
  });

  it('when the decoy CAs carry a 3072-bit key with a huge public exponent and verify is chain, then none of them is ever tried: cms-signer-untrusted', async () => {
    const file = hostileSignedData(ssl, signer, content, { signers: 4 });
    const links = linkChecks();
    const p = await problemOf(convert(file, { verify: 'chain' }));
    expect(p.code).toBe('cms_signer_untrusted');
    expect(links).not.toHaveBeenCalled();
  });

  it('when the decoys have acceptable keys and verify is chain, then each link is checked once for all the signers, within the bound', async () => {
    const file = hostileSignedData(ssl, signer, content, { exponentBits: 17 });
    const links = linkChecks();
    const p = await problemOf(convert(file, { verify: 'chain' }));
    expect(p.code).toBe('cms_signer_untrusted');
    // 63 links, once each; then the 64 signers: at most the bound together.
    expect(links).toHaveBeenCalledTimes(63);
  });

  it('when the signers and their links need more checks than the bound, then the conversion is refused with cms-unsupported naming it', async () => {
    // Three signers under one intermediate, 60 decoys named like it before it in the file: each
    // signer is a new child for every decoy, so the links add up (3 x 62 and the signers).
    const root = makeKey(ssl, 'budget-root', 'rsa-2048');
    const int = issuedKey(ssl, 'budget-int', root, ['basicConstraints=critical,CA:TRUE']);
    const [a, b, c] = ['budget-a', 'budget-b', 'budget-c'].map((kid) => issuedKey(ssl, kid, int));
    const file = hostileSignedData(ssl, a, content, {
      signers: 1,
      others: [b, c],
      decoys: 60,
      decoyOf: int,
      exponentBits: 17,
      extra: [int.certificate],
    });
    const resolver = Object.assign(resolverFor([a, b, c]), {
      trustAnchors: async () => [root.certificate],
    });
    // Two signers alone stay within the bound and lead to the anchor.
    const two = hostileSignedData(ssl, a, content, {
      signers: 1,
      others: [b],
      decoys: 60,
      decoyOf: int,
      exponentBits: 17,
      extra: [int.certificate],
    });
    const ok = await convertPkcs7ToJose(chunked(two, 16384), {
      metadata: { verify: 'chain' },
      resolver,
    });
    // Each signer's own key signs: a General JWS, each signature recording both signers.
    const jws = JSON.parse((await collect(ok.body)).toString());
    const header = JSON.parse(Buffer.from(jws.signatures[0].protected, 'base64url').toString());
    expect(header.kw_signers.map((s: { verified: string }) => s.verified)).toEqual([
      'chain',
      'chain',
    ]);

    const links = linkChecks();
    const p = await problemOf(
      convertPkcs7ToJose(chunked(file, 16384), { metadata: { verify: 'chain' }, resolver }),
    );
    expect(p).toEqual({
      code: 'cms_unsupported',
      message: expect.stringContaining(`more than ${MAX_SIGNATURE_CHECKS} signature checks`),
    });
    expect(links.mock.calls.length).toBeLessThanOrEqual(MAX_SIGNATURE_CHECKS);
  });
});
