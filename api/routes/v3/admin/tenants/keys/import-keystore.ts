/**
 * Keystore import, mounted at /api/v3/admin/tenants/:tenantId/keys/import-keystore
 * ahead of the key rows (whose `/:kid` would answer its POST 405): a multipart form the handler
 * reads itself, imported by routes/shared/keystore-import.ts.
 *
 * Tests: test/integration/migration/producers-algorithms.test.ts,
 *   test/integration/keys/rsa-exponents.test.ts, test/integration/migration/outside-signers.test.ts,
 *   test/integration/migration/producers-signed.test.ts,
 *   test/integration/migration/xdh-recipients.test.ts, test/e2e/console-batch.test.ts, and 21 more
 *   under test/e2e/, test/integration/
 */
import Type from 'typebox';
import { endpoint } from '../../../../../rows/endpoint.ts';
import {
  IMPORT_PROBLEMS,
  ImportedKeys,
  KEYSTORE_FORM,
  importedKeyEvents,
  importIntoPathTenant,
} from '../../../../shared/keystore-import.ts';
import { TENANT_PARAM } from '../../../../../schemas/common.ts';

const Tenant = Type.Object(TENANT_PARAM);
const tag = 'keys';

/** Mounted at /api/v3/admin/tenants/:tenantId/keys/import-keystore. */
export const KEYSTORE_IMPORT_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'importKeystore',
    tag,
    summary: 'Import the keys of a PKCS#12 file or a PEM key with its certificate chain',
    description:
      "PKCS#12 with PBES2 (AES, PBKDF2, SHA-256 MAC) or legacy 3DES/RC2/SHA-1; PEM with a plain or encrypted private key. The chain is stored and the key is found by issuer and serial number or subject key identifier. Each key pair imports as one key whose `allowedUsages` are what the certificate's keyUsage/extendedKeyUsage allow of what its type does (digitalSignature or nonRepudiation: sign; keyEncipherment, dataEncipherment or keyAgreement: encrypt), or everything its type does when the certificate has neither extension (openssl req -x509 and keytool -genkeypair make such certificates): an RSA or EC key then both signs and encrypts. Its `usages` are all of them, or the one `usage` names (narrowed at import; PATCH usages changes them later within allowedUsages). Keys: RSA 2048/3072/4096, RSASSA-PSS 2048/3072/4096 (id-RSASSA-PSS PKCS#8 keys and certificates: sign only, type rsa-pss-*; a key whose RSASSA-PSS-params bind it to a hash other than SHA-256/384/512, to MGF1 over another hash, or to a salt longer than the hash is keystore-unsupported-algorithm when it is to sign), EC P-256/P-384/P-521, Ed25519, Ed448 (sign only), and X25519/X448 (encrypt only: they open CMS key agreement recipients, RFC 8418). Every key pair is checked for consistency. A PEM bundle or PKCS#12 file of certificates without any private key imports each certificate as a verify-only key (usage `verify`): it verifies CMS signers (an outside sender's mail) and is never used to sign or decrypt; `trustAnchor=true` makes them the tenant's trust anchors for `verify: chain`. An ML-DSA, ML-KEM or X-Wing key may also come as an `AKP` JWK (RFC 9964: `alg` ML-DSA-44/65/87; draft-ietf-jose-hpke-pq-pqt: `alg` an HPKE suite, HPKE-9 or HPKE-9-KE for x25519-ml-kem-768, HPKE-12(-KE) for ml-kem-768, HPKE-13(-KE) for ml-kem-1024; `pub` the public key, and `priv` the seed for a private key; a `priv` must give the `pub` beside it, and members other than an AKP JWK's are refused): without `priv` an ML-DSA key imports as a verify-only key and an HPKE key as an encrypt-only recipient, and without a `kid` field the JWK's own `kid` names it. A failure stores nothing.",
    access: { anyOf: ['admin.keys.import'] },
    params: Tenant,
    request: KEYSTORE_FORM,
    answer: { status: 201, description: 'the imported keys', schema: ImportedKeys },
    problems: IMPORT_PROBLEMS,
    audit: { action: 'key.import', each: (_input, keys) => importedKeyEvents(keys) },
    expensive: { kinds: ['keystore-derivation'] },
    handle: importIntoPathTenant,
  }),
];
