/**
 * Keystore parsing in the pool: PBKDF2/PKCS#12 KDF work takes up to a couple of seconds of CPU
 * and must not block the event loop. Returns plain data: PKCS#8 DER keys and DER certificates.
 */
import type { KeyObject } from 'node:crypto';
import { parseKeystore } from '../../../shared/keystore/index.ts';
import { readCertificatesOnly } from '../../../shared/keystore/certificates-only.ts';
import type { CertificateSummary, CertificateUsage } from '../../../shared/keystore/index.ts';
import { AppError, problem } from '../../../shared/errors/index.ts';

/** One parsed entry as structured-cloneable data. */
export interface ParsedKeystoreEntry {
  type: string;
  /** Absent for a certificate imported without its private key: a verify-only key. */
  privateKeyDer?: Uint8Array;
  publicKeyDer: Uint8Array;
  certificates: Uint8Array[];
  certificate?: CertificateSummary;
  issuerDer?: Uint8Array;
  serialNumber?: Uint8Array;
  subjectKeyIdentifier?: Uint8Array;
  /** What the certificate allows; absent when it restricts nothing. */
  usages?: CertificateUsage[];
  friendlyName?: string;
}

/** Parses a PKCS#12 or PEM keystore; failures are thrown as plain {code, message, details}. */
export function parseKeystoreTask(input: {
  data: Uint8Array;
  password?: string;
}): ParsedKeystoreEntry[] {
  try {
    return parseEntries(input);
  } catch (err) {
    if (err instanceof AppError) throw err.toJSON();
    throw problem('keystore_malformed', 'the keystore could not be read').toJSON();
  }
}

/**
 * {@link parseKeystoreTask} on the expensive-work pool, measured: the milliseconds it held the
 * thread come back with its entries or its error (as data), so that the caller's budget, charged
 * the most a keystore may cost before the parse, gets back what this one did not use, also when
 * the parse failed (a wrong password after a long derivation still costs its derivation).
 */
export function parseKeystoreCosted(input: { data: Uint8Array; password?: string }): {
  entries?: ParsedKeystoreEntry[];
  error?: unknown;
  ms: number;
} {
  const start = performance.now();
  try {
    const entries = parseKeystoreTask(input);
    return { entries, ms: performance.now() - start };
  } catch (error) {
    return { error, ms: performance.now() - start };
  }
}

/** What every entry carries: its public half, its certificates and how a CMS names it. */
function publicPart(e: {
  type: string;
  publicKey: KeyObject;
  certificates: Uint8Array[];
  certificate?: CertificateSummary;
  issuerDer?: Uint8Array;
  serialNumber?: Uint8Array;
  subjectKeyIdentifier?: Uint8Array;
}): ParsedKeystoreEntry {
  return {
    type: e.type,
    publicKeyDer: e.publicKey.export({ format: 'der', type: 'spki' }),
    certificates: e.certificates,
    certificate: e.certificate,
    issuerDer: e.issuerDer,
    serialNumber: e.serialNumber,
    subjectKeyIdentifier: e.subjectKeyIdentifier,
  };
}

function parseEntries(input: { data: Uint8Array; password?: string }): ParsedKeystoreEntry[] {
  const data = Buffer.from(input.data.buffer, input.data.byteOffset, input.data.byteLength);
  try {
    return parseKeystore({
      data,
      password: input.password,
    }).map((e) => ({
      ...publicPart(e),
      privateKeyDer: e.privateKey.export({ format: 'der', type: 'pkcs8' }),
      ...(e.usages ? { usages: e.usages } : {}),
      friendlyName: (e as { friendlyName?: string }).friendlyName,
    }));
  } catch (err) {
    // Certificates without a private key: an outside signer's, imported to verify only.
    if (!(err instanceof AppError) || err.code !== 'keystore_empty') throw err;
    return readCertificatesOnly(data, input.password).map(publicPart);
  }
}
