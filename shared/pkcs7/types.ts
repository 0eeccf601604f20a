/** The types the engine shares with its callers: key lookup, conversion options, analysis result. */
import type { KeyObject } from 'node:crypto';

/** How a CMS message names a key (RFC 5652 sections 5.3, 6.2). */
export interface CmsKeyRef {
  /** DER of the issuer Name. */
  issuer?: Buffer;
  /** Unsigned big-endian serial number. */
  serialNumber?: Buffer;
  subjectKeyIdentifier?: Buffer;
  /** KEKIdentifier.keyIdentifier (RFC 5652 section 6.2.3). */
  kekId?: Buffer;
}

/** A tenant key as the key store hands it to the engine. */
export interface ResolvedKey {
  kid: string;
  version: number;
  /** 'rsa-2048' | 'ec-p256' | 'ed25519' | 'aes-256' ... */
  type: string;
  privateKey?: KeyObject;
  publicKey?: KeyObject;
  secretKey?: KeyObject;
  /** DER of the key's certificate, when it was imported with one. */
  certificate?: Buffer;
}

/** What the engine does with a key: 'sign' (JWS, CMS signers) or 'encrypt' (JWE, CMS recipients). */
export type KeyPurpose = 'sign' | 'encrypt';

/**
 * Finds the tenant's imported keys; injected so the engine knows nothing of storage. Given a
 * purpose, the resolver prefers a key of that usage (one certificate may be imported once per
 * usage) and refuses one of another usage (key-usage-mismatch); without one it only looks up.
 */
export interface KeyResolver {
  byCmsRef(ref: CmsKeyRef, purpose?: KeyPurpose): Promise<ResolvedKey | null>;
  /** `version` names one retained version (a `<kid>#<version>` header); without it, the newest. */
  byKid(kid: string, purpose?: KeyPurpose, version?: number): Promise<ResolvedKey | null>;
  /**
   * The types ('rsa-2048', 'ec-p256'...) of the tenant's usable keys. When the re-signing key is
   * only named after the content, the engine hashes the content once per alg one of these types
   * can sign with, rather than once per alg there is; without it, once per alg there is.
   */
  keyTypes?(): Promise<readonly string[]>;
}

/** The `metadata` part of a conversion request (contract section 5). */
export interface ConvertMetadata {
  signerKid?: string;
  recipientKid?: string;
  /** Who the new JWE is for; default the CMS recipient key. */
  targetKid?: string;
  contentEncryption?: 'A128GCM' | 'A192GCM' | 'A256GCM' | 'preserve';
  keyManagement?: string;
  /** RFC 7797 unencoded payload when false (the default). */
  b64?: boolean;
}

/** Options of convertPkcs7ToJose. */
export interface ConvertOptions {
  metadata: ConvertMetadata;
  resolver: KeyResolver;
  /** The signed content of a detached SignedData (a .p7s). */
  content?: AsyncIterable<Uint8Array>;
}

/** What convertPkcs7ToJose returns: the response content type and a pull-based body. */
export interface ConvertResult {
  contentType: string;
  body: AsyncIterable<Buffer>;
}

/** An algorithm as the analysis reports it. */
export interface AlgorithmSummary {
  oid: string;
  name: string;
}

/** The certificate fields the analysis reports: the keystore import's shape (contract section 4). */
export type { CertificateSummary } from '../keystore/types.ts';
import type { CertificateSummary } from '../keystore/types.ts';

/** A signer or recipient identifier in printable form. */
export interface IdentifierSummary {
  type: 'issuerAndSerialNumber' | 'subjectKeyIdentifier' | 'kekIdentifier' | 'other';
  issuer?: string;
  serialNumber?: string;
  subjectKeyIdentifier?: string;
  kekId?: string;
}

export interface SignerSummary {
  identifier: IdentifierSummary;
  digestAlgorithm: AlgorithmSummary;
  signatureAlgorithm: AlgorithmSummary;
  signedAttributes: boolean;
  certificate: CertificateSummary | null;
  kid: string | null;
}

export interface RecipientSummary {
  type: 'keyTransport' | 'keyAgreement' | 'kek' | 'password' | 'other';
  identifier: IdentifierSummary;
  keyEncryptionAlgorithm: AlgorithmSummary;
  keyWrapAlgorithm?: AlgorithmSummary;
  certificate: CertificateSummary | null;
  kid: string | null;
}

/** The answer of analyzePkcs7 (contract section 5). */
export interface Analysis {
  contentType: 'signedData' | 'envelopedData' | 'authEnvelopedData' | 'signedAndEnvelopedData';
  encoding: 'der' | 'ber';
  /** Bytes of eContent or encryptedContent; 0 for a detached SignedData. */
  contentLength: number;
  detached: boolean;
  innerContentType: AlgorithmSummary;
  signers: SignerSummary[];
  recipients: RecipientSummary[];
  contentEncryption: AlgorithmSummary | null;
  convertible: boolean;
  reason?: string;
}
