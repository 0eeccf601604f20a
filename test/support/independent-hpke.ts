/**
 * An HPKE JWE reader the service did not write, to open its post-quantum outputs in tests: the
 * KEMs are @hpke/ml-kem (the `mlkem` package) and @hpke/hybridkem-x-wing, SHAKE256 is
 * @hpke/common's (noble), AES-256-GCM is @hpke/core's (WebCrypto). Only the short key schedule of
 * draft-ietf-hpke-hpke (one-stage KDF, base mode) and the JWE framing of
 * draft-ietf-jose-hpke-encrypt are written here, and the tests prove them on the drafts'
 * published vectors before trusting them with our outputs. Nothing here imports shared/.
 */
import type { DecipherGCM } from 'node:crypto';
import { createDecipheriv } from 'node:crypto';
import { Aes256Gcm } from '@hpke/core';
import { shake256 } from '@hpke/common';
import { MlKem1024, MlKem768 } from '@hpke/ml-kem';
import { XWing } from '@hpke/hybridkem-x-wing';

/** The suites, by JWE `alg` without `-KE`: KEM id and a fresh KEM of the independent packages. */
const SUITES: Record<string, { kemId: number; kem: () => MlKem768 | MlKem1024 | XWing }> = {
  'HPKE-9': { kemId: 0x647a, kem: () => new XWing() },
  'HPKE-12': { kemId: 0x0041, kem: () => new MlKem768() },
  'HPKE-13': { kemId: 0x0042, kem: () => new MlKem1024() },
};

const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const lp = (b: Uint8Array) => Buffer.concat([u16(b.length), b]);

function keySchedule(kemId: number, shared: Uint8Array, info: Uint8Array) {
  const suiteId = Buffer.concat([Buffer.from('HPKE'), u16(kemId), u16(0x0011), u16(0x0002)]);
  const length = 32 + 12 + 64;
  const ikm = Buffer.concat([
    lp(Buffer.alloc(0)), // psk
    lp(shared),
    Buffer.from('HPKE-v1'),
    suiteId,
    lp(Buffer.from('secret')),
    u16(length),
    Buffer.from([0]), // mode_base
    lp(Buffer.alloc(0)), // psk_id
    lp(info),
  ]);
  const secret = Buffer.from(shake256(ikm, { dkLen: length }));
  return { key: secret.subarray(0, 32), nonce: secret.subarray(32, 44) };
}

/** HPKE Open with the independent KEM; `priv` is the HPKE SerializePrivateKey (the seed). */
export async function hpkeOpen(
  alg: string,
  priv: Uint8Array,
  enc: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  ct: Uint8Array,
): Promise<Buffer> {
  const suite = SUITES[alg.replace(/-KE$/, '')];
  if (!suite) throw new Error(`no suite for ${alg}`);
  const kem = suite.kem();
  const recipientKey = await kem.deserializePrivateKey(new Uint8Array(priv).buffer);
  const shared = new Uint8Array(await kem.decap({ enc: new Uint8Array(enc).buffer, recipientKey }));
  const { key, nonce } = keySchedule(suite.kemId, shared, info);
  const ctx = new Aes256Gcm().createEncryptionContext(new Uint8Array(key).buffer);
  return Buffer.from(await ctx.open(nonce, ct, aad));
}

/** The public key the independent KEM derives from a private key: the check of `pub`. */
export async function hpkePublicKey(alg: string, priv: Uint8Array): Promise<Buffer> {
  const kem = SUITES[alg.replace(/-KE$/, '')].kem();
  // X-Wing's deriveKeyPair hashes its input first (HPKE DeriveKeyPair); its key pair *from* the
  // seed is generateKeyPairDerand. ML-KEM's deriveKeyPair takes d || z as it is.
  const { publicKey } =
    kem instanceof XWing
      ? await kem.generateKeyPairDerand(new Uint8Array(priv))
      : await kem.deriveKeyPair(new Uint8Array(priv).buffer);
  return Buffer.from(await kem.serializePublicKey(publicKey));
}

const b64 = (s: string) => Buffer.from(s, 'base64url');

function recipientStructure(enc: string): Buffer {
  return Buffer.concat([
    Buffer.from('JOSE-HPKE rcpt'),
    Buffer.from([0xff]),
    Buffer.from(enc),
    Buffer.from([0xff]),
  ]);
}

/** Opens a compact JWE, Integrated (`HPKE-n`) or Key Encryption (`HPKE-n-KE`). */
export async function openCompact(compact: string, priv: Uint8Array): Promise<Buffer> {
  const [h, ek, iv, ct, tag] = compact.split('.');
  const header = JSON.parse(b64(h).toString()) as Record<string, string>;
  if (!header.alg.endsWith('-KE')) {
    if (header.enc !== undefined || iv !== '' || tag !== '') throw new Error('not Integrated');
    return hpkeOpen(header.alg, priv, b64(ek), new Uint8Array(0), Buffer.from(h), b64(ct));
  }
  const cek = await hpkeOpen(
    header.alg,
    priv,
    b64(header.ek),
    recipientStructure(header.enc),
    new Uint8Array(0),
    b64(ek),
  );
  return gcm(header.enc, cek, b64(iv), b64(ct), b64(tag), Buffer.from(h));
}

/**
 * Opens a General or flattened JSON JWE whose recipients use HPKE Key Encryption, with the
 * recipient whose `kid` is given; `ciphertext` and `tag` may come apart (a detached form).
 */
export async function openJson(
  jwe: {
    protected: string;
    aad?: string;
    iv: string;
    recipients?: { header?: Record<string, string>; encrypted_key: string }[];
    header?: Record<string, string>;
    encrypted_key?: string;
  },
  kid: string,
  priv: Uint8Array,
  body: { ciphertext: Buffer; tag: Buffer },
): Promise<Buffer> {
  const prot = JSON.parse(b64(jwe.protected).toString()) as Record<string, string>;
  const recipients = jwe.recipients ?? [{ header: jwe.header, encrypted_key: jwe.encrypted_key! }];
  const r = recipients.find((x) => (x.header?.kid ?? prot.kid) === kid);
  if (!r) throw new Error(`no recipient ${kid}`);
  const h = { ...prot, ...r.header };
  const cek = await hpkeOpen(
    h.alg,
    priv,
    b64(h.ek),
    recipientStructure(h.enc),
    new Uint8Array(0),
    b64(r.encrypted_key),
  );
  const aad = Buffer.from(jwe.aad === undefined ? jwe.protected : `${jwe.protected}.${jwe.aad}`);
  return gcm(h.enc, cek, b64(jwe.iv), body.ciphertext, body.tag, aad);
}

function gcm(enc: string, cek: Buffer, iv: Buffer, ct: Buffer, tag: Buffer, aad: Buffer): Buffer {
  const bits = /^A(128|192|256)GCM$/.exec(enc)?.[1];
  if (!bits) throw new Error(`enc ${enc} is not read here`);
  const d = createDecipheriv(`aes-${bits}-gcm`, cek, iv) as DecipherGCM;
  d.setAAD(aad);
  d.setAuthTag(tag);
  return Buffer.concat([d.update(ct), d.final()]);
}
