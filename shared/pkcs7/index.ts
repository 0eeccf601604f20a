/** The streaming PKCS#7/CMS to JOSE engine: analysis and conversion, no HTTP. */
export { analyzePkcs7 } from './analyze.ts';
export { convertPkcs7ToJose } from './convert.ts';
export { BerReader } from './ber-reader.ts';
export type { BerReaderOptions } from './ber-reader.ts';
export { isEoc, isContext, isUniversal, TAG } from './ber-header.ts';
export type { BerHeader } from './ber-header.ts';
export { CMS_PROBLEMS, cmsProblem } from './problems.ts';
export type { CmsProblemCode } from './problems.ts';
export { EDDSA_CAP } from './jws.ts';
export type {
  Analysis,
  AlgorithmSummary,
  CertificateSummary,
  CmsKeyRef,
  ConvertMetadata,
  ConvertOptions,
  ConvertResult,
  IdentifierSummary,
  KeyPurpose,
  KeyResolver,
  RecipientSummary,
  ResolvedKey,
  SignerSummary,
} from './types.ts';
