/**
 * ASN.1 schemas the @peculiar packages do not ship, declared with the same schema machinery
 * (AsnProp called as a function, since Node's type stripping has no decorators). The parse
 * itself, with its limits, and the OIDs are in shared/asn1.
 */
import { AsnProp, AsnPropTypes, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { Attribute, EncryptedContentInfo } from '@peculiar/asn1-cms';
import { problem } from '../errors/index.ts';

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
AsnProp({ type: Attribute, repeated: 'set', context: 1, implicit: true, optional: true })(
  CmsEncryptedData.prototype,
  'unprotectedAttrs',
);

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

/** An AlgorithmIdentifier's parameters, which the caller's algorithm requires. */
export function requireParams(alg: AlgorithmIdentifier, what: string): ArrayBuffer {
  if (!alg.parameters) throw problem('keystore_malformed', `${what} has no parameters`);
  return alg.parameters;
}
