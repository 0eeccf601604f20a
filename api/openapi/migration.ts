/**
 * OpenAPI paths of the streaming PKCS#7/CMS endpoints (spec 4 and 4.1, contract 5): analyze
 * (and its unversioned alias), convert, and the stream re-encrypt and re-sign of convert
 * results. Bodies of any size stream in and out; errors are problem details whose slugs are
 * listed per status.
 */
import { problems, type Schema } from './components.ts';

const str = { type: 'string' };
const b64u = { type: 'string', pattern: '^[A-Za-z0-9_-]*$', description: 'base64url' };
const obj = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});
const Algorithm = obj({ oid: str, name: str });
const Certificate = {
  oneOf: [
    obj({
      subject: str,
      issuer: str,
      serialNumber: str,
      notBefore: { type: 'string', format: 'date-time' },
      notAfter: { type: 'string', format: 'date-time' },
    }),
    { type: 'null' },
  ],
};
const Identifier = obj(
  {
    type: { enum: ['issuerAndSerialNumber', 'subjectKeyIdentifier', 'kekIdentifier', 'other'] },
    issuer: str,
    serialNumber: str,
    subjectKeyIdentifier: str,
    kekId: str,
  },
  ['type'],
);
const kid = {
  type: ['string', 'null'],
  description: 'the imported key of this tenant that matches the identifier, or null',
};

const Analysis = obj(
  {
    contentType: {
      enum: ['signedData', 'envelopedData', 'authEnvelopedData', 'signedAndEnvelopedData'],
    },
    encoding: { enum: ['der', 'ber'] },
    container: {
      enum: ['der', 'ber', 'pem', 'base64', 'smime', 'multipart-signed'],
      description:
        'the archive form the CMS object was found in (contract 9): binary DER or BER, PEM armour (PKCS7 or CMS), bare base64, an S/MIME entity (application/pkcs7-mime, alone or inside a mail), or a clear-signed multipart/signed message',
    },
    contentLength: {
      type: 'integer',
      description:
        'bytes of eContent or encryptedContent; 0 for a detached SignedData, the signed MIME entity for a clear-signed message',
    },
    detached: { type: 'boolean' },
    innerContentType: Algorithm,
    signers: {
      type: 'array',
      items: obj({
        identifier: Identifier,
        digestAlgorithm: Algorithm,
        signatureAlgorithm: Algorithm,
        signedAttributes: { type: 'boolean' },
        certificate: Certificate,
        kid,
        verifiedWith: {
          enum: ['tenant-key', 'embedded-certificate', null],
          description:
            'what verifies this signer (contract 10): a tenant key of its identifier (its own key pair, or a certificate imported to verify only), else the certificate the file carries; null: neither (the conversion answers cms-key-not-imported or cms-signer-certificate-mismatch)',
        },
      }),
    },
    certificatesOnly: {
      type: 'boolean',
      description:
        'present (true) for a certificates-only SignedData (.p7b): no signers and no content; it converts to a JWK Set of its certificates',
    },
    certificateCount: { type: 'integer', description: 'with certificatesOnly' },
    signing: {
      type: ['object', 'null'],
      description:
        "who signs the JWS when the metadata names no signerKid (contract 10): `archive-key`, the tenant's archive signing key (key setting archiveSigning), else `signer-key`, each signer's own key, `kids` listing those the tenant holds with sign among their usages (the reason names a key refused for its usage). Absent for an enveloped-only file",
      properties: {
        path: { enum: ['archive-key', 'signer-key'] },
        kids: { type: 'array', items: { type: 'string' } },
      },
    },
    recipients: {
      type: 'array',
      items: obj(
        {
          type: { enum: ['keyTransport', 'keyAgreement', 'kek', 'password', 'other'] },
          identifier: Identifier,
          keyEncryptionAlgorithm: Algorithm,
          keyWrapAlgorithm: Algorithm,
          certificate: Certificate,
          kid,
        },
        ['type', 'identifier', 'keyEncryptionAlgorithm', 'certificate', 'kid'],
      ),
    },
    decryption: {
      type: 'object',
      description:
        "the key that decrypts when the metadata names no recipientKid nor password, chosen by the converter's own recipient choice: `kid` is that key, or the key it found and refuses (a key without encrypt among its usages), then with convertible false and the reason naming it; null when no key of the tenant names a recipient. Present for an encrypted form when keys were looked up",
      properties: { kid: { type: ['string', 'null'] } },
    },
    contentEncryption: { oneOf: [Algorithm, { type: 'null' }] },
    convertible: { type: 'boolean' },
    reason: {
      type: 'string',
      description:
        'why convertible is false; a key refused for its usage is named with its usages (e.g. "key partner has usage sign, not encrypt")',
    },
  },
  [
    'contentType',
    'encoding',
    'container',
    'contentLength',
    'detached',
    'innerContentType',
    'signers',
    'recipients',
    'contentEncryption',
    'convertible',
  ],
);

const Metadata = obj(
  {
    signerKid: {
      type: 'string',
      description:
        "the key that signs the JWS (a signing key of the tenant). Default: the tenant's archive signing key (key setting archiveSigning), else each CMS signer's own key found by its SignerInfo identifier. The CMS signers are always verified with their own certificates (carried in the file, or imported to verify only), never with this key",
    },
    verify: {
      enum: ['signature', 'chain'],
      default: 'signature',
      description:
        "signature: each CMS signer's signature is checked with its certificate. chain: the certificate must also lead, through the file's certificates, to one of the tenant's trust anchors (verify-only certificates with trustAnchor); otherwise 422 cms-signer-untrusted. Validity periods are not checked (archived signatures outlive their certificates)",
    },
    recipientKid: {
      type: 'string',
      description:
        'the CMS recipient key, picking one of several recipients; default: the first recipient, in file order, whose key the tenant holds (found by the RecipientInfo identifiers)',
    },
    targetKid: {
      oneOf: [
        { type: 'string' },
        { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 16, uniqueItems: true },
      ],
      description:
        'who the new JWE is for; default the recipient key (an X25519 or X448 recipient key receives no JWE: name a target). A list of 1 to 16 distinct encryption keys gives part 1 in General JSON Serialization with one recipient per target (one content key wrapped for each)',
    },
    password: {
      type: 'string',
      format: 'password',
      description:
        'opens a password recipient (RFC 3211 PWRI); needs targetKid; never logged or stored; jobs refuse it. A wrong password is decryption-failed',
    },
    contentEncryption: {
      enum: ['A128GCM', 'A192GCM', 'A256GCM', 'preserve'],
      description:
        'default: AES-CBC of n bits becomes AnGCM, anything else A256GCM; preserve keeps the AES-CBC ciphertext byte for byte as AnCBC-HSm',
    },
    keyManagement: {
      type: 'string',
      description: 'default RSA-OAEP-256 for RSA targets, ECDH-ES+A256KW for EC targets',
    },
    b64: {
      type: 'boolean',
      default: false,
      description: 'false: RFC 7797 unencoded detached payload (listed in crit)',
    },
  },
  [],
);

const FlatJws = obj(
  {
    protected: {
      ...b64u,
      description:
        'BASE64URL of the protected header: alg (follows the signing key: RS256/PS256 for RSA, PS256/384/512 for RSASSA-PSS keys by the hash their parameters bind, ES256/384/512 by curve, EdDSA for Ed25519 and Ed448), kid `<kid>#<version>`, b64 and crit when b64 is false, and `kw_signers`: one entry per original CMS signer, `{x5c, signingTime, digestAlg, verified}`, x5c being the signer certificate first then the chain found (base64 DER), signingTime ISO 8601 or null, digestAlg the CMS digest (sha256, sha3-256, shake256...), verified `signature` or `chain`. The JWS has no x5c of its own',
    },
    signature: b64u,
    header: obj({ kid: str }),
  },
  ['protected', 'signature'],
);
const Jws = {
  oneOf: [
    FlatJws,
    obj(
      {
        signatures: {
          type: 'array',
          items: FlatJws,
          description:
            'General JSON Serialization (RFC 7515 section 7.2.1, payload detached): one signature per signing key, when the CMS signers are verified and signed with their own keys and more than one key signs',
        },
      },
      ['signatures'],
    ),
  ],
};
const JWE_LAYOUT =
  'multipart/mixed with boundary `----service-<UUID>`, CRLF lines: part 1 `application/jose+json` `{protected, recipients: [{header: {alg, kid}, encrypted_key}], iv}` (AAD = ASCII(protected)); part 2 `application/octet-stream` the ciphertext followed by the tag; for SignedAndEnvelopedData and EnvelopedData of SignedData a part 3 `application/jose+json` with the detached JWS over the content; then the closing delimiter. A response cut off without the closing delimiter is not a result: the input turned out bad after the body began.';
const binary = { type: 'string', format: 'binary' };

const RSA_OAEP = { oid: '1.2.840.113549.1.1.1', name: 'rsaEncryption' };
const ANALYSIS_EXAMPLE = {
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
  convertible: true,
};
const JWS_EXAMPLE = {
  protected:
    'eyJhbGciOiJQUzI1NiIsImI2NCI6ZmFsc2UsImNyaXQiOlsiYjY0Il0sImtpZCI6InBhcnRuZXItc2lnbmluZyMxIn0',
  signature: 'Zm9vYmFyLXNpZ25hdHVyZS1zaG9ydGVuZWQ',
};
const JWE_EXAMPLE =
  '------service-0b7e5f3c-2a1d-4e6f-9c8b-7a6d5e4f3a2b\r\nContent-Type: application/jose+json\r\n\r\n{"protected":"eyJlbmMiOiJBMjU2R0NNIn0","recipients":[{"header":{"alg":"RSA-OAEP-256","kid":"archive-2026#1"},"encrypted_key":"..."}],"iv":"..."}\r\n------service-0b7e5f3c-2a1d-4e6f-9c8b-7a6d5e4f3a2b\r\nContent-Type: application/octet-stream\r\n\r\n(ciphertext and tag)\r\n------service-0b7e5f3c-2a1d-4e6f-9c8b-7a6d5e4f3a2b--\r\n';

const SELECT = {
  name: 'X-Response-Content-Type',
  in: 'header',
  required: false,
  description:
    "Spec 4.1: selects the response content type among the endpoint's response types. The default, application/problem+json, constrains nothing (the input decides the result type; errors are problems). Another value asserts the result type: when the input converts to another type the answer is 406 before any output; application/json labels a JWS object as JSON. Accept is honoured the same way: an Accept admitting none of the endpoint's types nor application/problem+json is 406 before the body is read.",
};
const selectHeader = (types: string[]) => ({
  ...SELECT,
  schema: { enum: ['application/problem+json', ...types], default: 'application/problem+json' },
});
const kidQuery = {
  name: 'kid',
  in: 'query',
  required: true,
  schema: str,
  description: 'the target key of this tenant',
  example: 'archive-2027',
};

const COMMON = {
  401: 'missing, invalid or expired bearer token, or the wrong audience',
  403: 'the role lacks the permission',
  406: 'not-acceptable: Accept (or X-Response-Content-Type) admits none of the result types',
  429: 'rate-limited (Retry-After)',
};
const CMS_ERRORS = {
  400: 'cms-malformed (the detail names what the input looks like), cms-truncated, cms-base64-invalid, cms-base64-truncated, cms-pem-unterminated, cms-pem-end-mismatch (an armour END line of another label), cms-mime-no-body, cms-mime-too-deep, cms-multipart-signed-malformed, cms-bad-metadata, decryption-failed (a small input whose padding or tag fails before the answer begins), validation-failed (missing or misplaced part), bad-request (malformed multipart)',
  404: 'cms-key-not-imported: a signer or recipient key (or a kid of the metadata) is not imported in this tenant',
  409: 'key-suspended, key-revoked: the matching imported key is not active',
  413: 'cms-element-too-large, cms-mime-header-too-large (a MIME header block over 64 KiB), payload-too-large (a flattened JSON JWE over CONVERT_JSON_MAX_BYTES) (metadata part over 64 KiB)',
  415: 'cms-unsupported (type, algorithm, no recipient the engine can open), cms-content-indefinite (a PKCS#7 v1.5 content that is not an OCTET STRING, without a length), cms-nesting-too-deep (CMS content types nested more than 4 levels: a SignedData inside a SignedData or an EnvelopedData, and so on), unsupported-media-type',
  422: 'cms-signature-invalid, cms-signer-untrusted (verify: chain, and no trust anchor leads to the signer), cms-signer-certificate-mismatch (the carried certificates name someone other than the signer), cms-mime-no-cms (a mail with no S/MIME part), cms-key-unusable, cms-eddsa-content-too-large, key-usage-mismatch (a signer key of usage encrypt, or a recipient or target key of usage sign)',
};

const analyze = (operationId: string, summary: string) => ({
  post: {
    operationId,
    summary,
    tags: ['migration'],
    description:
      'Permission migration.analyze; service-admin or service-core token. Reads the PKCS#7/CMS file in one streaming pass (constant memory whatever the size) and reports its type, encoding, archive form (DER, BER, PEM, base64, S/MIME, clear-signed multipart/signed: contract 9), signers, recipients, algorithms, the matching imported kids and whether it converts.',
    requestBody: {
      required: true,
      content: {
        'multipart/form-data': { schema: obj({ file: binary }) },
        'application/pkcs7-mime': { schema: binary },
        'message/rfc822': { schema: binary },
        'application/octet-stream': { schema: binary },
      },
    },
    responses: {
      200: {
        description: 'the analysis',
        content: { 'application/json': { schema: Analysis, example: ANALYSIS_EXAMPLE } },
      },
      ...problems({ ...COMMON, ...CMS_ERRORS }),
    },
  },
});

const CONVERT_TYPES = [
  'application/octet-stream',
  'multipart/mixed',
  'application/json',
  'application/jose+json',
];

export const migrationPaths = {
  '/api/v3/migration/stream/analyze-pkcs7': analyze('analyzePkcs7', 'Analyze a PKCS#7/CMS file'),
  '/api/migration/stream/analyze-pkcs7': analyze(
    'legacyAnalyzePkcs7',
    'Analyze a PKCS#7/CMS file (unversioned alias of spec 4)',
  ),
  '/api/v3/migration/stream/convert-pkcs7-to-jose': {
    post: {
      operationId: 'convertPkcs7ToJose',
      summary: 'Convert a PKCS#7/CMS file of any size to detached JOSE',
      tags: ['migration'],
      'x-keyward-decrypts': true,
      description:
        'Permission migration.convert; an encrypted input (EnvelopedData, AuthEnvelopedData, SignedAndEnvelopedData, signed-then-encrypted mail) is decrypted, so it needs crypto.decrypt as well (403 before anything is decrypted otherwise; contract 10). Every failure of content decryption is one decryption-failed, the same status, body and point of the answer whatever failed (key transport padding, key length, CBC padding, tag, anything wrong in the decrypted content such as its inner signature); a key that cannot be unwrapped is replaced by a random one. Each principal has a decryption-failure budget per key (DECRYPT_FAILURE_BUDGET per DECRYPT_FAILURE_WINDOW_SECONDS, shared with runtime decrypt, stream re-encrypt and jobs): past it, 429 with Retry-After. Service-admin or service-core token. Parts in this order: `metadata` (a JSON object, `{}` is enough), `file`, and for a detached SignedData (.p7s) `content`. A file part of at most 1 MiB is read whole before the engine starts, to see whether a content part follows; a larger file part streams at once and must carry its content. SignedData answers after the whole input (signature verified before anything is signed), unless `Accept` prefers `multipart/mixed` (or X-Response-Content-Type names it): then the signed content streams as part 1 (application/octet-stream) and the JWS follows as part 2 (application/jose+json); EnvelopedData streams with backpressure. Outputs of up to 64 KiB are complete before the status line, so small bad inputs get a problem; later failures cut the response without its closing delimiter.',
      parameters: [selectHeader(CONVERT_TYPES)],
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: obj(
              {
                metadata: { ...Metadata, description: 'JSON object, first part' },
                file: binary,
                content: {
                  ...binary,
                  description: 'the signed content of a detached SignedData, third part',
                },
              },
              ['metadata', 'file'],
            ),
            encoding: { metadata: { contentType: 'application/json' } },
            example: {
              metadata: { targetKid: 'archive-2026', contentEncryption: 'A256GCM' },
              file: '(the .p7m file)',
            },
          },
        },
      },
      responses: {
        200: {
          description: `SignedData: the detached JWS object (application/octet-stream, or application/json when asked for); a certificates-only SignedData (.p7b): a JWK Set of its certificates (application/jwk-set+json, each key with its certificate as x5c; jobs and Accept: multipart/mixed answer 415 cms-unsupported for it). EnvelopedData, AuthEnvelopedData, SignedAndEnvelopedData: ${JWE_LAYOUT}`,
          content: {
            'application/octet-stream': { schema: Jws },
            'application/json': { schema: Jws, example: JWS_EXAMPLE },
            'multipart/mixed': { schema: binary, example: JWE_EXAMPLE },
            'application/jwk-set+json': {
              schema: obj({ keys: { type: 'array', items: { type: 'object' } } }, ['keys']),
            },
            'application/jose+json': {
              schema: {
                description:
                  'for Accept: application/jose+json: an enveloped input as one flattened JSON JWE (RFC 7516 7.2.2: protected, header, encrypted_key, iv, ciphertext, tag), content at most CONVERT_JSON_MAX_BYTES (413 beyond; 406 for a result with a JWS part); a SignedData as its JWS object',
                type: 'object',
              },
            },
          },
        },
        ...problems({ ...COMMON, ...CMS_ERRORS }),
      },
    },
  },
  '/api/v3/crypto/stream/reencrypt': {
    post: {
      operationId: 'streamReencrypt',
      summary: 'Re-encrypt a convert JWE for another key, streaming',
      tags: ['crypto'],
      'x-keyward-decrypts': true,
      description:
        'Permissions crypto.stream.reencrypt and crypto.decrypt (opening the content key decrypts; contract 10); service-core token. Failures count against the decryption-failure budget (429 past it), and a content key that cannot be unwrapped is replaced by a random one, so it fails at the tag like any other failure. The body is the multipart/mixed result of convert exactly as returned (with its Content-Type and boundary). The content key is opened with the tenant key the recipient header names and wrapped for `kid` (RSA-OAEP-256 for RSA, ECDH-ES+A256KW for EC, AnKW for AES keys); the ciphertext and tag pass byte for byte, the tag being checked on the way. With rotateContentKey=true the content is re-encrypted under a fresh key and IV with AES-GCM of the same key size (AnCBC-HSm becomes AnGCM). A trailing JWS part passes unchanged. A tag that fails cuts the answer before its closing delimiter (or is a 400 problem when the input is small).',
      parameters: [
        kidQuery,
        {
          name: 'rotateContentKey',
          in: 'query',
          required: false,
          schema: { type: 'boolean', default: false },
        },
        selectHeader(['multipart/mixed']),
      ],
      requestBody: { required: true, content: { 'multipart/mixed': { schema: binary } } },
      responses: {
        200: {
          description: `the same layout for the target key: ${JWE_LAYOUT}`,
          content: {
            'multipart/mixed': {
              schema: binary,
              example: JWE_EXAMPLE.replaceAll('archive-2026#1', 'archive-2027#1'),
            },
          },
        },
        ...problems({
          ...COMMON,
          400: 'decryption-failed (wrong key, bad tag), jose-malformed, validation-failed (kid missing)',
          404: 'key-not-found: the source or target kid is not a key of this tenant',
          409: 'key-suspended, key-revoked',
          415: 'unsupported-media-type (not multipart/mixed), jose-unsupported (enc, alg, several recipients, zip, crit)',
          422: 'cms-key-unusable: the target key cannot receive a JWE; key-usage-mismatch: the source or target key is not of usage encrypt',
        }),
      },
    },
  },
  '/api/v3/crypto/stream/resign': {
    post: {
      operationId: 'streamResign',
      summary: 'Re-sign a convert JWS with another key, streaming',
      tags: ['crypto'],
      description:
        'Permission crypto.stream.resign; service-core token. Parts in order: `signature` (the JWS object exactly as convert returned it) then `file` (the content it covers). The old signature is verified with the tenant key its kid names while the content streams; the answer is a new detached JWS of the same form (same b64, kid in protected) by `kid`, whose alg follows that key (the hash size and PS family of the old alg are kept where the key allows).',
      parameters: [kidQuery, selectHeader(['application/octet-stream', 'application/json'])],
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: obj({ signature: Jws, file: binary }),
            encoding: { signature: { contentType: 'application/json' } },
          },
        },
      },
      responses: {
        200: {
          description: 'the new detached JWS object',
          content: {
            'application/octet-stream': { schema: Jws },
            'application/json': { schema: Jws, example: JWS_EXAMPLE },
          },
        },
        ...problems({
          ...COMMON,
          400: 'jose-malformed, validation-failed (missing or misplaced part, kid missing)',
          404: 'key-not-found: the old or target kid is not a key of this tenant',
          409: 'key-suspended, key-revoked',
          415: 'jose-unsupported (alg, crit, attached payload), unsupported-media-type',
          422: 'signature-invalid, jose-content-too-large (EdDSA over 64 MiB), cms-key-unusable (the target key cannot sign), key-usage-mismatch (the source or target key is not of usage sign)',
        }),
      },
    },
  },
};
