/**
 * The mailbox of the small-messages bench (bench/mailbox.bench.ts): N S/MIME messages made by
 * `openssl cms` (60 % encrypted to one RSA-2048 recipient with AES-256-CBC, 20 % clear-signed
 * multipart/signed with RSA-2048 and SHA-256, 20 % clear-signed then encrypted to two
 * recipients), message sizes log-normal around a 30 KB median clipped to 5-200 KB, drawn from a
 * seeded PRNG. The mailbox is cached under the temp dir, keyed by its parameters, so a rerun
 * starts at once; the manifest is written last and marks a complete cache.
 *
 * Also the per-message cryptographic floor: what each message costs however it is parsed (the
 * key unwrap, the content decryption, the new encryption and key wrap; the digest, the signature
 * check and the new signature), on buffers of the message's sizes, nothing else.
 */
import { execFile } from 'node:child_process';
import {
  X509Certificate,
  constants,
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  createSign,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  sign,
  verify,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestKey } from '../../support/fixtures/pkcs7.ts';
import { prng } from '../../support/prng.ts';
import { encryptArgs, signArgs } from '../../support/fixtures/cms.ts';
import { OPENSSL } from './cms.ts';
import { pool } from './jobs.ts';

export const KINDS = ['encrypted', 'signed', 'signed+encrypted'] as const;
export type Kind = (typeof KINDS)[number];

/** One message of the mailbox. */
export interface Message {
  /** File name under the mailbox's `mail/` folder. */
  name: string;
  kind: Kind;
  /** Size of the file. */
  bytes: number;
  /** Bytes of the text that was signed or encrypted, in its canonical form (CRLF line ends). */
  content: number;
  /** Bytes under the AES-256-CBC layer (the content, or the whole signed mail); 0 when signed only. */
  encrypted: number;
}

export interface Mailbox {
  /** The folder holding the messages (`<cache>/mail`). */
  mailDir: string;
  messages: Message[];
  /** The recipient the tenant holds, the second recipient it does not, and the signer. */
  keys: { recipient: TestKey; other: TestKey; signer: TestKey };
}

const KB = 1000;
/** Bumped whenever what is generated changes, so an old cache is not reused. */
const FORMAT = 3;
// Log-normal: median 30 KB, sigma 0.8 puts 5 KB and 200 KB about 2.3 sigma either side.
const MEDIAN = 30 * KB;
const SIGMA = 0.8;
const MIN = 5 * KB;
const MAX = 200 * KB;
/** openssl processes run side by side while generating (the machine has 2 cores). */
const GENERATORS = 2;

/** The kind of message `i`: 3 in 5 encrypted, 1 signed, 1 signed then encrypted. */
const kindOf = (i: number): Kind =>
  i % 5 < 3 ? 'encrypted' : i % 5 === 3 ? 'signed' : 'signed+encrypted';

/** The message size of each index: log-normal (Box-Muller over the seeded PRNG), clipped. */
function drawSizes(count: number, seed: number): number[] {
  const rand = prng(seed);
  return Array.from({ length: count }, () => {
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    return Math.round(Math.min(MAX, Math.max(MIN, MEDIAN * Math.exp(SIGMA * z))));
  });
}

/**
 * The content size that makes a message of about `size` bytes: an S/MIME body is the base64 of
 * the DER (4/3, plus line ends) and a signature part carries the signer's certificate (~2.8 KB).
 */
function contentFor(kind: Kind, size: number): number {
  const signature = 2800;
  const base64 = 1.37;
  const n =
    kind === 'encrypted'
      ? size / base64 - 500
      : kind === 'signed'
        ? size - signature
        : (size - 800) / base64 - signature;
  return Math.max(512, Math.round(n));
}

const run = (cwd: string, args: string[]) =>
  new Promise<void>((resolve, reject) =>
    execFile(OPENSSL, args, { cwd }, (err, _out, stderr) =>
      err ? reject(new Error(`openssl ${args.slice(0, 2).join(' ')}: ${stderr}`)) : resolve(),
    ),
  );

function loadKey(dir: string, kid: string): TestKey {
  const keyFile = join(dir, `${kid}.key`);
  const certFile = join(dir, `${kid}.crt`);
  return {
    kid,
    type: 'rsa-2048',
    keyFile,
    certFile,
    privateKey: createPrivateKey(readFileSync(keyFile)),
    certificate: Buffer.from(new X509Certificate(readFileSync(certFile)).raw),
  };
}

async function makeKeys(dir: string): Promise<void> {
  for (const kid of ['mailbox-recipient', 'mailbox-other', 'mailbox-signer'])
    await run(dir, [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${kid}.key`,
      '-out',
      `${kid}.crt`,
      '-subj',
      `/CN=${kid}/O=Keyward Bench`,
      '-days',
      '3650',
    ]);
}

const ENTITY_HEAD = 'Content-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n';

/** A MIME entity as a mail holds an attachment: its headers, then base64 lines of 76 characters. */
function textOf(random: Buffer, bytes: number, offset: number): Buffer {
  const body = bytes - ENTITY_HEAD.length;
  const start = offset % (random.length - body);
  const b64 = random.toString('base64', start, start + Math.ceil((body * 3) / 4));
  return Buffer.from(ENTITY_HEAD + b64.replace(/.{1,76}/g, '$&\n').slice(0, body - 1) + '\n');
}

/** The mailbox's signer, as the cms fixtures name a key. */
const SIGNER = { certFile: 'mailbox-signer.crt', keyFile: 'mailbox-signer.key' };

async function makeMessage(dir: string, i: number, kind: Kind, content: Buffer): Promise<Message> {
  const name = `m${String(i).padStart(5, '0')}.eml`;
  const plain = `tmp/${i}.txt`;
  const signed = `tmp/${i}.signed`;
  const out = `mail/${name}`;
  writeFileSync(join(dir, plain), content);
  const clearSign = (to: string) =>
    run(dir, signArgs(plain, { by: SIGNER, md: 'sha256', out: to }));
  const encrypt = (from: string, recipients: string[]) =>
    run(
      dir,
      encryptArgs(from, {
        to: recipients.map((certFile) => ({ certFile })),
        cipher: 'aes-256-cbc',
        out,
      }),
    );
  // Without -binary openssl signs and encrypts the canonical form: CRLF line ends (RFC 8551 3.1.1).
  const canonical = content.length + content.filter((b) => b === 0x0a).length;
  let encrypted = 0;
  if (kind === 'encrypted') {
    await encrypt(plain, ['mailbox-recipient.crt']);
    encrypted = canonical;
  } else if (kind === 'signed') await clearSign(out);
  else {
    await clearSign(signed);
    await encrypt(signed, ['mailbox-recipient.crt', 'mailbox-other.crt']);
    encrypted = statSync(join(dir, signed)).size;
    rmSync(join(dir, signed));
  }
  rmSync(join(dir, plain));
  return { name, kind, bytes: statSync(join(dir, out)).size, content: canonical, encrypted };
}

/**
 * The mailbox of `count` messages drawn with `seed`, from the cache when a previous run made it
 * (under the temp dir, named by the parameters), else generated there with openssl.
 */
export async function mailbox(
  count: number,
  seed: number,
  log: (line: string) => void,
): Promise<Mailbox & { cacheDir: string; generatedSeconds: number | null }> {
  const cacheDir = join(tmpdir(), `keyward-mailbox-v${FORMAT}-${count}-seed${seed}`);
  const manifest = join(cacheDir, 'manifest.json');
  const keysOf = () => ({
    recipient: loadKey(cacheDir, 'mailbox-recipient'),
    other: loadKey(cacheDir, 'mailbox-other'),
    signer: loadKey(cacheDir, 'mailbox-signer'),
  });
  if (existsSync(manifest)) {
    const messages = JSON.parse(readFileSync(manifest, 'utf8')) as Message[];
    return {
      mailDir: join(cacheDir, 'mail'),
      messages,
      keys: keysOf(),
      cacheDir,
      generatedSeconds: null,
    };
  }
  // A cache without its manifest is a generation that did not finish.
  rmSync(cacheDir, { recursive: true, force: true });
  mkdirSync(join(cacheDir, 'mail'), { recursive: true });
  mkdirSync(join(cacheDir, 'tmp'));
  const started = performance.now();
  await makeKeys(cacheDir);
  const sizes = drawSizes(count, seed);
  const random = randomBytes(MAX + 64 * KB);
  const messages: Message[] = new Array(count);
  let done = 0;
  await pool(
    sizes.map((size, i) => ({ size, i })),
    GENERATORS,
    async ({ size, i }) => {
      const kind = kindOf(i);
      messages[i] = await makeMessage(
        cacheDir,
        i,
        kind,
        textOf(random, contentFor(kind, size), i * 7919),
      );
      done += 1;
      if (done % 1000 === 0) log(`  generated ${done}/${count} messages`);
    },
  );
  rmSync(join(cacheDir, 'tmp'), { recursive: true, force: true });
  writeFileSync(manifest, JSON.stringify(messages));
  return {
    mailDir: join(cacheDir, 'mail'),
    messages,
    keys: keysOf(),
    cacheDir,
    generatedSeconds: (performance.now() - started) / 1000,
  };
}

/** What the floor needs, prepared once: the keys, a wrapped key, a signature to check, bytes. */
export interface Floor {
  /** Does the unavoidable cryptography of one message; answers a byte of its output (kept alive). */
  one(m: Message): number;
}

/** The per-message cryptographic floor with the mailbox's keys (see the file comment). */
export function cryptoFloor(keys: Mailbox['keys']): Floor {
  const recipient = keys.recipient.privateKey;
  const recipientPublic = createPublicKey(recipient);
  const signer = keys.signer.privateKey;
  const signerPublic = createPublicKey(signer);
  const wrapped = publicEncrypt(
    { key: recipientPublic, padding: constants.RSA_PKCS1_PADDING },
    randomBytes(32),
  );
  // A CMS signer signs its signed attributes (content type, time, digest: about 100 bytes).
  const attributes = randomBytes(104);
  const signature = sign('sha256', attributes, signer);
  const bytes = randomBytes(MAX + 64 * KB);
  const iv = randomBytes(16);
  const protectedHeader = `${Buffer.from('{"alg":"RS256","b64":false,"crit":["b64"],"kid":"mailbox-signer"}').toString('base64url')}.`;

  const decryptAndReencrypt = (size: number): number => {
    const cek = privateDecrypt({ key: recipient, padding: constants.RSA_PKCS1_PADDING }, wrapped);
    // Keys as KeyObjects: Node 24 spends about 20 µs testing raw key bytes as a KeyObject.
    const cbc = createDecipheriv('aes-256-cbc', createSecretKey(cek), iv).setAutoPadding(false);
    const plain = cbc.update(bytes.subarray(0, size - (size % 16) + 16));
    cbc.final();
    const newKey = randomBytes(32);
    const gcm = createCipheriv('aes-256-gcm', createSecretKey(newKey), iv.subarray(0, 12));
    const out = gcm.update(plain.subarray(0, size));
    gcm.final();
    gcm.getAuthTag();
    publicEncrypt(
      { key: recipientPublic, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
      newKey,
    );
    return out[0];
  };
  const verifyAndResign = (size: number): number => {
    const content = bytes.subarray(0, size);
    createHash('sha256').update(content).digest();
    if (!verify('sha256', attributes, signerPublic, signature))
      throw new Error('floor: the signature does not verify');
    // RFC 7797: the detached JWS signs its header and the content itself.
    return createSign('sha256').update(protectedHeader).update(content).sign(signer)[0];
  };
  return {
    one(m) {
      if (m.kind === 'encrypted') return decryptAndReencrypt(m.encrypted);
      if (m.kind === 'signed') return verifyAndResign(m.content);
      return decryptAndReencrypt(m.encrypted) ^ verifyAndResign(m.content);
    },
  };
}
