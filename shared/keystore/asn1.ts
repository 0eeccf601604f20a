/**
 * ASN.1 pieces the @peculiar packages do not ship, declared with the same schema machinery
 * (AsnProp called as a function, since Node's type stripping has no decorators), plus the
 * object identifiers the keystore reader dispatches on.
 */
import { AsnConvert, AsnProp, AsnPropTypes, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { Attribute, EncryptedContentInfo } from '@peculiar/asn1-cms';
import { keystoreProblem } from './problems.ts';

export const OID = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  envelopedData: '1.2.840.113549.1.7.3',
  encryptedData: '1.2.840.113549.1.7.6',
  friendlyName: '1.2.840.113549.1.9.20',
  localKeyId: '1.2.840.113549.1.9.21',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  keyBag: '1.2.840.113549.1.12.10.1.1',
  pkcs8ShroudedKeyBag: '1.2.840.113549.1.12.10.1.2',
  certBag: '1.2.840.113549.1.12.10.1.3',
  safeContentsBag: '1.2.840.113549.1.12.10.1.6',
  pbes2: '1.2.840.113549.1.5.13',
  pbkdf2: '1.2.840.113549.1.5.12',
  scrypt: '1.3.6.1.4.1.11591.4.11',
  pbmac1: '1.2.840.113549.1.5.14',
  subjectKeyIdentifier: '2.5.29.14',
} as const;

/**
 * OCTET STRING that also reads the BER constructed form (X.690 section 8.7.3.2), which some
 * PKCS#12 writers emit and which asn1-schema's own OctetString silently reads as empty.
 */
export class BerOctetString extends OctetString {
  override fromASN(asn: Parameters<OctetString['fromASN']>[0]): this {
    this.buffer = asn.getValue();
    return this;
  }
}

/**
 * RFC 5652 section 8: EncryptedData ::= SEQUENCE { version CMSVersion,
 * encryptedContentInfo EncryptedContentInfo, unprotectedAttrs [1] IMPLICIT OPTIONAL }.
 */
export class CmsEncryptedData {
  version = 0;
  encryptedContentInfo = new EncryptedContentInfo();
  unprotectedAttrs?: Attribute[];
}
AsnProp({ type: AsnPropTypes.Integer })(CmsEncryptedData.prototype, 'version');
AsnProp({ type: EncryptedContentInfo })(CmsEncryptedData.prototype, 'encryptedContentInfo');
AsnProp({ type: Attribute, repeated: 'set', context: 1, implicit: true, optional: true })(CmsEncryptedData.prototype, 'unprotectedAttrs');

/** RFC 8018 appendix A.4: PBES2-params ::= SEQUENCE { keyDerivationFunc, encryptionScheme }. */
export class Pbes2Params {
  keyDerivationFunc = new AlgorithmIdentifier();
  encryptionScheme = new AlgorithmIdentifier();
}
AsnProp({ type: AlgorithmIdentifier })(Pbes2Params.prototype, 'keyDerivationFunc');
AsnProp({ type: AlgorithmIdentifier })(Pbes2Params.prototype, 'encryptionScheme');

/**
 * RFC 8018 appendix A.2: PBKDF2-params. The salt CHOICE is read as its `specified` arm only;
 * `otherSource` is reserved by the RFC and no writer uses it.
 */
export class Pbkdf2Params {
  salt = new OctetString();
  iterationCount = 0;
  keyLength?: number;
  prf?: AlgorithmIdentifier;
}
AsnProp({ type: OctetString })(Pbkdf2Params.prototype, 'salt');
AsnProp({ type: AsnPropTypes.Integer })(Pbkdf2Params.prototype, 'iterationCount');
AsnProp({ type: AsnPropTypes.Integer, optional: true })(Pbkdf2Params.prototype, 'keyLength');
AsnProp({ type: AlgorithmIdentifier, optional: true })(Pbkdf2Params.prototype, 'prf');

/**
 * RFC 7914 section 7: scrypt-params ::= SEQUENCE { salt OCTET STRING, costParameter INTEGER,
 * blockSize INTEGER, parallelizationParameter INTEGER, keyLength INTEGER OPTIONAL }.
 */
export class ScryptParams {
  salt = new OctetString();
  costParameter = 0;
  blockSize = 0;
  parallelizationParameter = 0;
  keyLength?: number;
}
AsnProp({ type: OctetString })(ScryptParams.prototype, 'salt');
AsnProp({ type: AsnPropTypes.Integer })(ScryptParams.prototype, 'costParameter');
AsnProp({ type: AsnPropTypes.Integer })(ScryptParams.prototype, 'blockSize');
AsnProp({ type: AsnPropTypes.Integer })(ScryptParams.prototype, 'parallelizationParameter');
AsnProp({ type: AsnPropTypes.Integer, optional: true })(ScryptParams.prototype, 'keyLength');

/** RFC 7292 appendix C: pkcs-12PbeParams ::= SEQUENCE { salt OCTET STRING, iterations INTEGER }. */
export class Pkcs12PbeParams {
  salt = new OctetString();
  iterations = 0;
}
AsnProp({ type: OctetString })(Pkcs12PbeParams.prototype, 'salt');
AsnProp({ type: AsnPropTypes.Integer })(Pkcs12PbeParams.prototype, 'iterations');

/**
 * asn1js options for untrusted input: no speculative parsing of every OCTET STRING's contents
 * as ASN.1 (PKCS#12 nests its layers in OCTET STRINGs, each parsed on its own here, so the
 * speculation only multiplies work), and bounded depth and node count.
 */
export const BER_OPTIONS = { berOptions: { parseEmbedded: false, maxDepth: 32, maxNodes: 20_000 } };

/** Parses DER/BER with a schema; any failure becomes keystore-malformed naming `what`. */
export function parseAs<T>(data: ArrayBuffer | ArrayBufferView, type: new () => T, what: string): T {
  try {
    return AsnConvert.parse(data, type, BER_OPTIONS);
  } catch (cause) {
    throw keystoreProblem('keystore_malformed', `${what} is not valid DER`, { cause });
  }
}

/** The octets of an OCTET STRING encoding (primitive or constructed). */
export function octets(data: ArrayBuffer | ArrayBufferView, what: string): Buffer {
  return Buffer.from(parseAs(data, BerOctetString, what).buffer);
}

/** An AlgorithmIdentifier's parameters, which the caller's algorithm requires. */
export function requireParams(alg: AlgorithmIdentifier, what: string): ArrayBuffer {
  if (!alg.parameters) throw keystoreProblem('keystore_malformed', `${what} has no parameters`);
  return alg.parameters;
}
