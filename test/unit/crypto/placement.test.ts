/**
 * Where runtime operations run and which types are post-quantum, read from the key-type table's
 * columns (`onLoop`, `digestInPool`, `pqc`) instead of type-name prefixes: the measured placements
 * of api/services/crypto/placement.ts, pinned.
 */
import { runsInPool } from '../../../api/services/crypto/placement.ts';
import { KEY_TYPES, PQC_KEY_TYPES } from '../../../shared/crypto/registry.ts';

describe('the key-type table places runtime operations', () => {
  it.each([
    ['aes-256', 'encrypt', false, false],
    ['aes-128', 'decrypt', false, false],
    ['rsa-2048', 'encrypt', false, false],
    ['rsa-2048', 'verify', true, false],
    ['rsa-3072', 'sign', false, true],
    ['rsa-4096', 'decrypt', false, true],
    ['rsa-pss-2048', 'sign', false, true],
    ['rsa-pss-2048', 'verify', false, false],
    ['ec-p256', 'sign', false, false],
    ['ec-p256', 'verify', false, false],
    ['ec-p256', 'verify', true, true],
    ['ec-p256', 'encrypt', false, true],
    ['ec-p384', 'sign', false, true],
    ['ed25519', 'sign', false, false],
    ['ed448', 'sign', false, true],
    ['ml-kem-768', 'encapsulate', false, false],
    ['ml-dsa-65', 'sign', false, true],
    ['ml-dsa-65', 'verify', false, false],
    ['slh-dsa-sha2-128s', 'verify', false, true],
    ['x25519-ml-kem-768', 'decapsulate', false, true],
  ] as const)('%s %s (digest %s) in the pool: %s', (type, op, digest, pool) => {
    expect(runsInPool(op, type, digest)).toBe(pool);
  });

  it('names as post-quantum exactly the ML-KEM, ML-DSA, SLH-DSA and ML-KEM hybrid types', () => {
    expect([...PQC_KEY_TYPES].sort()).toEqual(
      KEY_TYPES.filter((t) => /^(ml-kem|ml-dsa|slh-dsa|(x25519|p256|p384)-ml-kem)-/.test(t)).sort(),
    );
  });
});
