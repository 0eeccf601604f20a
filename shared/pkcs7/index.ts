/** The streaming PKCS#7/CMS to JOSE engine: analysis and conversion, no HTTP. */
export { analyzePkcs7 } from './analyze.ts';
export { convertPkcs7ToJose } from './convert.ts';
export { EDDSA_CAP } from '../jose/jws.ts';
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
