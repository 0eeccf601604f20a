/**
 * Local JOSE checks of migration outputs, without the service (built on jose, the reference
 * library, never on the service's own writers): `keyward open <result> --key` decrypts a
 * conversion's JWE (the multipart/mixed answer, as a job stores it, or the flattened
 * JSON of Accept: application/jose+json) and checks its JWS part when there is one;
 * `keyward verify <jws> --content <file> --cert <pem>` checks a detached JWS over its content.
 * jose takes whole buffers, so both hold the result in memory: fine for archives of ordinary
 * files; the service's stream endpoints re-encrypt and re-sign results of any size.
 */
import {
  X509Certificate,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  verify as nodeVerify,
  type DecipherGCM,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import { flattenedDecrypt, flattenedVerify, generalDecrypt } from 'jose';
import { parseKeystore } from '../../../shared/keystore/index.ts';
import { asRsaKey, keySignatureAlgorithms } from '../../../shared/crypto/rsa-pss.ts';
import { MixedReader } from '../../../shared/jose/mixed-reader.ts';
import { hpkeKeyFromJwk, hpkeUnwrap } from '../../../shared/jose/hpke-jwe.ts';
import { hpkeAlg } from '../../../shared/jose/pq-identifiers.ts';
import type { ResolvedKey } from '../../../shared/jose/types.ts';
import { openContainer } from '../../../shared/pkcs7/container.ts';
import {
  EXIT,
  UsageError,
  print,
  keystorePasswordFromEnv,
  readSecret,
  str,
  writeOutput,
  type Command,
  type Invocation,
} from '../command.ts';

/** Tag bytes per enc (RFC 7518 sections 5.2.6 and 5.3). */
const TAG_BYTES = new Map([
  ['A128CBC-HS256', 16],
  ['A192CBC-HS384', 24],
  ['A256CBC-HS512', 32],
]);

interface FlatJwe {
  protected: string;
  header?: Record<string, unknown>;
  encrypted_key?: string;
  recipients?: Array<{ header?: Record<string, unknown>; encrypted_key?: string }>;
  iv: string;
  ciphertext: string;
  tag: string;
}

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

/** A result file as jose's flattened JWE, plus its JWS part when the conversion added one. */
async function readResult(data: Buffer): Promise<{ jwe: FlatJwe; jws: AnyJws | null }> {
  if (data[0] === 0x7b) return { jwe: JSON.parse(data.toString('utf8')) as FlatJwe, jws: null };
  // A stored multipart JWE starts with its first delimiter: the boundary is on that line.
  const m = /^--([^\r\n]{1,70})\r\n/.exec(data.toString('latin1', 0, 80));
  if (!m) throw new UsageError('the result is neither a multipart/mixed JWE nor a JSON JWE');
  const reader = new MixedReader(once(data), m[1]);
  const head = await reader.nextSmall(1 << 20);
  const body = await reader.nextSmall(data.length);
  const extra = await reader.nextSmall(1 << 20);
  if (!head || !body) throw new UsageError('the multipart JWE lacks its header or ciphertext part');
  const general = JSON.parse(head.data.toString('utf8'));
  const enc = JSON.parse(Buffer.from(general.protected, 'base64url').toString()).enc as string;
  const tagBytes = TAG_BYTES.get(enc) ?? 16;
  const ct = body.data;
  return {
    jwe: {
      protected: general.protected,
      // Several targets (a targetKid list): General JSON, which jose opens with any one's key.
      ...(general.recipients.length === 1
        ? {
            header: general.recipients[0].header,
            encrypted_key: general.recipients[0].encrypted_key,
          }
        : { recipients: general.recipients }),
      iv: general.iv,
      ciphertext: ct.subarray(0, ct.length - tagBytes).toString('base64url'),
      tag: ct.subarray(ct.length - tagBytes).toString('base64url'),
    },
    jws: extra ? JSON.parse(extra.data.toString('utf8')) : null,
  };
}

/** A private or secret key from PEM (PKCS#8, SEC 1, PKCS#1), PKCS#12 or a JWK file. */
async function loadKey(file: string): Promise<KeyObject> {
  const data = readFileSync(file);
  const text = data.toString('utf8').trim();
  if (text.startsWith('{')) {
    const jwk = JSON.parse(text);
    return jwk.kty === 'oct'
      ? createSecretKey(Buffer.from(jwk.k, 'base64url'))
      : createPrivateKey({ key: jwk, format: 'jwk' });
  }
  if (text.startsWith('-----BEGIN') && !text.includes('ENCRYPTED')) return createPrivateKey(data);
  // Never an argument: a command line is visible to other users.
  const pass = await readSecret(
    keystorePasswordFromEnv(),
    'KEYWARD_KEY_PASSWORD',
    'Keystore password',
  );
  const [entry] = parseKeystore({ data, password: pass });
  return entry.privateKey;
}

/** An HPKE key (a private AKP JWK of HPKE-n or HPKE-n-KE), or null for any other key file. */
function hpkeKeyOf(file: string): ResolvedKey | null {
  const text = readFileSync(file, 'utf8').trim();
  if (!text.startsWith('{')) return null;
  const jwk = JSON.parse(text) as Record<string, unknown>;
  return jwk.kty === 'AKP' && hpkeAlg(jwk.alg) ? hpkeKeyFromJwk(jwk) : null;
}

/**
 * Opens an HPKE Key Encryption recipient (draft-ietf-jose-hpke-encrypt section 6), which jose
 * does not read: the content key with the service's HPKE reader, the AES-GCM content with Node.
 */
function openHpke(jwe: FlatJwe, key: ResolvedKey): Buffer {
  const prot = JSON.parse(Buffer.from(jwe.protected, 'base64url').toString()) as Record<
    string,
    unknown
  >;
  const enc = String(prot.enc);
  const bits = /^A(128|192|256)GCM$/.exec(enc)?.[1];
  if (!bits) throw new Error(`enc ${enc.slice(0, 16)} is not read for HPKE recipients here`);
  const recipients = jwe.recipients ?? [{ header: jwe.header, encrypted_key: jwe.encrypted_key }];
  const mine = recipients.filter((r) => hpkeAlg(r.header?.alg)?.type === key.type);
  for (const r of mine) {
    const cek = hpkeUnwrap(
      key,
      { ...prot, ...r.header },
      Buffer.from(String(r.encrypted_key), 'base64url'),
      enc,
      Number(bits) / 8,
    );
    const d = createDecipheriv(
      `aes-${bits}-gcm`,
      cek,
      Buffer.from(jwe.iv, 'base64url'),
    ) as DecipherGCM;
    d.setAAD(Buffer.from(jwe.protected, 'ascii'));
    d.setAuthTag(Buffer.from(jwe.tag, 'base64url'));
    try {
      return Buffer.concat([d.update(Buffer.from(jwe.ciphertext, 'base64url')), d.final()]);
    } catch {
      // another recipient of the same key type, if any
    }
  }
  throw new Error('no HPKE recipient opens with this key');
}

/** The public key of a certificate or public key (PEM), or a JWK file. */
function loadPublic(file: string): KeyObject {
  const text = readFileSync(file, 'utf8').trim();
  return text.startsWith('{')
    ? createPublicKey({ key: JSON.parse(text), format: 'jwk' })
    : createPublicKey(text);
}

interface FlatJws {
  protected: string;
  signature: string;
  header?: Record<string, unknown>;
}

/** A converted SignedData's JWS: flattened, or General JSON with one signature per key. */
type AnyJws = FlatJws | { signatures: FlatJws[] };

/** An original CMS signer as the protected header records it (`kw_signers`). */
interface OriginalSigner {
  subject: string | null;
  signingTime: string | null;
  digestAlg: string;
  verified: string;
}

interface Verification {
  valid: boolean;
  alg?: string;
  kid?: string;
  signers?: OriginalSigner[];
}

function originalSigners(header: Record<string, unknown>): OriginalSigner[] {
  const list = Array.isArray(header.kw_signers) ? header.kw_signers : [];
  return list.map(
    (s: { x5c?: string[]; signingTime?: string; digestAlg?: string; verified?: string }) => {
      let subject: string | null = null;
      try {
        if (s.x5c?.[0])
          subject = new X509Certificate(Buffer.from(s.x5c[0], 'base64')).subject.replace(
            /\n/g,
            ', ',
          );
      } catch {
        subject = null;
      }
      return {
        subject,
        signingTime: s.signingTime ?? null,
        digestAlg: String(s.digestAlg ?? ''),
        verified: String(s.verified ?? ''),
      };
    },
  );
}

/**
 * Checks one JWS signature and answers its alg. jose 6 reads neither Ed448 nor id-RSASSA-PSS key
 * objects: Ed448 is checked with Node over the signing input (RFC 7515 section 5.2, RFC 8037), an
 * id-RSASSA-PSS key by jose as the plain RSA key of the same numbers, for the PS* its parameters
 * allow only (RFC 4055 binds the key to them).
 */
async function verifyOne(
  sig: FlatJws,
  header: Record<string, unknown>,
  content: Buffer,
  key: KeyObject,
): Promise<string | undefined> {
  const payload = header.b64 !== false ? content.toString('base64url') : content;
  if (key.asymmetricKeyType === 'ed448') {
    const crit = header.crit;
    const critOk = crit === undefined || (Array.isArray(crit) && crit.every((c) => c === 'b64'));
    const input = Buffer.concat([Buffer.from(`${sig.protected}.`), Buffer.from(payload)]);
    if (
      header.alg !== 'EdDSA' ||
      !critOk ||
      !nodeVerify(null, input, key, Buffer.from(sig.signature, 'base64url'))
    )
      throw new Error('the Ed448 signature does not verify');
    return 'EdDSA';
  }
  if (
    key.asymmetricKeyType === 'rsa-pss' &&
    !keySignatureAlgorithms(key, ['PS256', 'PS384', 'PS512']).some((a) => a === header.alg)
  )
    throw new Error('the RSASSA-PSS key does not sign this alg');
  const r = await flattenedVerify({ ...sig, payload }, asRsaKey(key));
  return r.protectedHeader?.alg;
}

/** Valid when one of the JWS's signatures verifies with `key` over `content`. */
async function verifyJws(jws: AnyJws, content: Buffer, key: KeyObject): Promise<Verification> {
  for (const sig of 'signatures' in jws ? jws.signatures : [jws]) {
    try {
      const header = JSON.parse(Buffer.from(sig.protected, 'base64url').toString());
      const alg = await verifyOne(sig, header, content, key);
      return {
        valid: true,
        alg,
        kid: typeof header.kid === 'string' ? header.kid : undefined,
        signers: originalSigners(header),
      };
    } catch {
      // the next signature, if any
    }
  }
  return { valid: false };
}

/**
 * The bytes a JWS part covers in a decrypted result: the plaintext, or, for signed-then-encrypted
 * mail (a clear-signed entity inside the envelope), the signed MIME entity as the signature
 * covers it, taken with the service's own container reader.
 */
async function signedBytesOf(plaintext: Buffer): Promise<Buffer | null> {
  try {
    const container = await openContainer(once(plaintext));
    if (!container.signedContent) {
      await container.close();
      return null;
    }
    const parts: Buffer[] = [];
    for await (const c of container.signedContent) parts.push(Buffer.from(c));
    await container.close();
    return Buffer.concat(parts);
  } catch {
    return null;
  }
}

function describe(v: Verification): string {
  const lines = [
    `${v.valid ? 'valid' : 'INVALID'} JWS${v.alg ? ` (${v.alg}` : ''}${v.kid ? `, archive signature by ${v.kid}` : ''}${v.alg ? ')' : ''}`,
  ];
  for (const s of v.signers ?? [])
    lines.push(
      `  original signer: ${s.subject ?? '(no certificate)'}; ${s.digestAlg}; signed ${s.signingTime ?? '(no signing time)'}; verified: ${s.verified}`,
    );
  return `${lines.join('\n')}\n`;
}

/** A key in a few words: its file and kind ("rsa.pem, an RSA 2048-bit private key"). */
function keyWords(file: string, key: KeyObject): string {
  if (key.type === 'secret') return `${file}, a ${(key.symmetricKeySize ?? 0) * 8}-bit secret key`;
  const d = key.asymmetricKeyDetails;
  const kind = key.asymmetricKeyType?.toUpperCase() ?? 'unknown';
  const size = d?.namedCurve ?? (d?.modulusLength ? `${d.modulusLength}-bit` : '');
  return `${file}, an ${kind}${size ? ` ${size}` : ''} private key`;
}

/** Who a JWE is for (the kids of its recipients) and the key given, for a failure to open it. */
function forWhom(jwe: FlatJwe, file: string, key: KeyObject): string {
  const kids = (jwe.recipients ?? [{ header: jwe.header }])
    .map((r) => r.header?.kid)
    .filter((k): k is string => typeof k === 'string');
  const target = kids.length
    ? `the JWE is for ${kids.length === 1 ? 'kid' : 'kids'} ${kids.join(', ')}`
    : 'the JWE names no kid';
  return `${target}; the key given is ${keyWords(file, key)}`;
}

const openCommand: Command = {
  name: 'open',
  local: true,
  summary: 'Decrypt a conversion result (JWE) locally with jose; exit 4 when it does not open',
  args: ['<result>'],
  details:
    'The result as a job stored it (<name>.jwe, multipart/mixed) or as convert answered it (multipart, or JSON for Accept: application/jose+json). With --cert, a JWS part (signed and encrypted inputs) is verified over the plaintext too. No login needed.',
  options: {
    key: {
      type: 'string',
      value: '<pem|p12|jwk>',
      help: 'the recipient private key: PEM, PKCS#12 (password from KEYWARD_KEY_PASSWORD or KEYWARD_KEYSTORE_PASSWORD, or stdin) or JWK',
    },
    cert: {
      type: 'string',
      value: '<pem>',
      help: "the signer's certificate, to verify a JWS part",
    },
    out: { type: 'string', value: '<file|->', help: 'plaintext file; - or none: stdout' },
  },
  async run(inv) {
    const keyFile = str(inv.values, 'key');
    if (!keyFile) throw new UsageError('open needs --key <pem|p12|jwk>');
    const { jwe, jws } = await readResult(readFileSync(inv.args[0]));
    const hpke = hpkeKeyOf(keyFile);
    const key = hpke ? null : await loadKey(keyFile);
    let plaintext: Uint8Array;
    try {
      plaintext = hpke
        ? openHpke(jwe, hpke)
        : (jwe.recipients
            ? await generalDecrypt({ ...jwe, recipients: jwe.recipients }, key!)
            : await flattenedDecrypt(jwe, key!)
          ).plaintext;
    } catch (err) {
      inv.stderr.write(
        `keyward: the JWE does not open with this key: ${(err as Error).message}${key ? `; ${forWhom(jwe, keyFile, key)}` : ''}\n`,
      );
      return EXIT.invalid;
    }
    const certFile = str(inv.values, 'cert');
    if (jws && certFile) {
      const pub = loadPublic(certFile);
      let v = await verifyJws(jws, Buffer.from(plaintext), pub);
      if (!v.valid) {
        const signed = await signedBytesOf(Buffer.from(plaintext));
        if (signed) v = await verifyJws(jws, signed, pub);
      }
      if (!v.valid) {
        inv.stderr.write('keyward: the JWS part does not verify over the plaintext\n');
        return EXIT.invalid;
      }
      inv.stderr.write(`JWS part verifies: ${describe(v)}`);
    } else if (jws) inv.stderr.write('the result has a JWS part; --cert <pem> verifies it\n');
    await writeOutput(inv, str(inv.values, 'out'), plaintext, true);
    return EXIT.ok;
  },
};

/** `keyward verify <jws> --content <file> --cert <pem>`: the local form of verify. */
export async function verifyLocally(inv: Invocation): Promise<number> {
  const contentFile = str(inv.values, 'content');
  const certFile = str(inv.values, 'cert');
  if (!contentFile || !certFile)
    throw new UsageError('verify <jws> needs --content <file> and --cert <pem>');
  const jws = JSON.parse(readFileSync(inv.args[0], 'utf8')) as AnyJws;
  const v = await verifyJws(jws, readFileSync(contentFile), loadPublic(certFile));
  print(inv, v, () => describe(v));
  return v.valid ? EXIT.ok : EXIT.invalid;
}

export const localJoseCommands: Command[] = [openCommand];
