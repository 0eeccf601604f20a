/**
 * Turns the keys and certificates found in a keystore into entries: each key gets its leaf
 * certificate (same public key; the PKCS#12 localKeyId breaks ties, RFC 7292 section 4.2) and
 * the other certificates after it.
 */
import { X509Certificate, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { summarizeCertificate } from './certificate.ts';
import { checkKeyPair } from './consistency.ts';
import type { KeystoreEntry } from './types.ts';
import { problem } from '../errors/index.ts';
import { assertRsaExponent } from '../crypto/material.ts';
import { pssJoseFault } from '../crypto/rsa-pss.ts';

/** A private key as found, before matching. */
export interface FoundKey {
  privateKey: KeyObject;
  localKeyId?: Buffer;
  friendlyName?: string;
}

/** A DER certificate as found, before matching. */
export interface FoundCertificate {
  der: Buffer;
  localKeyId?: Buffer;
  friendlyName?: string;
}

const EC_CURVES: Record<string, string> = {
  prime256v1: 'ec-p256',
  secp384r1: 'ec-p384',
  secp521r1: 'ec-p521',
};
const RSA_SIZES = new Set([2048, 3072, 4096]);

/**
 * The service key type of an asymmetric key: 'rsa-2048', 'rsa-3072',
 * 'rsa-4096', 'rsa-pss-2048/3072/4096', 'ec-p256', 'ec-p384', 'ec-p521', 'ed25519', 'ed448', 'x25519' or
 * 'x448'; keystore-unsupported-algorithm otherwise, and for an RSASSA-PSS key that is to sign (`signs`)
 * with parameters no JOSE PS* fits.
 * An RSA key with a weak public exponent is keystore-key-invalid: the rule is the one every load
 * applies (shared/crypto/material.ts), asked here first so that it, and not the pair check an even
 * exponent would also fail, names what is wrong.
 */
export function keyTypeOf(key: KeyObject, signs = true): string {
  const kind = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (kind === 'rsa' && details.modulusLength && RSA_SIZES.has(details.modulusLength)) {
    assertRsaExponent(key);
    return `rsa-${details.modulusLength}`;
  }
  if (kind === 'ec' && details.namedCurve && EC_CURVES[details.namedCurve])
    return EC_CURVES[details.namedCurve];
  if (kind === 'rsa-pss' && details.modulusLength && RSA_SIZES.has(details.modulusLength)) {
    assertRsaExponent(key);
    // A certificate imported to verify only checks CMS signatures, whatever its parameters.
    const fault = signs ? pssJoseFault(key) : null;
    if (fault) unsupportedKey(`${fault}, which no JOSE PS* algorithm can use`);
    return `rsa-pss-${details.modulusLength}`;
  }
  if (kind === 'ed25519' || kind === 'ed448' || kind === 'x25519' || kind === 'x448') return kind;
  const what =
    kind === 'rsa' || kind === 'rsa-pss'
      ? `${kind === 'rsa' ? 'RSA' : 'RSASSA-PSS'} with a ${details.modulusLength}-bit modulus`
      : kind === 'ec'
        ? `EC on curve ${details.namedCurve}`
        : (kind ?? `a ${key.type} key`);
  return unsupportedKey(what);
}

function unsupportedKey(what: string): never {
  throw problem(
    'keystore_unsupported_algorithm',
    `unsupported key: ${what} (supported: RSA and RSASSA-PSS 2048/3072/4096, EC P-256/P-384/P-521, Ed25519, Ed448, X25519, X448)`,
  );
}

/** Private key algorithms Node loads (RFC 8017, RFC 5480, RFC 8410, RFC 3279): failing to load one means a damaged key. */
const LOADABLE_KEY_ALGORITHMS: Record<string, string> = {
  '1.2.840.113549.1.1.1': 'RSA',
  '1.2.840.113549.1.1.10': 'RSASSA-PSS',
  '1.2.840.10045.2.1': 'EC',
  '1.3.101.110': 'X25519',
  '1.3.101.111': 'X448',
  '1.3.101.112': 'Ed25519',
  '1.3.101.113': 'Ed448',
  '1.2.840.10040.4.1': 'DSA',
};

/**
 * The problem for a PKCS#8 key Node would not load: keystore-malformed when its algorithm is
 * one Node knows (so the key itself is damaged), keystore-unsupported-algorithm otherwise.
 */
export function unloadableKeyProblem(oid: string, where: string, cause: unknown): Error {
  const known = LOADABLE_KEY_ALGORITHMS[oid];
  if (known)
    return problem('keystore_malformed', `the ${known} private key in the ${where} is damaged`, {
      cause,
    });
  return problem(
    'keystore_unsupported_algorithm',
    `unsupported private key algorithm in the ${where}: OID ${oid}`,
    { cause, details: { oid } },
  );
}

/** Builds one entry per key; keystore-empty without keys, keystore-key-mismatch without a leaf. */
export function assembleEntries(keys: FoundKey[], certs: FoundCertificate[]): KeystoreEntry[] {
  if (keys.length === 0) {
    throw problem(
      'keystore_empty',
      `the keystore holds ${certs.length} certificate(s) and no private key`,
    );
  }
  const certSpkis = certs.map((c, i) => spkiOfCertificate(c.der, i));
  const matched = keys.map((key, k) => {
    const publicKey = createPublicKey(key.privateKey);
    const type = keyTypeOf(key.privateKey);
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    const candidates = certs.flatMap((_, i) => (certSpkis[i].equals(spki) ? [i] : []));
    const byLocalId = candidates.find(
      (i) => key.localKeyId && certs[i].localKeyId?.equals(key.localKeyId),
    );
    const leaf = byLocalId ?? candidates[0];
    if (certs.length > 0 && leaf === undefined) {
      throw problem(
        'keystore_key_mismatch',
        `none of the ${certs.length} certificate(s) holds the public key of private key #${k + 1}`,
      );
    }
    // Checked against the leaf's own key, so a private key stored with a public part it does not
    // own is refused even when that public part matches the certificate.
    checkKeyPair(
      key.privateKey,
      leaf === undefined ? publicKey : new X509Certificate(certs[leaf].der).publicKey,
      k,
    );
    return { key, publicKey, type, leaf };
  });

  const leaves = new Set(matched.map((m) => m.leaf));
  return matched.map(({ key, publicKey, type, leaf }): KeystoreEntry => {
    const entry: KeystoreEntry = { privateKey: key.privateKey, publicKey, type, certificates: [] };
    const friendlyName =
      key.friendlyName ?? (leaf === undefined ? undefined : certs[leaf].friendlyName);
    if (friendlyName !== undefined) entry.friendlyName = friendlyName;
    if (leaf === undefined) return entry;

    const rest = certs.filter((_, i) => !leaves.has(i));
    entry.certificates = [certs[leaf].der, ...rest.map((c) => c.der)];
    const { issuerDer, serialNumberBytes, subjectKeyIdentifier, usages, ...summary } =
      summarizeCertificate(certs[leaf].der);
    entry.certificate = summary;
    if (usages) entry.usages = usages;
    entry.issuerDer = issuerDer;
    entry.serialNumber = serialNumberBytes;
    entry.subjectKeyIdentifier = subjectKeyIdentifier;
    return entry;
  });
}

/** The certificate's SubjectPublicKeyInfo DER, through Node's own X.509 parser. */
function spkiOfCertificate(der: Buffer, index: number): Buffer {
  try {
    return new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' });
  } catch (cause) {
    throw problem(
      'keystore_malformed',
      `certificate #${index + 1} is not a valid X.509 certificate`,
      { cause },
    );
  }
}
