/**
 * Keystore import: reads a PKCS#12 file (RFC 7292) or a PEM bundle into
 * private keys with their certificate chains. Every failure is a keystore problem (problems.ts),
 * never a raw exception.
 *
 * parseKeystore is synchronous and CPU-bound: key derivation is capped by a work budget
 * (pkcs12-kdf.ts) and the input by MAX_KEYSTORE_BYTES, so one call costs at most about two
 * seconds of one core; the HTTP side should still run it in the piscina pool.
 */
import { AppError, problem } from '../errors/index.ts';
import { assembleEntries } from './entries.ts';
import { readPem } from './pem.ts';
import { readPkcs12 } from './pkcs12.ts';
import { describeUnknown, detectFormat } from './sniff.ts';
import type { KeystoreEntry, KeystoreInput } from './types.ts';

export type {
  CertificateDetails,
  CertificateSummary,
  CertificateUsage,
  KeystoreEntry,
  KeystoreInput,
} from './types.ts';
export { summarizeCertificate } from './certificate.ts';
export { keyTypeOf } from './entries.ts';
export { isKeystoreProblem } from './problems.ts';

/** Largest keystore accepted; real ones are a few kilobytes. */
export const MAX_KEYSTORE_BYTES = 1024 * 1024;

/** Reads every private key of a PKCS#12 or PEM keystore, each with its leaf certificate and chain. */
export function parseKeystore(input: KeystoreInput): KeystoreEntry[] {
  const { data, password } = input;
  if (!Buffer.isBuffer(data) || data.length === 0)
    throw problem('keystore_malformed', 'input is empty');
  if (data.length > MAX_KEYSTORE_BYTES) {
    throw problem(
      'keystore_too_large',
      `keystore is ${data.length} bytes; the limit is ${MAX_KEYSTORE_BYTES}`,
    );
  }
  const format = detectFormat(data);
  if (!format) throw problem('keystore_malformed', describeUnknown(data));
  try {
    const found = format === 'pkcs12' ? readPkcs12(data, password) : readPem(data, password);
    return assembleEntries(found.keys, found.certs);
  } catch (err) {
    if (err instanceof AppError) throw err;
    // A parser or Node rejected something the checks above let through: still the caller's input.
    throw problem(
      'keystore_malformed',
      `the ${format === 'pkcs12' ? 'PKCS#12' : 'PEM'} input could not be read`,
      { cause: err },
    );
  }
}
