/**
 * What the route rows of the streaming PKCS#7/CMS and JOSE endpoints share: the detached JWS object
 * and the multipart JWE layout that convert answers and re-sign and re-encrypt take back, their
 * examples, and the problems of reading a CMS input. The rows are in
 * api/routes/v3/migration/stream.ts, api/routes/v3/crypto/stream.ts and ./pkcs7-analyze.ts (analyze
 * and its unversioned alias).
 */
import Type from 'typebox';

const B64u = (description = 'base64url') =>
  Type.String({ pattern: '^[A-Za-z0-9_-]*$', description });

const FlatJws = Type.Object({
  protected: B64u(
    'BASE64URL of the protected header: alg (follows the signing key: RS256/PS256 for RSA, PS256/384/512 for RSASSA-PSS keys by the hash their parameters bind, ES256/384/512 by curve, EdDSA for Ed25519 and Ed448), kid `<kid>#<version>`, b64 and crit when b64 is false, and `kw_signers`: one entry per original CMS signer, `{x5c, signingTime, digestAlg, verified}`, x5c being the signer certificate first then the chain found (base64 DER), signingTime ISO 8601 or null, digestAlg the CMS digest (sha256, sha3-256, shake256...), verified `signature` or `chain`. The JWS has no x5c of its own',
  ),
  signature: B64u(),
  header: Type.Optional(Type.Object({ kid: Type.String() })),
});

/** The detached JWS object of a SignedData (flattened, or general with one signature per key). */
export const Jws = Type.Union([
  FlatJws,
  Type.Object({
    signatures: Type.Array(FlatJws, {
      description:
        'General JSON Serialization (RFC 7515 section 7.2.1, payload detached): one signature per signing key, when the CMS signers are verified and signed with their own keys and more than one key signs',
    }),
  }),
]);

export const JWS_EXAMPLE = {
  protected:
    'eyJhbGciOiJQUzI1NiIsImI2NCI6ZmFsc2UsImNyaXQiOlsiYjY0Il0sImtpZCI6InBhcnRuZXItc2lnbmluZyMxIn0',
  signature: 'Zm9vYmFyLXNpZ25hdHVyZS1zaG9ydGVuZWQ',
};

/** The multipart/mixed JWE that convert answers and re-encrypt takes and answers. */
export const JWE_LAYOUT =
  'multipart/mixed with boundary `----service-<UUID>`, CRLF lines: part 1 `application/jose+json` `{protected, recipients: [{header: {alg, kid}, encrypted_key}], iv}` (AAD = ASCII(protected)); part 2 `application/octet-stream` the ciphertext followed by the tag; for SignedAndEnvelopedData and EnvelopedData of SignedData a part 3 `application/jose+json` with the detached JWS over the content; then the closing delimiter. A response cut off without the closing delimiter is not a result: the input turned out bad after the body began.';

export const JWE_EXAMPLE =
  '------service-0b7e5f3c-2a1d-4e6f-9c8b-7a6d5e4f3a2b\r\nContent-Type: application/jose+json\r\n\r\n{"protected":"eyJlbmMiOiJBMjU2R0NNIn0","recipients":[{"header":{"alg":"RSA-OAEP-256","kid":"archive-2026#1"},"encrypted_key":"..."}],"iv":"..."}\r\n------service-0b7e5f3c-2a1d-4e6f-9c8b-7a6d5e4f3a2b\r\nContent-Type: application/octet-stream\r\n\r\n(ciphertext and tag)\r\n------service-0b7e5f3c-2a1d-4e6f-9c8b-7a6d5e4f3a2b--\r\n';

/** The `kid` query of re-encrypt and re-sign: the target key. */
export const TargetKid = () =>
  Type.String({
    minLength: 1,
    maxLength: 256,
    description: 'the target key of this tenant',
    examples: ['archive-2027'],
  });

/** The problems of reading and converting a CMS input (analyze and convert), by status. */
export const CMS_PROBLEMS = {
  400: 'cms-malformed (the detail names what the input looks like), cms-truncated, cms-base64-invalid, cms-base64-truncated, cms-pem-unterminated, cms-pem-end-mismatch (an armour END line of another label), cms-mime-no-body, cms-mime-too-deep, cms-multipart-signed-malformed, cms-bad-metadata, decryption-failed (a small input whose padding or tag fails before the answer begins), validation-failed (missing or misplaced part), bad-request (malformed multipart)',
  404: 'cms-key-not-imported: a signer or recipient key (or a kid of the metadata) is not imported in this tenant',
  409: 'key-suspended, key-revoked: the matching imported key is not active',
  413: 'cms-element-too-large, cms-mime-header-too-large (a MIME header block over 64 KiB), payload-too-large (a flattened JSON JWE over CONVERT_JSON_MAX_BYTES) (metadata part over 64 KiB)',
  415: 'cms-unsupported (type, algorithm, no recipient the engine can open), cms-content-indefinite (a PKCS#7 v1.5 content that is not an OCTET STRING, without a length), cms-nesting-too-deep (CMS content types nested more than 4 levels: a SignedData inside a SignedData or an EnvelopedData, and so on), unsupported-media-type',
  422: 'cms-signature-invalid, cms-signer-untrusted (verify: chain, and no trust anchor leads to the signer, or a certificate on the path is not fit for its place), cms-signer-certificate-mismatch (the carried certificates name someone other than the signer), cms-mime-no-cms (a mail with no S/MIME part), cms-key-unusable, cms-eddsa-content-too-large, key-usage-mismatch (a signer key of usage encrypt, or a recipient or target key of usage sign)',
};

/** The 429 of an operation that decrypts: its endpoint budget, or the caller's decryption-failure budget of a key. */
export const DECRYPTING_429 =
  "the client's budget for this endpoint is spent, or its decryption-failure budget for the key (DECRYPT_FAILURE_BUDGET per DECRYPT_FAILURE_WINDOW_SECONDS) (Retry-After)";
