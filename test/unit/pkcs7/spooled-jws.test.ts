/**
 * The JWS signer of SignedData conversions (shared/jose/spooled-jws.ts): content past the memory
 * threshold goes to the spool file and comes back whole, under a header known only at the end;
 * one key gives the flattened form, several the General JSON form. Checked with jose.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readdirSync, readlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { flattenedVerify } from 'jose';
import { SpooledJwsSigner } from '../../../shared/jose/spooled-jws.ts';
import { SPOOL_MEMORY } from '../../../shared/spool.ts';
import type { ResolvedKey } from '../../../shared/jose/types.ts';

function key(kid: string, type: 'ec' | 'ed25519'): ResolvedKey {
  const { privateKey, publicKey } =
    type === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'P-384' })
      : generateKeyPairSync('ed25519');
  return { kid, version: 1, type: type === 'ec' ? 'ec-p384' : 'ed25519', privateKey, publicKey };
}

const content = randomBytes(2 * SPOOL_MEMORY + 12_345);

async function spool(b64: boolean): Promise<SpooledJwsSigner> {
  const s = new SpooledJwsSigner({ b64 });
  // Reused buffers, as the BER reader hands them on: the spool must copy or write before the next.
  const buf = Buffer.alloc(64 * 1024);
  for (let i = 0; i < content.length; i += buf.length) {
    const n = content.copy(buf, 0, i, Math.min(content.length, i + buf.length));
    await s.update(buf.subarray(0, n));
  }
  return s;
}

describe('SpooledJwsSigner', () => {
  it('when the content is larger than the memory threshold, then the JWS (b64 false and true) verifies with jose over it', async () => {
    const k = key('spool-ec', 'ec');
    for (const b64 of [false, true]) {
      const jws = (await (await spool(b64)).finish([{ key: k, alg: 'ES384' }], { note: 1 })) as {
        protected: string;
        signature: string;
      };
      const r = await flattenedVerify(
        { ...jws, payload: b64 ? content.toString('base64url') : content },
        k.publicKey!,
      );
      expect(r.protectedHeader).toMatchObject({ alg: 'ES384', kid: 'spool-ec#1', note: 1 });
    }
  });

  it('when the content spans several write buffers in odd chunks, then it comes back whole and in order', async () => {
    // Past the two alternating 1 MiB write buffers several times, in chunks that never align.
    const big = randomBytes(5 * 1024 * 1024 + 7);
    const s = new SpooledJwsSigner({ b64: false });
    for (let i = 0; i < big.length; i += 100_003)
      await s.update(big.subarray(i, Math.min(big.length, i + 100_003)));
    const k = key('spool-big', 'ec');
    const jws = (await s.finish([{ key: k, alg: 'ES384' }], {})) as {
      protected: string;
      signature: string;
    };
    await flattenedVerify({ ...jws, payload: big }, k.publicKey!);
  });

  it('when two keys sign, then the General JSON form has one signature each, both verifying', async () => {
    const a = key('spool-a', 'ec');
    const b = key('spool-b', 'ed25519');
    const s = await spool(false);
    const out = (await s.finish(
      [
        { key: a, alg: 'ES384' },
        { key: b, alg: 'EdDSA' },
      ],
      {},
    )) as { signatures: Array<{ protected: string; signature: string }> };
    expect(out.signatures).toHaveLength(2);
    await flattenedVerify({ ...out.signatures[0], payload: content }, a.publicKey!);
    await flattenedVerify({ ...out.signatures[1], payload: content }, b.publicKey!);
    await s.close(); // idempotent after finish
    await expect(s.update(Buffer.from('late'))).rejects.toThrow(/closed/);
  });

  describe('the spool file on failure paths', () => {
    // FileHandle is not exported: its prototype is reached through a handle of our own.
    let proto: Record<string, unknown>;
    beforeAll(async () => {
      const f = await open(join(tmpdir(), `spool-proto-${process.pid}`), 'w');
      proto = Object.getPrototypeOf(f) as Record<string, unknown>;
      await f.close();
    });
    afterEach(() => jest.restoreAllMocks());

    /** Descriptors of this process open on a spool file (unlinked, so '(deleted)'). */
    const openSpools = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).includes('keyward-spool');
        } catch {
          return false;
        }
      }).length;

    it('when a spool write fails, then the conversion fails (no JWS) and nothing is left unhandled', async () => {
      const realWrite = proto.write as (...a: unknown[]) => Promise<unknown>;
      let writes = 0;
      jest.spyOn(proto as { write: () => Promise<unknown> }, 'write').mockImplementation(function (
        this: unknown,
        ...a: unknown[]
      ) {
        writes += 1;
        if (writes === 2) return Promise.reject(new Error('ENOSPC: injected'));
        return realWrite.apply(this, a);
      });
      const s = new SpooledJwsSigner({ b64: false });
      const big = randomBytes(4 * 1024 * 1024);
      const k = key('spool-fail', 'ec');
      const run = async () => {
        for (let i = 0; i < big.length; i += 65_536) await s.update(big.subarray(i, i + 65_536));
        return s.finish([{ key: k, alg: 'ES384' }], {});
      };
      await expect(run()).rejects.toThrow(/ENOSPC/);
      await s.close();
      expect(openSpools()).toBe(0);
    });

    it('when spool writes and reads are short, then the content still comes back whole and in order', async () => {
      const realWrite = proto.write as (...a: unknown[]) => Promise<unknown>;
      const realRead = proto.read as (...a: unknown[]) => Promise<unknown>;
      jest
        .spyOn(proto as { write: (...a: unknown[]) => Promise<unknown> }, 'write')
        .mockImplementation(function (this: unknown, ...a: unknown[]) {
          const [b, off, len, pos] = a as [Buffer, number, number, number];
          return realWrite.call(this, b, off, Math.min(len, 99_991), pos);
        });
      jest
        .spyOn(proto as { read: (...a: unknown[]) => Promise<unknown> }, 'read')
        .mockImplementation(function (this: unknown, ...a: unknown[]) {
          const [b, off, len, pos] = a as [Buffer, number, number, number];
          return realRead.call(this, b, off, Math.min(len, 77_777), pos);
        });
      const big = randomBytes(3 * 1024 * 1024 + 5);
      const s = new SpooledJwsSigner({ b64: true });
      for (let i = 0; i < big.length; i += 300_007) await s.update(big.subarray(i, i + 300_007));
      const k = key('spool-short', 'ec');
      const jws = (await s.finish([{ key: k, alg: 'ES384' }], {})) as {
        protected: string;
        signature: string;
      };
      await flattenedVerify({ ...jws, payload: big.toString('base64url') }, k.publicKey!);
    });

    it('when a spool read fails mid-pass, then finish fails (no JWS over part of the content)', async () => {
      const realRead = proto.read as (...a: unknown[]) => Promise<unknown>;
      let reads = 0;
      jest.spyOn(proto as { read: () => Promise<unknown> }, 'read').mockImplementation(function (
        this: unknown,
        ...a: unknown[]
      ) {
        reads += 1;
        if (reads === 2) return Promise.reject(new Error('EIO: injected'));
        return realRead.apply(this, a);
      });
      const s = new SpooledJwsSigner({ b64: false });
      const big = randomBytes(3 * 1024 * 1024);
      for (let i = 0; i < big.length; i += 65_536) await s.update(big.subarray(i, i + 65_536));
      await expect(s.finish([{ key: key('spool-eio', 'ec'), alg: 'ES384' }], {})).rejects.toThrow(
        /EIO/,
      );
      await s.close();
      expect(openSpools()).toBe(0);
    });

    it('when the spool is closed while its file is being opened (an aborted request), then that file is closed too', async () => {
      const s = new SpooledJwsSigner({ b64: false });
      await s.update(randomBytes(SPOOL_MEMORY));
      // This chunk overflows the memory: update opens the spool file while close runs.
      const pending = s.update(randomBytes(1024)).catch((err: unknown) => err);
      await s.close();
      await pending;
      // Give a leaked handle every chance to show: nothing else closes it but GC.
      await new Promise((r) => setImmediate(r));
      expect(openSpools()).toBe(0);
    });
  });
});
