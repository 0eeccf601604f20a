/**
 * The two single-step KDFs the service derives key-encryption keys with: the Concat KDF of NIST
 * SP 800-56A section 5.8.1 as JOSE profiles it (RFC 7518 section 4.6.2), and the ANSI X9.63 KDF as
 * CMS profiles it (RFC 5753 section 7.2). Both are a counter-mode hash over Z and fixed info; they
 * differ in where the counter goes and what the info holds.
 */
import { createHash } from 'node:crypto';

const EMPTY = Buffer.alloc(0);

function uint32(n: number): Buffer {
  const out = Buffer.allocUnsafe(4);
  out.writeUInt32BE(n, 0);
  return out;
}

function lengthPrefixed(value: Buffer): Buffer {
  return Buffer.concat([uint32(value.length), value]);
}

/**
 * Concat KDF with SHA-256 (RFC 7518 section 4.6.2): AlgorithmID is the `alg` for key wrapping or
 * the `enc` for direct agreement, PartyUInfo/PartyVInfo are the decoded `apu`/`apv` (empty when
 * absent), SuppPubInfo is keydatalen in bits, SuppPrivInfo is empty.
 */
export function concatKdf(
  z: Buffer,
  keyBits: number,
  algorithmId: string,
  apu: Buffer = EMPTY,
  apv: Buffer = EMPTY,
): Buffer {
  if (!Number.isInteger(keyBits) || keyBits <= 0 || keyBits % 8 !== 0)
    throw new RangeError(`Concat KDF output of ${keyBits} bits`);
  const otherInfo = Buffer.concat([
    lengthPrefixed(Buffer.from(algorithmId, 'ascii')),
    lengthPrefixed(apu),
    lengthPrefixed(apv),
    uint32(keyBits),
  ]);
  const blocks: Buffer[] = [];
  for (let round = 1, have = 0; have < keyBits / 8; round++, have += 32) {
    blocks.push(createHash('sha256').update(uint32(round)).update(z).update(otherInfo).digest());
  }
  return Buffer.concat(blocks).subarray(0, keyBits / 8);
}

/** ANSI X9.63 KDF (SEC 1 section 3.6.1) with `hash`: Z, then the counter, then SharedInfo. */
export function x963Kdf(hash: string, z: Buffer, sharedInfo: Buffer, length: number): Buffer {
  const out: Buffer[] = [];
  for (let counter = 1, have = 0; have < length; counter++) {
    const block = createHash(hash).update(z).update(uint32(counter)).update(sharedInfo).digest();
    out.push(block);
    have += block.length;
  }
  return Buffer.concat(out).subarray(0, length);
}
