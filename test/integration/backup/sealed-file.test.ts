import { randomBytes } from 'node:crypto';
import {
  BackupFileError,
  decryptBackup,
  encryptBackup,
} from '../../../shared/backup/sealed-file.ts';

const PASS = 'correct horse battery staple';

async function encrypt(plain: Buffer): Promise<Buffer> {
  const out: Buffer[] = [];
  // Fed in odd-sized pieces, as a network stream would.
  const pieces = async function* () {
    for (let i = 0; i < plain.length; i += 7777) yield plain.subarray(i, i + 7777);
  };
  for await (const c of encryptBackup(pieces(), PASS)) out.push(c);
  return Buffer.concat(out);
}

async function decrypt(file: Buffer, pass = PASS): Promise<Buffer> {
  const out: Buffer[] = [];
  const source = async function* () {
    for (let i = 0; i < file.length; i += 5000) yield file.subarray(i, i + 5000);
  };
  for await (const c of decryptBackup(source(), pass)) out.push(c);
  return Buffer.concat(out);
}

describe('the backup file encryption', () => {
  const plain = randomBytes(200_000);
  let file: Buffer;
  beforeAll(async () => {
    file = await encrypt(plain);
  });

  it('when a file of several chunks is decrypted, then it gives back the plaintext', async () => {
    expect((await decrypt(file)).equals(plain)).toBe(true);
  });

  it('when the file is cut exactly after a whole chunk, then it is refused as truncated', async () => {
    const firstChunkEnd = 51 + 4 + 65_536 + 16;
    await expect(decrypt(file.subarray(0, firstChunkEnd))).rejects.toThrow(/last chunk is missing/);
  });

  it('when two chunks are swapped, then it is refused', async () => {
    const h = 51;
    const c = 4 + 65_536 + 16;
    const swapped = Buffer.concat([
      file.subarray(0, h),
      file.subarray(h + c, h + 2 * c),
      file.subarray(h, h + c),
      file.subarray(h + 2 * c),
    ]);
    await expect(decrypt(swapped)).rejects.toThrow(BackupFileError);
  });

  it('when any one byte is changed (each header byte, each chunk length and tag, bytes all along the file), then it is refused', async () => {
    const c = 4 + 65_536 + 16;
    const positions = new Set<number>();
    for (let i = 0; i < 51; i++) positions.add(i);
    for (let at = 51; at < file.length; at += c) {
      for (let i = 0; i < 4; i++) positions.add(at + i);
      positions.add(Math.min(at + c, file.length) - 1);
    }
    for (let i = 51; i < file.length; i += 16_001) positions.add(i);
    positions.add(file.length - 1);
    for (const at of positions) {
      const bad = Buffer.from(file);
      bad[at] ^= 0x01;
      await expect([at, await decrypt(bad).catch((err: unknown) => err)]).toEqual([
        at,
        expect.any(BackupFileError),
      ]);
    }
  }, 120_000);

  it('when the passphrase is wrong, then the error says so', async () => {
    await expect(decrypt(file, 'another passphrase')).rejects.toThrow(/passphrase is wrong/);
  });

  it('when the header asks for another scrypt cost than the one written, then it is refused before any key derivation', async () => {
    // Cheap costs first: on a reader that trusted the header, the first one is accepted and
    // the error is the wrong passphrase instead (the last one, the old highest, took 2 GiB).
    for (const [logN, r, p] of [
      [16, 8, 1],
      [15, 9, 1],
      [15, 8, 2],
      [14, 8, 1],
      [20, 16, 4],
    ]) {
      const bad = Buffer.from(file);
      bad[9] = logN;
      bad[10] = r;
      bad[11] = p;
      const started = performance.now();
      await expect(decrypt(bad)).rejects.toThrow(
        `the backup header asks for scrypt parameters N=2^${logN}, r=${r}, p=${p}; this version reads only the ones it writes (N=2^15, r=8, p=1)`,
      );
      expect(performance.now() - started).toBeLessThan(1000);
    }
  });

  it('when an empty plaintext is encrypted, then it still ends with an authenticated last chunk', async () => {
    expect((await decrypt(await encrypt(Buffer.alloc(0)))).length).toBe(0);
  });
});
