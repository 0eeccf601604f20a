/**
 * The RSA public exponent rule at its edges (FIPS 186-5 section A.1.1: odd, 2^16 < e < 2^256).
 * Each public key is written by openssl from an ASN.1 config (RSAPublicKey of a genpkey modulus
 * and the row's e, then SubjectPublicKeyInfo by `openssl rsa -pubout`), so no generator's own
 * limits decide which exponents can be tried.
 */
import { createPublicKey } from 'node:crypto';
import { fixtureDir, type FixtureDir } from '../keystore/fixtures.ts';
import { rsaExponentFault } from '../../../shared/crypto/material.ts';

const E256 = 1n << 256n;
const TABLE: Array<[string, bigint, RegExp | null]> = [
  ['1', 1n, /exponent 1 is below 65537/],
  ['3', 3n, /exponent 3 is below 65537/],
  ['65535', 65535n, /exponent 65535 is below 65537/],
  ['65536', 65536n, /exponent 65536 is even/],
  ['65537', 65537n, null],
  ['65539', 65539n, null],
  ['2^256 - 1', E256 - 1n, null],
  ['2^256', E256, /is even/],
  ['2^256 + 1', E256 + 1n, /257 bits, at least 2\^256/],
];

let fx: FixtureDir;
let modulus: string;

beforeAll(() => {
  fx = fixtureDir();
  fx.openssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'm.pem');
  modulus = fx.openssl('rsa', '-in', 'm.pem', '-noout', '-modulus').toString().trim().split('=')[1];
});
afterAll(() => fx.cleanup());

it.each(TABLE)('when e = %s, then the rule answers as the table says', (name, e, why) => {
  const file = `e-${name.replace(/\W/g, '_')}`;
  fx.write(
    `${file}.cnf`,
    `asn1=SEQUENCE:k\n[k]\nn=INTEGER:0x${modulus}\ne=INTEGER:0x${e.toString(16)}\n`,
  );
  fx.openssl('asn1parse', '-genconf', `${file}.cnf`, '-noout', '-out', `${file}.der`);
  const pem = fx.openssl(
    'rsa',
    '-RSAPublicKey_in',
    '-inform',
    'DER',
    '-in',
    `${file}.der`,
    '-pubout',
  );
  const key = createPublicKey(pem);
  expect(key.asymmetricKeyDetails!.publicExponent).toBe(e);
  const fault = rsaExponentFault(key);
  if (why === null) expect(fault).toBeNull();
  else expect(fault).toMatch(why);
});

it('when the key is not RSA, then the rule has nothing to say', () => {
  fx.openssl('genpkey', '-algorithm', 'ED25519', '-out', 'ed.pem');
  expect(rsaExponentFault(createPublicKey(fx.read('ed.pem')))).toBeNull();
});
