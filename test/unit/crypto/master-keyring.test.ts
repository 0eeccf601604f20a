import { createCipheriv, randomBytes } from 'node:crypto';
import {
  IntegrityError,
  UnknownKeyIdError,
  createKeyring,
  createMasterKey,
  sealedBy,
} from '../../../shared/crypto/master-key.ts';
import { fingerprintId, parseKeyring } from '../../../shared/crypto/keyring.ts';

const A = randomBytes(32);
const B = randomBytes(32);
const CTX = { tenantId: 't1', kid: 'k', version: 3 };

/** A blob as the single master key wrote it before the keyring: 0x01 | iv | ciphertext | tag. */
function sealV1(key: Buffer, plaintext: Buffer): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(`keyward:v1:${CTX.tenantId}:${CTX.kid}:${CTX.version}`));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.of(1), iv, body, cipher.getAuthTag()]);
}

describe('the master keyring', () => {
  it('when material is sealed, then the blob names the newest id and any keyring holding that id opens it', () => {
    const old = createKeyring([{ id: 'k1', key: A }]);
    const both = createKeyring([
      { id: 'k2', key: B },
      { id: 'k1', key: A },
    ]);
    const sealed = old.seal(Buffer.from('secret'), CTX);
    expect(sealedBy(sealed)).toBe('k1');
    expect(both.openWithId(sealed, CTX)).toEqual({ plaintext: Buffer.from('secret'), id: 'k1' });
    expect(sealedBy(both.seal(Buffer.from('x'), CTX))).toBe('k2');
  });

  it('when a blob from before the keyring (v1) is opened, then the key among the keyring that sealed it opens it', () => {
    const v1 = sealV1(A, Buffer.from('legacy'));
    expect(sealedBy(v1)).toBeNull();
    const ring = createKeyring([
      { id: 'k2', key: B },
      { id: 'k1', key: A },
    ]);
    expect(ring.openWithId(v1, CTX)).toEqual({ plaintext: Buffer.from('legacy'), id: 'k1' });
    expect(createMasterKey(A).open(v1, CTX)).toEqual(Buffer.from('legacy'));
    expect(() => createMasterKey(B).open(v1, CTX)).toThrow(IntegrityError);
  });

  it('when the id a blob names is not in the keyring, or the context differs, then it does not open', () => {
    const sealed = createKeyring([{ id: 'k1', key: A }]).seal(Buffer.from('s'), CTX);
    expect(() => createKeyring([{ id: 'k2', key: B }]).open(sealed, CTX)).toThrow(
      UnknownKeyIdError,
    );
    expect(() => createKeyring([{ id: 'k1', key: B }]).open(sealed, CTX)).toThrow(IntegrityError);
    expect(() =>
      createKeyring([{ id: 'k1', key: A }]).open(sealed, { ...CTX, version: 4 }),
    ).toThrow(IntegrityError);
  });

  it('when a bare key is written as before, then its id is its fingerprint, also beside id:base64 entries', () => {
    expect(parseKeyring(A.toString('base64'), 'X')).toEqual([{ id: fingerprintId(A), key: A }]);
    expect(
      parseKeyring(`new:${B.toString('base64')}\n${A.toString('base64')}\n`, 'X').map((e) => e.id),
    ).toEqual(['new', fingerprintId(A)]);
  });
});
