import { randomBytes } from 'node:crypto';
import { convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  decryptJweParts,
  makeKey,
  parseMultipart,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let key: TestKey;
let data: Buffer;
let der: Buffer;

beforeAll(() => {
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'armour-rsa', 'rsa-2048');
  data = randomBytes(5000);
  ssl.write('data.bin', data);
  der = cms.encrypt(ssl, 'data.bin', {
    to: key,
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
  });
});

afterAll(() => ssl.cleanup());

const armour = (begin: string, end = begin) =>
  Buffer.from(
    `-----BEGIN ${begin}-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END ${end}-----\n`,
  );

const convert = async (file: Buffer, chunk = 37) => {
  const r = await convertPkcs7ToJose(chunked(file, chunk), {
    metadata: {},
    resolver: resolverFor([key]),
  });
  return parseMultipart(await collect(r.body), r.contentType);
};

describe('armour labels of other producers', () => {
  it.each([
    'PKCS7',
    'CMS',
    'PKCS #7 SIGNED DATA',
    'PKCS7 SIGNED DATA',
    'SIGNED MESSAGE',
    'ENCRYPTED MESSAGE',
  ])('when the label is %s, then the CMS inside converts', async (label) => {
    const { parts, closed } = await convert(armour(label));
    expect(closed).toBe(true);
    expect((await decryptJweParts(parts, key.privateKey)).plaintext.equals(data)).toBe(true);
  });

  it.each([1, 7, 4096])(
    'when the END line names another label (chunks of %i), then cms-pem-end-mismatch',
    async (chunk) => {
      await expect(
        convert(armour('ENCRYPTED MESSAGE', 'SIGNED MESSAGE'), chunk),
      ).rejects.toMatchObject({
        code: 'cms_pem_end_mismatch',
        message: expect.stringContaining('"-----END SIGNED MESSAGE-----"'),
      });
    },
  );

  it('when the END line is missing, then still cms-pem-unterminated', async () => {
    const cut = armour('CMS').toString().replace('-----END CMS-----\n', '');
    await expect(convert(Buffer.from(cut))).rejects.toMatchObject({
      code: 'cms_pem_unterminated',
    });
  });

  it('when the label holds no CMS, then cms-malformed names the labels that do', async () => {
    await expect(convert(armour('CERTIFICATE'))).rejects.toMatchObject({
      code: 'cms_malformed',
      message: expect.stringContaining('ENCRYPTED MESSAGE'),
    });
  });
});
