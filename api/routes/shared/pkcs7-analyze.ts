/**
 * POST analyze-pkcs7: the JSON analysis of a PKCS#7/CMS input, read in one
 * streaming pass from a multipart form's file part or from the raw body. One row, served at
 * /api/v3/migration/stream/analyze-pkcs7 and at the unversioned alias.
 *
 * Tests: test/integration/migration/convert.test.ts,
 *   test/integration/migration/producers-signed.test.ts
 */
import type { Request } from 'express';
import Type from 'typebox';
import { endpoint, type Endpoint } from '../../rows/endpoint.ts';
import {
  isMultipartForm,
  streamMultipart,
  type StreamingForm,
} from '../../http/streaming-multipart.ts';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';
import { rawBody } from '../../http/streaming.ts';
import { streamedOperation } from '../../rows/streamed-operation.ts';
import { CMS_PROBLEMS } from '../../schemas/streams.ts';
import { analyzePkcs7 } from '../../../shared/pkcs7/index.ts';
import { problem } from '../../../shared/errors/index.ts';

/**
 * Media types a raw (non-multipart) analyze body may have (RFC 8551 section 3.2.1, RFC 5751); a
 * whole mail (.eml) is message/rfc822. What the bytes are is found from the bytes.
 */
const RAW_TYPES = [
  'application/pkcs7-mime',
  'application/x-pkcs7-mime',
  'application/pkcs7-signature',
  'application/x-pkcs7-signature',
  'message/rfc822',
  'application/octet-stream',
];

/** The `file` part of a form: other parts (a metadata part sent out of habit) are skipped. */
async function filePartOf(form: StreamingForm): Promise<AsyncIterable<Buffer>> {
  for (let part = await form.next(); part; part = await form.next()) {
    if (part.name === 'file') return part.body;
  }
  throw problem('validation_failed', 'the file part (the PKCS#7/CMS file) is required');
}

/** The raw (non-multipart) body, after its media type is checked. */
function rawInput(req: Request): AsyncIterable<Buffer> {
  if (!req.is(RAW_TYPES)) {
    throw problem(
      'unsupported_media_type',
      `send multipart/form-data with a file part, or the file itself as ${RAW_TYPES.join(', ')}`,
    );
  }
  return rawBody(req);
}

const Str = () => Type.String();
const Algorithm = () => Type.Object({ oid: Str(), name: Str() });
const Certificate = () =>
  Type.Union([
    Type.Object({
      subject: Str(),
      issuer: Str(),
      serialNumber: Str(),
      notBefore: Type.String({ format: 'date-time' }),
      notAfter: Type.String({ format: 'date-time' }),
    }),
    Type.Null(),
  ]);
const Identifier = () =>
  Type.Object({
    type: Type.Enum(['issuerAndSerialNumber', 'subjectKeyIdentifier', 'kekIdentifier', 'other']),
    issuer: Type.Optional(Str()),
    serialNumber: Type.Optional(Str()),
    subjectKeyIdentifier: Type.Optional(Str()),
    kekId: Type.Optional(Str()),
  });
const Kid = () =>
  Type.Union([Type.String(), Type.Null()], {
    description: 'the imported key of this tenant that matches the identifier, or null',
  });

const RSA_OAEP = { oid: '1.2.840.113549.1.1.1', name: 'rsaEncryption' };

/** The analysis of a PKCS#7/CMS input. */
const Analysis = Type.Object(
  {
    contentType: Type.Enum([
      'signedData',
      'envelopedData',
      'authEnvelopedData',
      'signedAndEnvelopedData',
    ]),
    encoding: Type.Enum(['der', 'ber']),
    container: Type.Enum(['der', 'ber', 'pem', 'base64', 'smime', 'multipart-signed'], {
      description:
        'the archive form the CMS object was found in: binary DER or BER, PEM armour (PKCS7 or CMS), bare base64, an S/MIME entity (application/pkcs7-mime, alone or inside a mail), or a clear-signed multipart/signed message',
    }),
    contentLength: Type.Integer({
      description:
        'bytes of eContent or encryptedContent; 0 for a detached SignedData, the signed MIME entity for a clear-signed message',
    }),
    detached: Type.Boolean(),
    innerContentType: Algorithm(),
    signers: Type.Array(
      Type.Object({
        identifier: Identifier(),
        digestAlgorithm: Algorithm(),
        signatureAlgorithm: Algorithm(),
        signedAttributes: Type.Boolean(),
        certificate: Certificate(),
        kid: Kid(),
        verifiedWith: Type.Union([Type.Enum(['tenant-key', 'embedded-certificate']), Type.Null()], {
          description:
            'what verifies this signer: a tenant key of its identifier (its own key pair, or a certificate imported to verify only), else the certificate the file carries; null: neither (the conversion answers cms-key-not-imported or cms-signer-certificate-mismatch)',
        }),
      }),
    ),
    certificatesOnly: Type.Optional(
      Type.Boolean({
        description:
          'present (true) for a certificates-only SignedData (.p7b): no signers and no content; it converts to a JWK Set of its certificates',
      }),
    ),
    certificateCount: Type.Optional(Type.Integer({ description: 'with certificatesOnly' })),
    signing: Type.Optional(
      Type.Union(
        [
          Type.Object({
            path: Type.Optional(Type.Enum(['archive-key', 'signer-key'])),
            kids: Type.Optional(Type.Array(Str())),
          }),
          Type.Null(),
        ],
        {
          description:
            "who signs the JWS when the metadata names no signerKid: `archive-key`, the tenant's archive signing key (key setting archiveSigning), else `signer-key`, each signer's own key, `kids` listing those the tenant holds with sign among their usages (the reason names a key refused for its usage). Absent for an enveloped-only file",
        },
      ),
    ),
    recipients: Type.Array(
      Type.Object({
        type: Type.Enum(['keyTransport', 'keyAgreement', 'kek', 'password', 'other']),
        identifier: Identifier(),
        keyEncryptionAlgorithm: Algorithm(),
        keyWrapAlgorithm: Type.Optional(Algorithm()),
        certificate: Certificate(),
        kid: Kid(),
      }),
    ),
    decryption: Type.Optional(
      Type.Object(
        { kid: Type.Optional(Type.Union([Type.String(), Type.Null()])) },
        {
          description:
            "the key that decrypts when the metadata names no recipientKid nor password, chosen by the converter's own recipient choice: `kid` is that key, or the key it found and refuses (a key without encrypt among its usages), then with convertible false and the reason naming it; null when no key of the tenant names a recipient. Present for an encrypted form when keys were looked up",
        },
      ),
    ),
    contentEncryption: Type.Union([Algorithm(), Type.Null()]),
    signatureChecked: Type.Boolean({
      description:
        'whether the analysis checked the CMS signatures over the content: false, as analyze reads the structure, algorithms, certificates and keys, never a signature (the content of an encrypted form is not even decrypted). So convertible true says a conversion has the keys and algorithms it needs, not that the signature is valid: convert checks it (422 cms-signature-invalid, or decryption-failed inside encrypted content)',
    }),
    convertible: Type.Boolean({
      description:
        'true when the keys and algorithms a conversion needs are in place (see signatureChecked: the signature itself is checked by convert); false with the reason',
    }),
    reason: Type.Optional(
      Type.String({
        description:
          'why convertible is false; a key refused for its usage is named with its usages (e.g. "key partner has usage sign, not encrypt")',
      }),
    ),
  },
  {
    examples: [
      {
        contentType: 'envelopedData',
        encoding: 'der',
        container: 'smime',
        contentLength: 1048576,
        detached: false,
        innerContentType: { oid: '1.2.840.113549.1.7.1', name: 'data' },
        signers: [],
        recipients: [
          {
            type: 'keyTransport',
            identifier: {
              type: 'issuerAndSerialNumber',
              issuer: 'CN=Partner CA,O=Partner',
              serialNumber: '5A3C91E0',
            },
            keyEncryptionAlgorithm: RSA_OAEP,
            certificate: {
              subject: 'CN=Archive,O=Acme',
              issuer: 'CN=Partner CA,O=Partner',
              serialNumber: '5A3C91E0',
              notBefore: '2026-01-01T00:00:00.000Z',
              notAfter: '2028-01-01T00:00:00.000Z',
            },
            kid: 'archive-2026',
          },
        ],
        decryption: { kid: 'archive-2026' },
        contentEncryption: { oid: '2.16.840.1.101.3.4.1.42', name: 'aes256-CBC' },
        signatureChecked: false,
        convertible: true,
      },
    ],
  },
);

const binary = () => Type.String({ format: 'binary' });

/**
 * The analyze row, at /api/v3/migration/stream (analyzePkcs7) and at the unversioned alias
 * /api/migration/stream: reads the file (a form's `file` part or the raw body) in one
 * streaming pass and answers its analysis.
 */
export const analyzeEndpoint = (operationId: string, summary: string): Endpoint =>
  endpoint({
    method: 'post',
    path: '/analyze-pkcs7',
    operationId,
    tag: 'migration',
    summary,
    description:
      'Service-admin or service-core token. Reads the PKCS#7/CMS file in one streaming pass (constant memory whatever the size) and reports its type, encoding, archive form (DER, BER, PEM, base64, S/MIME, clear-signed multipart/signed), signers, recipients, algorithms, the matching imported kids and whether it converts.',
    access: { anyOf: ['migration.analyze'] },
    budget: 'migration.analyze',
    negotiate: { types: ['application/json'] },
    request: {
      media: {
        'multipart/form-data': { schema: Type.Object({ file: binary() }) },
        'application/pkcs7-mime': {},
        'message/rfc822': {},
        'application/octet-stream': {},
      },
    },
    answer: {
      status: 200,
      description: 'the analysis',
      media: 'application/json',
      schema: Analysis,
    },
    problems: CMS_PROBLEMS,
    handle: (ctx, input) =>
      streamedOperation(ctx, input, 'migration.analyze', async (op) => {
        const { req, res } = input;
        // The form is held from its start, so a failure while its parts are read still abandons it
        // (the reader stops reading ahead and discards the rest) before the problem is written.
        op.form = isMultipartForm(req) ? streamMultipart(req) : null;
        const file = op.form ? await filePartOf(op.form) : rawInput(req);
        const analysis = await analyzePkcs7(
          op.countIn(file),
          tenantKeyResolver(ctx, input.claims.tenantId, null),
        );
        // Parts after `file` are not read; the connection closes instead of waiting on them.
        if (op.form) op.form.abandon(res);
        const body = JSON.stringify(analysis);
        res.status(200).type('application/json').send(body);
        op.bytesOut = body.length;
        op.details = { contentType: analysis.contentType, convertible: analysis.convertible };
      }),
  });
