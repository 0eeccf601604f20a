/** The shapes parseKeystore returns. */
import type { KeyObject } from 'node:crypto';

/** What the API shows about a certificate. */
export interface CertificateSummary {
  /** RFC 4514 string, most specific RDN first, e.g. `CN=leaf,O=Acme,C=US`. */
  subject: string;
  issuer: string;
  /** Unsigned serial as upper-case hex, as `openssl x509 -serial` and X509Certificate print it. */
  serialNumber: string;
  /** ISO 8601 instants. */
  notBefore: string;
  notAfter: string;
}

/** What a certificate lets its key be used for, in the service's terms. */
export type CertificateUsage = 'sign' | 'encrypt';

/** A certificate summary plus the identifiers CMS uses to name a key (RFC 5652 section 10.2.4). */
export interface CertificateDetails extends CertificateSummary {
  /** DER of the issuer Name exactly as it appears in the certificate. */
  issuerDer: Buffer;
  /** Unsigned big-endian serial number bytes (no sign byte). */
  serialNumberBytes: Buffer;
  /** From the SKI extension, else RFC 5280 section 4.2.1.2 method 1. */
  subjectKeyIdentifier: Buffer;
  /** From keyUsage/extendedKeyUsage (possibly empty); absent when the certificate has neither. */
  usages?: CertificateUsage[];
}

/** One private key from a keystore, with its certificate chain. */
export interface KeystoreEntry {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** 'rsa-2048' | 'rsa-3072' | 'rsa-4096' | 'ec-p256' | 'ec-p384' | 'ec-p521' | 'ed25519'. */
  type: string;
  /** DER, the leaf first, then the other certificates in the order found. Empty without a leaf. */
  certificates: Buffer[];
  /** Summary of the leaf. */
  certificate?: CertificateSummary;
  /** DER of the leaf's issuer Name, for CMS IssuerAndSerialNumber matching. */
  issuerDer?: Buffer;
  /** Unsigned big-endian serial number of the leaf. */
  serialNumber?: Buffer;
  /** Subject key identifier of the leaf (extension, or SHA-1 of the subjectPublicKey bits). */
  subjectKeyIdentifier?: Buffer;
  /** What the leaf's keyUsage/extendedKeyUsage allow; absent when it restricts nothing. */
  usages?: CertificateUsage[];
  /** PKCS#12 friendlyName bag attribute (RFC 7292 section 4.2), when present. */
  friendlyName?: string;
}

/** Input of parseKeystore: the file bytes and the password, if any. */
export interface KeystoreInput {
  data: Buffer;
  password?: string;
}
