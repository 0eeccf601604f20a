/** The types the engine shares with its callers: key lookup, conversion options, analysis result. */
import type { KeyPurpose, KidResolver, ResolvedKey } from '../jose/types.ts';

export type { KeyPurpose, ResolvedKey } from '../jose/types.ts';

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

/**
 * Finds the tenant's imported keys; injected so the engine knows nothing of storage. Given a
 * purpose, the resolver prefers a key of that usage (one certificate may be imported once per
 * usage) and refuses one of another usage (key-usage-mismatch); without one it only looks up.
 * The JOSE layer's lookup by kid, plus the lookup by the identifier a CMS message carries.
 */
export interface KeyResolver extends KidResolver {
  /**
   * With a purpose, a key that can serve it (never a verify-only key); without one, any key of
   * the identifier, verify-only certificates included (the public key that checks a signer).
   */
  byCmsRef(ref: CmsKeyRef, purpose?: KeyPurpose): Promise<ResolvedKey | null>;
  /** The tenant's default archive signing key (a key setting), if it has one. */
  archiveSigningKey?(): Promise<ResolvedKey | null>;
  /** DER of the tenant's trust anchors, for `verify: "chain"`. */
  trustAnchors?(): Promise<Buffer[]>;
  /**
   * Derives a password recipient's key-encryption key (PBKDF2, RFC 8018 section 5.2) where the
   * caller's expensive work runs and on its budget (docs/expensive-work.md): the owning side's
   * resolver runs it off the event loop, spending the caller's cost budget (429 past it).
   * Without it the engine derives with node:crypto's async pbkdf2 (tests of the engine alone).
   */
  derivePasswordKey?(request: PasswordKeyRequest): Promise<Buffer>;
}

/** The inputs of one PBKDF2 derivation of a PWRI key-encryption key. */
export interface PasswordKeyRequest {
  password: Uint8Array;
  salt: Uint8Array;
  /** Already checked against the engine's cap. */
  iterations: number;
  keyLength: number;
  /** The node:crypto digest of the PRF (sha1, sha256, ...). */
  digest: string;
}

/** The `metadata` part of a conversion request. */
export interface ConvertMetadata {
  signerKid?: string;
  recipientKid?: string;
  /**
   * Who the new JWE is for (a list: one JWE recipient each); default every recipient of the
   * input whose key the tenant holds for encryption.
   */
  targetKid?: string | string[];
  /** Opens a password recipient (RFC 3211); never logged or stored. */
  password?: string;
  contentEncryption?: 'A128GCM' | 'A192GCM' | 'A256GCM' | 'preserve';
  keyManagement?: string;
  /**
   * Accepts a target list mixing classical and post-quantum (HPKE) keys, which is otherwise
   * refused (docs/post-quantum.md); recorded in the JWE's protected header.
   */
  allowMixedRecipients?: boolean;
  /** RFC 7797 unencoded payload when false (the default). */
  b64?: boolean;
  /**
   * How far a CMS signer is checked: `signature` (the default) against its
   * certificate, `chain` also up to one of the tenant's trust anchors.
   */
  verify?: 'signature' | 'chain';
}

/** Options of convertPkcs7ToJose. */
export interface ConvertOptions {
  metadata: ConvertMetadata;
  resolver: KeyResolver;
  /** The signed content of a detached SignedData (a .p7s). */
  content?: AsyncIterable<Uint8Array>;
  /**
   * SignedData: answer multipart/mixed, the signed content as it streams then the JWS, instead
   * of the JWS alone (HTTP `Accept: multipart/mixed`, and the jobs, which store both).
   */
  withContent?: boolean;
  /**
   * Enveloped inputs with one post-quantum target: the content is sealed by HPKE Integrated
   * Encryption (`HPKE-n`, no `enc`) instead of `HPKE-n-KE`, for the compact answer
   * (docs/post-quantum.md, conversions). Ignored for any other target list.
   */
  integrated?: boolean;
  /** Told the input's content type (signedData, envelopedData, ...) once its head is read (metrics). */
  onInputType?: (type: string) => void;
  /**
   * Where a SignedData's signature and chain checks run (a pool thread, for a conversion on an
   * event loop that serves other requests); default in place.
   */
  checkSigners?: SignerChecker;
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

/** The certificate fields the analysis reports: the keystore import's shape. */
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
  /**
   * What verifies the signature: a tenant key of the signer's identifier (its own
   * key pair or a verify-only certificate), else the certificate the file carries; null: nothing.
   */
  verifiedWith: 'tenant-key' | 'embedded-certificate' | null;
}

export interface RecipientSummary {
  type: 'keyTransport' | 'keyAgreement' | 'kek' | 'password' | 'other';
  identifier: IdentifierSummary;
  keyEncryptionAlgorithm: AlgorithmSummary;
  keyWrapAlgorithm?: AlgorithmSummary;
  certificate: CertificateSummary | null;
  kid: string | null;
}

/** The answer of analyzePkcs7. */
export interface Analysis {
  contentType: 'signedData' | 'envelopedData' | 'authEnvelopedData' | 'signedAndEnvelopedData';
  encoding: 'der' | 'ber';
  /** The archive form the CMS object was found in. */
  container: 'der' | 'ber' | 'pem' | 'base64' | 'smime' | 'multipart-signed';
  /** Bytes of eContent or encryptedContent; 0 for a detached SignedData. */
  contentLength: number;
  detached: boolean;
  innerContentType: AlgorithmSummary;
  signers: SignerSummary[];
  /**
   * Who signs the JWS when the metadata names no signerKid: the tenant's archive signing key, else
   * each signer's own key (`kids` lists those the tenant holds). Present when keys were looked up.
   */
  signing?: { path: 'archive-key' | 'signer-key'; kids: string[] } | null;
  /** A certificates-only SignedData (`.p7b`): it converts to a JWK Set of its certificates. */
  certificatesOnly?: true;
  certificateCount?: number;
  recipients: RecipientSummary[];
  /**
   * The key that decrypts when the metadata names no recipientKid nor password: the one the
   * converter chooses (chooseRecipient), or, when it refuses the key it found (a key without
   * encrypt enabled), that key with `convertible: false` and the reason. Present when keys were
   * looked up for an encrypted form.
   */
  decryption?: { kid: string | null };
  contentEncryption: AlgorithmSummary | null;
  /**
   * Whether the analysis checked the signatures over the content: always false, as it reads the
   * structure, algorithms and keys only; `convertible` does not vouch for a signature.
   */
  signatureChecked: false;
  convertible: boolean;
  reason?: string;
}

/** A tenant key that checks a signer: its public key (SPKI DER) and its certificate. */
export interface HeldSignerKey {
  spki: Uint8Array;
  certificate: Uint8Array | null;
}

/** What shared/pkcs7/signer-checks.ts checkSigners needs; plain data, so that it crosses to a thread as it is. */
export interface SignerCheckInput {
  /** Every SignerInfo as read (DER), in file order. */
  signers: Uint8Array[];
  /** The tenant's key for each signer, same order; null where the tenant holds none. */
  held: (HeldSignerKey | null)[];
  /** The certificates the SignedData carries (DER). */
  certificates: Uint8Array[];
  /** The content digests by digest OID (and the held content of an Ed448 signer). */
  digests: [string, Uint8Array][];
  eContentType: string;
  chain: boolean;
  /** The tenant's trust anchors (DER), for `chain`. */
  anchors: Uint8Array[];
}

/** What checkSigners found of each signer: its certificate then the path found (base64 DER). */
export interface SignerCheckOutput {
  x5c: string[][];
  /** Signature checks made (signers and links): at most MAX_SIGNATURE_CHECKS. */
  checks: number;
}

/** Runs checkSigners somewhere else (a pool thread); the same result and the same problems. */
export type SignerChecker = (input: SignerCheckInput) => Promise<SignerCheckOutput>;
