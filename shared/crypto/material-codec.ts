/**
 * The at-rest form of key material: a compact, versioned byte string that the lead encrypts
 * under the master key (AES-256-GCM bound to tenant, kid and version).
 *
 *   'K' 'W'  version(1)=0x01  typeLength(1)  type(ASCII)  { tag(1) length(4, big-endian) bytes }*
 *
 * Tags: 0x01 secret, 0x02 PKCS#8 private key, 0x03 SPKI public key, and for hybrid components
 * 0x10 + 2i (PKCS#8) and 0x11 + 2i (SPKI) for component i. Each tag appears at most once;
 * unknown tags, a newer version or trailing garbage are refused rather than skipped, since a
 * blob we cannot fully read is one we must not half-use.
 */
import { problem, type AppError } from '../errors/index.ts';
import { isKeyType, keyTypeSpec } from './registry.ts';
import type { KeyMaterial, KeyPairDer } from './key-material.ts';

const MAGIC_0 = 0x4b; // 'K'
const MAGIC_1 = 0x57; // 'W'
const FORMAT_VERSION = 1;
const TAG_SECRET = 0x01;
const TAG_PRIVATE = 0x02;
const TAG_PUBLIC = 0x03;
const TAG_COMPONENT = 0x10;
const MAX_COMPONENTS = 8;

function unreadable(why: string, cause?: unknown): AppError {
  return problem('internal', `stored key material is unreadable: ${why}`, { cause });
}

/** Encodes key material into its versioned at-rest form. */
export function serializeMaterial(m: KeyMaterial): Buffer {
  const spec = keyTypeSpec(m.type);
  const records: [number, Buffer][] = [];
  if (m.secret) records.push([TAG_SECRET, m.secret]);
  if (m.privateKeyDer) records.push([TAG_PRIVATE, m.privateKeyDer]);
  if (m.publicKeyDer) records.push([TAG_PUBLIC, m.publicKeyDer]);
  if ((m.components?.length ?? 0) > MAX_COMPONENTS) throw unreadable('too many components');
  m.components?.forEach((c, i) => {
    if (c.privateKeyDer) records.push([TAG_COMPONENT + 2 * i, c.privateKeyDer]);
    records.push([TAG_COMPONENT + 2 * i + 1, c.publicKeyDer]);
  });
  const type = Buffer.from(spec.type, 'ascii');
  const size = 4 + type.length + records.reduce((n, [, b]) => n + 5 + b.length, 0);
  const out = Buffer.allocUnsafe(size);
  out[0] = MAGIC_0;
  out[1] = MAGIC_1;
  out[2] = FORMAT_VERSION;
  out[3] = type.length;
  let at = 4 + type.copy(out, 4);
  for (const [tag, bytes] of records) {
    out[at] = tag;
    out.writeUInt32BE(bytes.length, at + 1);
    at += 5 + bytes.copy(out, at + 5);
  }
  return out;
}

/** Decodes the at-rest form; any deviation from the format is an internal error, never a partial result. */
export function deserializeMaterial(buf: Uint8Array): KeyMaterial {
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.length < 4 || b[0] !== MAGIC_0 || b[1] !== MAGIC_1)
    throw unreadable('not a key material blob');
  if (b[2] !== FORMAT_VERSION) throw unreadable(`format version ${b[2]} is not supported`);
  const typeEnd = 4 + b[3];
  if (typeEnd > b.length) throw unreadable('truncated type');
  const type = b.toString('ascii', 4, typeEnd);
  if (!isKeyType(type)) throw unreadable(`unknown key type ${JSON.stringify(type)}`);

  const fields = new Map<number, Buffer>();
  for (let at = typeEnd; at < b.length;) {
    if (at + 5 > b.length) throw unreadable('truncated record header');
    const tag = b[at];
    const len = b.readUInt32BE(at + 1);
    if (at + 5 + len > b.length) throw unreadable('truncated record');
    const known =
      tag === TAG_SECRET ||
      tag === TAG_PRIVATE ||
      tag === TAG_PUBLIC ||
      (tag >= TAG_COMPONENT && tag < TAG_COMPONENT + 2 * MAX_COMPONENTS);
    if (!known) throw unreadable(`unknown tag 0x${tag.toString(16)}`);
    if (fields.has(tag)) throw unreadable(`duplicate tag 0x${tag.toString(16)}`);
    // Copy out: the caller may zero or reuse the decrypted buffer.
    fields.set(tag, Buffer.from(b.subarray(at + 5, at + 5 + len)));
    at += 5 + len;
  }

  const m: KeyMaterial = { type };
  if (fields.has(TAG_SECRET)) m.secret = fields.get(TAG_SECRET);
  if (fields.has(TAG_PRIVATE)) m.privateKeyDer = fields.get(TAG_PRIVATE);
  if (fields.has(TAG_PUBLIC)) m.publicKeyDer = fields.get(TAG_PUBLIC);
  const components: KeyPairDer[] = [];
  for (let i = 0; fields.has(TAG_COMPONENT + 2 * i + 1); i++) {
    const pair: KeyPairDer = { publicKeyDer: fields.get(TAG_COMPONENT + 2 * i + 1)! };
    if (fields.has(TAG_COMPONENT + 2 * i)) pair.privateKeyDer = fields.get(TAG_COMPONENT + 2 * i);
    components.push(pair);
  }
  const componentTags = [...fields.keys()].filter((t) => t >= TAG_COMPONENT).length;
  const expectedTags = components.reduce((n, c) => n + (c.privateKeyDer ? 2 : 1), 0);
  if (componentTags !== expectedTags) throw unreadable('component records out of order');
  if (components.length > 0) m.components = components;

  const spec = keyTypeSpec(type);
  const complete = spec.symmetric
    ? !!m.secret
    : spec.family === 'hybrid'
      ? components.length === spec.components!.length
      : !!(m.privateKeyDer ?? m.publicKeyDer);
  if (!complete) throw unreadable(`a ${type} key lacks its key bytes`);
  return m;
}
