/**
 * Keystore fixtures made by the system OpenSSL (3.0.x, with its legacy provider for RC2/RC4)
 * into a temporary directory: keys, self-signed certificates, a root -> intermediate -> leaf
 * chain, and PKCS#12 / PEM files in the forms the service must read.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate, privateDecrypt, publicEncrypt, sign, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppError } from '../../../shared/errors/index.ts';
import type { KeystoreEntry } from '../../../shared/keystore/index.ts';

export const OPENSSL = '/usr/bin/openssl';

/** A non-ASCII password: PBES2 takes its UTF-8 bytes, the PKCS#12 KDF its BMPString. */
export const PASSWORD = 'pässwörd-€';

/** Serial of the chain leaf: the high bit set, so its DER INTEGER carries a 0x00 sign byte. */
export const LEAF_SERIAL = '8F0102030405060708';

export interface FixtureDir {
  dir: string;
  path(name: string): string;
  read(name: string): Buffer;
  write(name: string, data: string | Buffer): string;
  /** Runs openssl and returns its stdout. */
  openssl(...args: string[]): Buffer;
  cleanup(): void;
}

export function fixtureDir(): FixtureDir {
  const dir = mkdtempSync(join(tmpdir(), 'keyward-keystore-'));
  const path = (name: string) => join(dir, name);
  return {
    dir,
    path,
    read: (name) => readFileSync(path(name)),
    write: (name, data) => {
      writeFileSync(path(name), data);
      return path(name);
    },
    openssl: (...args) =>
      execFileSync(OPENSSL, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

const KEY_ARGS: Record<string, string[]> = {
  rsa: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
  p256: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  p384: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  ed25519: ['-algorithm', 'ED25519'],
};

/**
 * Makes `<name>.key` (PKCS#8 PEM) and a self-signed `<name>.crt` for rsa, p256, p384, ed25519;
 * `root.crt` (RSA CA), `inter.crt` (P-256 CA) and `leaf.crt` (the P-384 key, issued by
 * the intermediate without an SKI extension); `chain.pem` = intermediate + root.
 */
export function makeKeysAndCertificates(fx: FixtureDir): void {
  for (const [name, args] of Object.entries(KEY_ARGS)) {
    fx.openssl('genpkey', ...args, '-out', `${name}.key`);
    fx.openssl(
      'req',
      '-x509',
      '-key',
      `${name}.key`,
      '-subj',
      `/C=DE/O=Keyward Test/CN=${name} self-signed`,
      '-days',
      '30',
      '-out',
      `${name}.crt`,
    );
  }
  fx.openssl('genpkey', ...KEY_ARGS.rsa, '-out', 'root.key');
  fx.openssl(
    'req',
    '-x509',
    '-key',
    'root.key',
    '-subj',
    '/C=DE/O=Keyward Test/CN=Keyward Test Root',
    '-days',
    '30',
    '-out',
    'root.crt',
  );
  fx.write(
    'ca.ext',
    'basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n',
  );
  fx.openssl('genpkey', ...KEY_ARGS.p256, '-out', 'inter.key');
  fx.openssl(
    'req',
    '-new',
    '-key',
    'inter.key',
    '-subj',
    '/C=DE/O=Keyward Test/CN=Keyward Test Intermediate',
    '-out',
    'inter.csr',
  );
  fx.openssl(
    'x509',
    '-req',
    '-in',
    'inter.csr',
    '-CA',
    'root.crt',
    '-CAkey',
    'root.key',
    '-set_serial',
    '2',
    '-days',
    '30',
    '-extfile',
    'ca.ext',
    '-out',
    'inter.crt',
  );
  fx.openssl(
    'req',
    '-new',
    '-key',
    'p384.key',
    '-subj',
    '/C=DE/O=Keyward Test, Leaves/CN=leaf.example',
    '-out',
    'leaf.csr',
  );
  fx.openssl(
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'inter.crt',
    '-CAkey',
    'inter.key',
    '-set_serial',
    `0x${LEAF_SERIAL}`,
    '-days',
    '30',
    '-out',
    'leaf.crt',
  );
  fx.write('chain.pem', Buffer.concat([fx.read('inter.crt'), fx.read('root.crt')]));
}

/** `openssl pkcs12 -export` of a key and certificate into `out`, with extra options; returns the file. */
export function exportPkcs12(
  fx: FixtureDir,
  out: string,
  key: string,
  cert: string,
  ...options: string[]
): Buffer {
  fx.openssl('pkcs12', '-export', '-inkey', key, '-in', cert, '-out', out, ...options);
  return fx.read(out);
}

/** What `openssl pkcs12 -info` says about a file's structure (MAC, bag encryption). */
export function pkcs12Info(fx: FixtureDir, file: string, password: string): string {
  // OpenSSL prints the structure on stderr.
  const run = spawnSync(
    OPENSSL,
    ['pkcs12', '-info', '-noout', '-legacy', '-in', file, '-passin', `pass:${password}`],
    { cwd: fx.dir, encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`openssl pkcs12 -info failed: ${run.stderr}`);
  return `${run.stdout}${run.stderr}`;
}

/** DER of a PEM certificate file. */
export function certDer(fx: FixtureDir, name: string): Buffer {
  return fx.openssl('x509', '-in', name, '-outform', 'DER');
}

/** SubjectPublicKeyInfo DER of a key file, as OpenSSL writes it. */
export function spkiDer(fx: FixtureDir, key: string): Buffer {
  return fx.openssl('pkey', '-in', key, '-pubout', '-outform', 'DER');
}

/** The serial as `openssl x509 -serial` prints it (upper-case hex). */
export function opensslSerial(fx: FixtureDir, cert: string): string {
  return fx
    .openssl('x509', '-in', cert, '-noout', '-serial')
    .toString()
    .trim()
    .replace(/^serial=/, '');
}

/** Subject or issuer in OpenSSL's RFC 2253 form. */
export function opensslName(fx: FixtureDir, cert: string, which: 'subject' | 'issuer'): string {
  return fx
    .openssl('x509', '-in', cert, '-noout', `-${which}`, '-nameopt', 'RFC2253')
    .toString()
    .trim()
    .replace(/^(subject|issuer)=/, '');
}

/** The SKI extension's value as OpenSSL prints it, or undefined when the extension is absent. */
export function opensslSki(fx: FixtureDir, cert: string): Buffer | undefined {
  const text = fx.openssl('x509', '-in', cert, '-noout', '-ext', 'subjectKeyIdentifier').toString();
  const hex = /([0-9A-F]{2}(?::[0-9A-F]{2})+)/.exec(text)?.[1];
  return hex ? Buffer.from(hex.replaceAll(':', ''), 'hex') : undefined;
}

/**
 * The DER of the issuer or subject Name, located from `openssl asn1parse` offsets (RFC 5280
 * section 4.1: version [0] is absent in v1 certificates, then serial, signature, issuer,
 * validity, subject).
 */
export function tbsNameDer(fx: FixtureDir, cert: string, which: 'issuer' | 'subject'): Buffer {
  const der = certDer(fx, cert);
  const listing = fx.openssl('asn1parse', '-in', cert).toString().split('\n');
  const fields: Buffer[] = [];
  let depth1Seen = 0;
  for (const line of listing) {
    const m = /^\s*(\d+):d=(\d+)\s+hl=(\d+)\s+l=\s*(\d+)/.exec(line);
    if (!m) continue;
    const [off, d, hl, l] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])];
    if (d === 1) depth1Seen++;
    if (d === 2 && depth1Seen === 1) fields.push(der.subarray(off, off + hl + l));
  }
  const versioned = fields[0][0] === 0xa0 ? 1 : 0;
  return fields[versioned + (which === 'issuer' ? 2 : 4)];
}

/** The error `fn` throws (a test fails when it throws nothing). */
export function problemOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error('expected a keystore problem, but nothing was thrown');
}

/**
 * Proves an imported key is the certificate's key: a signature by the private key verifies
 * under the certificate's public key, and for RSA a message encrypted to the certificate
 * decrypts with the private key.
 */
export function proveKeyMatchesCertificate(entry: KeystoreEntry): void {
  const certKey = new X509Certificate(entry.certificates[0]).publicKey;
  const message = Buffer.from('keyward keystore import');
  const digest = entry.type === 'ed25519' ? null : 'sha256';
  const signature = sign(digest, message, entry.privateKey);
  expect(verify(digest, message, certKey, signature)).toBe(true);
  expect(verify(digest, Buffer.from('something else'), certKey, signature)).toBe(false);
  if (entry.type.startsWith('rsa-')) {
    const sealed = publicEncrypt({ key: certKey, oaepHash: 'sha256' }, message);
    expect(privateDecrypt({ key: entry.privateKey, oaepHash: 'sha256' }, sealed)).toEqual(message);
  }
}
