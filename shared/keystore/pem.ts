/**
 * PEM bundles (RFC 7468): private keys (PKCS#8 "PRIVATE KEY" and "ENCRYPTED PRIVATE KEY",
 * RFC 5958; the OpenSSL "RSA PRIVATE KEY" / "EC PRIVATE KEY" forms, with or without RFC 1421
 * Proc-Type encryption) and "CERTIFICATE" blocks.
 */
import { createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { EncryptedPrivateKeyInfo, PrivateKeyInfo } from '@peculiar/asn1-pkcs8';
import { ASN1_LIMITS, parseAsn } from '../asn1/der.ts';
import { DecryptionFailed, pbeDecrypt } from './pbe.ts';
import { WorkBudget, bmpPassword } from './pkcs12-kdf.ts';
import { unloadableKeyProblem } from './entries.ts';
import type { FoundCertificate, FoundKey } from './entries.ts';
import { problem } from '../errors/index.ts';

interface PemBlock {
  label: string;
  /** The whole block, boundaries and RFC 1421 headers included. */
  text: string;
  /** Base64 body (RFC 7468 section 3), headers removed. */
  body: string;
}

const KEY_LABELS = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY', 'DSA PRIVATE KEY']);
const BEGIN = /^-----BEGIN ([A-Z0-9 ]{1,64})-----$/;
const END = /^-----END ([A-Z0-9 ]{1,64})-----$/;

/** Reads the private keys and certificates of a PEM bundle; other block types are ignored. */
export function readPem(
  data: Buffer,
  password: string | undefined,
  budget = new WorkBudget(),
): { keys: FoundKey[]; certs: FoundCertificate[] } {
  const blocks = pemBlocks(data.toString('utf8'));
  const keys: FoundKey[] = [];
  const certs: FoundCertificate[] = [];
  for (const block of blocks) {
    if (block.label === 'ENCRYPTED PRIVATE KEY')
      keys.push({ privateKey: encryptedPkcs8Key(block, password, budget) });
    else if (KEY_LABELS.has(block.label)) keys.push({ privateKey: pemKey(block, password) });
    else if (block.label === 'CERTIFICATE') certs.push({ der: base64Body(block) });
    else if (block.label === 'OPENSSH PRIVATE KEY') {
      throw problem(
        'keystore_unsupported_algorithm',
        'OpenSSH private key format is not supported; convert it with `ssh-keygen -p -m PKCS8`',
      );
    }
  }
  if (keys.length === 0) {
    const found = blocks.map((b) => b.label).join(', ') || 'no PEM blocks';
    throw problem('keystore_empty', `the PEM input holds no private key (found: ${found})`);
  }
  return { keys, certs };
}

/** RFC 7468 section 2: splits the text into blocks; text outside blocks is allowed and skipped. */
export function pemBlocks(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  let open: { label: string; lines: string[] } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const begin = BEGIN.exec(line);
    if (begin) {
      if (open)
        throw problem(
          'keystore_malformed',
          `PEM block '${open.label}' has no END line before the next BEGIN`,
        );
      open = { label: begin[1], lines: [line] };
      continue;
    }
    if (!open) continue;
    open.lines.push(line);
    const end = END.exec(line);
    if (!end) continue;
    if (end[1] !== open.label)
      throw problem('keystore_malformed', `PEM block '${open.label}' ends with END ${end[1]}`);
    const inner = open.lines.slice(1, -1);
    // RFC 1421 headers ("Proc-Type: ...") end at the first empty line.
    const headerEnd = inner.some((l) => l.includes(':')) ? inner.indexOf('') : -1;
    blocks.push({
      label: open.label,
      text: `${open.lines.join('\n')}\n`,
      body: inner.slice(headerEnd + 1).join(''),
    });
    open = undefined;
  }
  if (open)
    throw problem(
      'keystore_malformed',
      `PEM block '${open.label}' has no END line (the input is truncated)`,
    );
  return blocks;
}

export function base64Body(block: PemBlock): Buffer {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(block.body) || block.body.length === 0) {
    throw problem('keystore_malformed', `PEM block '${block.label}' is not valid base64`);
  }
  return Buffer.from(block.body, 'base64');
}

/**
 * An "ENCRYPTED PRIVATE KEY" (RFC 5958 section 3), decrypted by pbe.ts rather than by Node, so
 * that its iteration count or scrypt cost is charged to the work budget like a PKCS#12 file's.
 */
function encryptedPkcs8Key(
  block: PemBlock,
  password: string | undefined,
  budget: WorkBudget,
): KeyObject {
  const what = "PEM block 'ENCRYPTED PRIVATE KEY'";
  const epki = parseAsn(base64Body(block), EncryptedPrivateKeyInfo, what, 'keystore_malformed');
  const pw = password ?? '';
  let plain: Buffer;
  try {
    plain = pbeDecrypt(
      epki.encryptionAlgorithm,
      Buffer.from(epki.encryptedData.buffer),
      { utf8: Buffer.from(pw, 'utf8'), bmp: bmpPassword(pw) },
      budget,
    );
  } catch (cause) {
    if (!(cause instanceof DecryptionFailed)) throw cause;
    throw wrongPassword(password, cause);
  }
  let info: PrivateKeyInfo;
  try {
    // No MAC protects a PEM key: garbage that got past the padding check is a wrong password.
    info = parseAsn(plain, PrivateKeyInfo, what, 'keystore_malformed');
  } catch (cause) {
    throw wrongPassword(password, cause);
  }
  try {
    return createPrivateKey({ key: plain, format: 'der', type: 'pkcs8' });
  } catch (cause) {
    throw unloadableKeyProblem(info.privateKeyAlgorithm.algorithm, what, cause);
  }
}

function wrongPassword(password: string | undefined, cause: unknown): Error {
  return password
    ? problem(
        'keystore_password_invalid',
        'decryption failed: the password does not decrypt the PEM private key',
        { cause },
      )
    : problem(
        'keystore_password_invalid',
        'the PEM private key is encrypted and no password was given',
        { cause },
      );
}

/**
 * An unencrypted PEM key, or an OpenSSL "traditional" one with RFC 1421 Proc-Type encryption
 * (a single MD5 round, so Node may derive it). Failures are told apart by structure, not by
 * OpenSSL's error code (its decoders say "unsupported" for garbage too).
 */
function pemKey(block: PemBlock, password: string | undefined): KeyObject {
  const encrypted = /Proc-Type:\s*4,ENCRYPTED/.test(block.text);
  try {
    return createPrivateKey({ key: block.text, format: 'pem', passphrase: password });
  } catch (cause) {
    if (encrypted) throw wrongPassword(password, cause);
    const oid = block.label === 'PRIVATE KEY' ? pkcs8AlgorithmOf(block) : undefined;
    if (oid) throw unloadableKeyProblem(oid, `PEM block '${block.label}'`, cause);
    throw problem('keystore_malformed', `PEM block '${block.label}' is not a valid private key`, {
      cause,
    });
  }
}

/** The algorithm OID of a PKCS#8 PrivateKeyInfo body (RFC 5958 section 2), if it is one. */
function pkcs8AlgorithmOf(block: PemBlock): string | undefined {
  try {
    return AsnConvert.parse(Buffer.from(block.body, 'base64'), PrivateKeyInfo, ASN1_LIMITS)
      .privateKeyAlgorithm.algorithm;
  } catch {
    return undefined;
  }
}
