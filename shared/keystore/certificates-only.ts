/**
 * A keystore with certificates and no private key (docs/decisions.md, "Outside signers"): each
 * certificate becomes a verify-only entry, its public key checked as keystore keys are (type,
 * RSA exponent). Read only after parseKeystore found no private key, so a keystore that holds
 * one never takes this path.
 */
import { X509Certificate } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { summarizeCertificate } from './certificate.ts';
import { keyTypeOf } from './entries.ts';
import { base64Body, pemBlocks } from './pem.ts';
import { readPkcs12 } from './pkcs12.ts';
import { detectFormat } from './sniff.ts';
import type { CertificateSummary } from './types.ts';
import { problem } from '../errors/index.ts';

/** One certificate imported for verification only. */
export interface CertificateEntry {
  publicKey: KeyObject;
  type: string;
  /** DER of the certificate alone. */
  certificates: Buffer[];
  certificate: CertificateSummary;
  issuerDer: Buffer;
  serialNumber: Buffer;
  subjectKeyIdentifier: Buffer;
}

/** Every certificate of a PEM bundle or PKCS#12 file without keys; keystore-empty when it holds none. */
export function readCertificatesOnly(data: Buffer, password?: string): CertificateEntry[] {
  const format = detectFormat(data);
  const ders =
    format === 'pkcs12'
      ? readPkcs12(data, password).certs.map((c) => c.der)
      : pemBlocks(data.toString('utf8'))
          .filter((b) => b.label === 'CERTIFICATE')
          .map(base64Body);
  if (ders.length === 0)
    throw problem('keystore_empty', 'the keystore holds neither a private key nor a certificate');
  return ders.map((der, i) => {
    let publicKey: KeyObject;
    try {
      publicKey = new X509Certificate(der).publicKey;
    } catch (cause) {
      throw problem(
        'keystore_malformed',
        `certificate #${i + 1} is not a valid X.509 certificate`,
        {
          cause,
        },
      );
    }
    const { issuerDer, serialNumberBytes, subjectKeyIdentifier, usages, ...summary } =
      summarizeCertificate(der);
    void usages;
    return {
      publicKey,
      type: keyTypeOf(publicKey, false),
      certificates: [der],
      certificate: summary,
      issuerDer,
      serialNumber: serialNumberBytes,
      subjectKeyIdentifier,
    };
  });
}
