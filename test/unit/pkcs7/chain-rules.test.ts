/**
 * verify: "chain" holds the path to what each certificate is for: the signer's certificate is
 * one for signing mail (RFC 8550 section 4.4: keyUsage, extendedKeyUsage) and each CA above it
 * may issue what is below it (RFC 5280: keyCertSign, pathLenConstraint, nameConstraints). Each
 * refusal is cms-signer-untrusted, as `openssl cms -verify` refuses the same files.
 */
import { randomBytes } from 'node:crypto';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { issuedKey } from '../../../support/fixtures/cert-chain.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let root: TestKey;
const content = randomBytes(1024);

beforeAll(() => {
  ssl = new OpenSslDir();
  root = makeKey(ssl, 'rules-root', 'ec-p256');
  ssl.write('content.bin', content);
});
afterAll(() => ssl.cleanup());

const CA = 'basicConstraints=critical,CA:TRUE';

/** An attached SignedData by `signer` carrying `chain` (openssl cms -sign -certfile). */
function signed(signer: TestKey, chain: TestKey[]): Buffer {
  const certfile = chain.length
    ? ssl.write(`${signer.kid}-chain.pem`, Buffer.concat(chain.map((k) => ssl.read(k.certFile))))
    : null;
  return cms.sign(ssl, 'content.bin', {
    by: signer,
    detached: false,
    binary: true,
    outform: 'DER',
    extra: [...(certfile ? ['-certfile', certfile] : [])],
  });
}

/** What openssl cms -verify says of the file against the root: true when it verifies. */
function opensslVerifies(file: Buffer): boolean {
  ssl.write('verify-in.der', file);
  try {
    ssl.run([
      'cms',
      '-verify',
      '-binary',
      '-inform',
      'DER',
      '-in',
      'verify-in.der',
      '-CAfile',
      root.certFile,
      '-out',
      '/dev/null',
    ]);
    return true;
  } catch {
    return false;
  }
}

/** The conversion with verify: chain, the signer held by the tenant and `root` its anchor. */
async function chain(
  file: Buffer,
  signer: TestKey,
): Promise<{ ok: boolean; code?: string; message?: string }> {
  const resolver = Object.assign(resolverFor([signer]), {
    trustAnchors: async () => [root.certificate],
  });
  try {
    const r = await convertPkcs7ToJose(chunked(file, 8192), {
      metadata: { verify: 'chain' },
      resolver,
    });
    await collect(r.body);
    return { ok: true };
  } catch (err) {
    return { ok: false, code: (err as { code: string }).code, message: (err as Error).message };
  }
}

describe('verify: chain and what the certificates are for', () => {
  it('when the signer certificate is a TLS server certificate (keyEncipherment, serverAuth), then cms-signer-untrusted, as openssl refuses it', async () => {
    const tls = issuedKey(ssl, 'tls-server', root, [
      'keyUsage=critical,keyEncipherment',
      'extendedKeyUsage=serverAuth',
    ]);
    const file = signed(tls, []);
    expect(opensslVerifies(file)).toBe(false);
    expect(await chain(file, tls)).toEqual({
      ok: false,
      code: 'cms_signer_untrusted',
      message: expect.stringContaining('keyUsage'),
    });
  });

  it('when only the extendedKeyUsage lacks emailProtection, then cms-signer-untrusted naming it', async () => {
    const k = issuedKey(ssl, 'code-signer', root, [
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=codeSigning',
    ]);
    const r = await chain(signed(k, []), k);
    expect(r).toEqual({
      ok: false,
      code: 'cms_signer_untrusted',
      message: expect.stringContaining('extendedKeyUsage'),
    });
  });

  it('when the signer certificate is for mail (digitalSignature or nonRepudiation, emailProtection or anyExtendedKeyUsage), then it is chain-verified', async () => {
    const mail = issuedKey(ssl, 'mail-signer', root, [
      'keyUsage=critical,digitalSignature,nonRepudiation',
      'extendedKeyUsage=emailProtection',
    ]);
    expect(opensslVerifies(signed(mail, []))).toBe(true);
    expect(await chain(signed(mail, []), mail)).toEqual({ ok: true });
    const nr = issuedKey(ssl, 'nr-signer', root, [
      'keyUsage=nonRepudiation',
      'extendedKeyUsage=anyExtendedKeyUsage',
    ]);
    expect(await chain(signed(nr, []), nr)).toEqual({ ok: true });
  });

  it("when an intermediate's pathLenConstraint is 0 and another CA stands below it, then cms-signer-untrusted; within the constraint, verified", async () => {
    const top = issuedKey(ssl, 'plen-top', root, [`${CA},pathlen:0`]);
    const under = issuedKey(ssl, 'plen-under', top, [CA]);
    const leaf = issuedKey(ssl, 'plen-leaf', under);
    const file = signed(leaf, [under, top]);
    expect(opensslVerifies(file)).toBe(false);
    expect(await chain(file, leaf)).toEqual({
      ok: false,
      code: 'cms_signer_untrusted',
      message: expect.stringContaining('allows 0 CA certificate(s) below it'),
    });
    const direct = issuedKey(ssl, 'plen-direct', top);
    expect(await chain(signed(direct, [top]), direct)).toEqual({ ok: true });
  });

  it('when an intermediate has a keyUsage without keyCertSign, then it issues nothing: cms-signer-untrusted', async () => {
    // OpenSSL's issuer match already passes such a CA over, so no path reaches the anchor.
    const ca = issuedKey(ssl, 'nocertsign-ca', root, [CA, 'keyUsage=critical,digitalSignature']);
    const leaf = issuedKey(ssl, 'nocertsign-leaf', ca);
    expect(await chain(signed(leaf, [ca]), leaf)).toEqual({
      ok: false,
      code: 'cms_signer_untrusted',
      message: expect.any(String),
    });
  });

  it("when a CA's nameConstraints permit one mail domain, then a signer outside it is cms-signer-untrusted and one inside is verified", async () => {
    const ca = issuedKey(ssl, 'nc-ca', root, [
      CA,
      'nameConstraints=critical,permitted;email:example.org',
    ]);
    const outside = issuedKey(ssl, 'nc-outside', ca, ['subjectAltName=email:mallory@example.com']);
    const file = signed(outside, [ca]);
    expect(opensslVerifies(file)).toBe(false);
    expect(await chain(file, outside)).toEqual({
      ok: false,
      code: 'cms_signer_untrusted',
      message: expect.stringContaining('outside the permitted subtrees'),
    });
    const inside = issuedKey(ssl, 'nc-inside', ca, ['subjectAltName=email:alice@example.org']);
    expect(await chain(signed(inside, [ca]), inside)).toEqual({ ok: true });
  });

  it('when a CA excludes a directory subtree, then a signer named in it is cms-signer-untrusted, one named elsewhere verified', async () => {
    const ca = issuedKey(ssl, 'ncx-ca', root, [
      CA,
      'nameConstraints=critical,excluded;dirName:ncx_dir',
      '[ncx_dir]',
      'O=Excluded Org',
    ]);
    const banned = issuedKey(ssl, 'ncx-banned', ca, [], { subject: '/O=Excluded Org/CN=banned' });
    const file = signed(banned, [ca]);
    expect(opensslVerifies(file)).toBe(false);
    expect(await chain(file, banned)).toEqual({
      ok: false,
      code: 'cms_signer_untrusted',
      message: expect.stringContaining('excluded subtrees'),
    });
    const fine = issuedKey(ssl, 'ncx-fine', ca, [], { subject: '/O=Other Org/CN=fine' });
    expect(await chain(signed(fine, [ca]), fine)).toEqual({ ok: true });
  });
});
