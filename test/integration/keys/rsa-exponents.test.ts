/**
 * Keys that encrypt nothing: an RSA-2048 key with e = 1 imported through PEM
 * served /crypto/encrypt (the wrapped key was the OAEP block itself, so the JWE alone gave the
 * plaintext) and /crypto/verify answered `valid: true` to a "signature" built from the message
 * alone; e = 3 was accepted too. Every weak exponent is refused on every path that brings RSA
 * material in, and material stored before the rule is refused at load with a log line naming
 * tenant, kid, version and why.
 *
 * The weak keys are made by OpenSSL, not by the service: e = 3 by `genpkey`; e = 1, an even e and
 * a 257-bit e (which no generator makes) as an RSAPrivateKey DER written by `asn1parse -genconf`
 * over the primes of a genpkey key, then PKCS#8 PEM by `pkey` and PKCS#12 by `pkcs12 -export`.
 */
import { createHash, createPrivateKey, createPublicKey, randomUUID } from 'node:crypto';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { fixtureDir, type FixtureDir } from '../../unit/keystore/fixtures.ts';
import { serializeMaterial } from '../../../shared/crypto/material.ts';

const P12_PASSWORD = 'weak-exponent';

interface WeakKey {
  name: string;
  /** What the refusal must name. */
  why: RegExp;
  /** PKCS#8 PEM and PKCS#12, both written by openssl. */
  pem: Buffer;
  p12: Buffer;
}

const big = (b64url: string) => BigInt(`0x${Buffer.from(b64url, 'base64url').toString('hex')}`);
const hex = (x: bigint) => `0x${x.toString(16)}`;
const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));
/** The inverse of a modulo m, or null when they share a factor. */
function inverse(a: bigint, m: bigint): bigint | null {
  let [r0, r1, s0, s1] = [a % m, m, 1n, 0n];
  while (r1 !== 0n) {
    const t = r0 / r1;
    [r0, r1, s0, s1] = [r1, r0 - t * r1, s1, s0 - t * s1];
  }
  return r0 === 1n ? ((s0 % m) + m) % m : null;
}

/** An RSA key with the primes of `base.pem` and public exponent e, as openssl writes it from an ASN.1 config. */
function handBuilt(fx: FixtureDir, name: string, e: bigint): void {
  const j = createPrivateKey(fx.read('base.pem')).export({ format: 'jwk' });
  const [n, p, q, d0] = [j.n!, j.p!, j.q!, j.d!].map(big);
  const lambda = ((p - 1n) * (q - 1n)) / gcd(p - 1n, q - 1n);
  // e = 1 gives d = 1; an even e has no inverse, so d stays the genuine one (the pair is broken too).
  const d = inverse(e, lambda) ?? d0;
  fx.write(
    `${name}.cnf`,
    [
      'asn1=SEQUENCE:k',
      '[k]',
      'v=INTEGER:0',
      `n=INTEGER:${hex(n)}`,
      `e=INTEGER:${hex(e)}`,
      `d=INTEGER:${hex(d)}`,
      `p=INTEGER:${hex(p)}`,
      `q=INTEGER:${hex(q)}`,
      `dp=INTEGER:${hex(d % (p - 1n))}`,
      `dq=INTEGER:${hex(d % (q - 1n))}`,
      `qi=INTEGER:${hex(inverse(q, p)!)}`,
      '',
    ].join('\n'),
  );
  fx.openssl('asn1parse', '-genconf', `${name}.cnf`, '-noout', '-out', `${name}.der`);
  fx.openssl('pkey', '-inform', 'DER', '-in', `${name}.der`, '-out', `${name}.pem`);
}

/** The table of weak exponents: how openssl makes each, and what the refusal names. */
const WEAK: Array<{ name: string; why: RegExp; make: (fx: FixtureDir, name: string) => void }> = [
  { name: 'e=1', why: /exponent 1 is below 65537/, make: (fx, n) => handBuilt(fx, n, 1n) },
  {
    name: 'e=3',
    why: /exponent 3 is below 65537/,
    make: (fx, n) =>
      fx.openssl(
        'genpkey',
        '-algorithm',
        'RSA',
        '-pkeyopt',
        'rsa_keygen_bits:2048',
        '-pkeyopt',
        'rsa_keygen_pubexp:3',
        '-out',
        `${n}.pem`,
      ),
  },
  { name: 'e=65538', why: /exponent 65538 is even/, make: (fx, n) => handBuilt(fx, n, 65538n) },
  {
    name: 'e=2^256+1',
    why: /257 bits, at least 2\^256/,
    make: (fx, n) => handBuilt(fx, n, (1n << 256n) + 1n),
  },
];

describe(`RSA keys with a weak public exponent are refused (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let fx: FixtureDir;
  let a: TestTenant;
  let b: TestTenant;
  let user: string;
  let legacy: string;
  let core: string;
  let userB: string;
  const weak: WeakKey[] = [];
  let sound: WeakKey;

  const keyCount = async (tenantId: string) =>
    Number((await app.ctx.db('keys').where({ tenant_id: tenantId }).count({ n: '*' }).first())!.n);
  const upload = async (path: string, keystore: Buffer, fields: Record<string, string>) => {
    const form = new FormData();
    form.append('keystore', new Blob([keystore]), 'keystore.bin');
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    const res = await fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user}` },
      body: form,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  /** Every path that brings RSA material into a tenant from outside, as one table. */
  const IMPORT_PATHS: Array<{
    path: string;
    send: (k: WeakKey, kid: string) => Promise<{ status: number; body: Record<string, unknown> }>;
  }> = [
    {
      path: 'keystore import, PEM',
      send: (k, kid) =>
        upload(`/api/v3/admin/tenants/${a.tenantId}/keys/import-keystore`, k.pem, { kid }),
    },
    {
      path: 'keystore import, PKCS#12',
      send: (k, kid) =>
        upload(`/api/v3/admin/tenants/${a.tenantId}/keys/import-keystore`, k.p12, {
          kid,
          password: P12_PASSWORD,
        }),
    },
    {
      path: 'unversioned keystore import /api/migration/pkcs12, PKCS#12',
      send: (k, kid) => upload('/api/migration/pkcs12', k.p12, { kid, password: P12_PASSWORD }),
    },
    {
      path: 'legacy key import /api/key-management/keys/import, PEM',
      send: (k, kid) =>
        api(app, 'POST', '/api/key-management/keys/import', legacy, {
          pem: k.pem.toString('utf8'),
          kid,
        }),
    },
  ];

  /**
   * Stores a key the way a version imported before the exponent rule sits in the database:
   * sealed under the master key like any other, never having passed the rule.
   */
  async function storedBeforeTheRule(
    tenantId: string,
    kid: string,
    usage: string,
    k: WeakKey,
  ): Promise<void> {
    const privateKey = createPrivateKey(k.pem);
    const material = serializeMaterial({
      type: 'rsa-2048',
      privateKeyDer: privateKey.export({ format: 'der', type: 'pkcs8' }),
      publicKeyDer: createPublicKey(privateKey).export({ format: 'der', type: 'spki' }),
    });
    const id = randomUUID();
    await app.ctx.db('keys').insert({ id, tenant_id: tenantId, kid, type: 'rsa-2048', usage });
    await app.ctx.db('key_versions').insert({
      id: randomUUID(),
      key_id: id,
      version: 1,
      material: app.ctx.masterKey.seal(material, { tenantId, kid, version: 1 }),
    });
  }

  beforeAll(async () => {
    fx = fixtureDir();
    fx.openssl(
      'genpkey',
      '-algorithm',
      'RSA',
      '-pkeyopt',
      'rsa_keygen_bits:2048',
      '-out',
      'base.pem',
    );
    const pack = (name: string, why: RegExp): WeakKey => {
      fx.openssl(
        'pkcs12',
        '-export',
        '-nocerts',
        '-inkey',
        `${name}.pem`,
        '-out',
        `${name}.p12`,
        '-passout',
        `pass:${P12_PASSWORD}`,
      );
      return { name, why, pem: fx.read(`${name}.pem`), p12: fx.read(`${name}.p12`) };
    };
    for (const w of WEAK) {
      w.make(fx, w.name);
      weak.push(pack(w.name, w.why));
    }
    sound = pack('base', /never/);

    app = await startTestApp();
    const perms = [
      'admin.keys.import',
      'admin.keys.read',
      'admin.cryptographicexchange.create',
      'admin.cryptographicexchange.read',
      'admin.cryptographicexchange.accept',
      'crypto.encrypt',
      'crypto.verify',
    ];
    [a, b] = [await makeTenant(app, perms, 'weak-a'), await makeTenant(app, perms, 'weak-b')];
    user = await userToken(app, a);
    userB = await userToken(app, b);
    core = await workloadToken(app, a);
    const login = await fetch(`${app.url}/api/authenticate/app`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: a.clientId, clientSecret: a.clientSecret }),
    });
    legacy = ((await login.json()) as { accessToken: string }).accessToken;
  });
  afterAll(async () => {
    await app?.stop();
    fx?.cleanup();
  });

  it('when openssl made the weak keys, then each carries the exponent its row names (the fixtures are what they claim)', () => {
    expect(
      weak.map((k) => String(createPrivateKey(k.pem).asymmetricKeyDetails!.publicExponent)),
    ).toEqual(['1', '3', '65538', String((1n << 256n) + 1n)]);
  });

  describe.each(IMPORT_PATHS)('through $path', ({ path, send }) => {
    it.each(WEAK.map((w) => w.name))(
      'when the key has %s, then 400 keystore-key-invalid naming the exponent and nothing is stored',
      async (name) => {
        const k = weak.find((w) => w.name === name)!;
        const before = await keyCount(a.tenantId);
        const r = await send(k, `weak-${randomUUID()}`);
        expect([path, name, r.status, r.body.type]).toEqual([
          path,
          name,
          400,
          expect.stringMatching(/keystore-key-invalid$/),
        ]);
        expect(r.body.detail).toMatch(k.why);
        expect(await keyCount(a.tenantId)).toBe(before);
      },
    );

    it('when the key has e = 65537, then it imports (the path itself works)', async () => {
      const r = await send(sound, `sound-${randomUUID()}`);
      expect([path, r.status]).toEqual([path, 201]);
    });
  });

  describe.each(WEAK.map((w) => w.name))('a key with %s stored before the rule', (name) => {
    const k = () => weak.find((w) => w.name === name)!;
    const kid = (what: string) => `stored-${what}-${name.replace(/[^\w]/g, '')}`;

    it('when it is used to encrypt, then nothing is encrypted and the log names tenant, kid, version and why', async () => {
      await storedBeforeTheRule(a.tenantId, kid('enc'), 'encrypt', k());
      const r = await api(app, 'POST', '/api/v3/crypto/encrypt', core, {
        kid: kid('enc'),
        data: Buffer.from('attack at dawn').toString('base64'),
      });
      expect(r.status).toBe(500);
      expect(JSON.stringify(r.body)).not.toMatch(/ciphertext/);
      const line = app
        .logText()
        .split('\n')
        .find((l) => l.includes('refused at load') && l.includes(`"kid":"${kid('enc')}"`));
      expect(line && JSON.parse(line)).toMatchObject({
        tenantId: a.tenantId,
        kid: kid('enc'),
        version: 1,
        why: expect.stringMatching(k().why),
      });
    });

    it('when it is offered to another tenant, then the offer is refused and nothing is pending', async () => {
      await storedBeforeTheRule(a.tenantId, kid('offer'), 'sign', k());
      const r = await api(
        app,
        'POST',
        `/api/v3/admin/tenants/${a.tenantId}/cryptographic-exchanges`,
        user,
        { kid: kid('offer'), toTenantId: b.tenantId, mode: 'public' },
      );
      expect(r.status).toBe(500);
      expect(
        await app.ctx
          .db('cryptographic_exchanges')
          .where({ source_kid: kid('offer') })
          .first(),
      ).toBeUndefined();
    });

    it('when an offer of it was made before the rule, then accepting is 400 keystore-key-invalid and the receiver holds no new key', async () => {
      const privateKey = createPrivateKey(k().pem);
      const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
      const id = randomUUID();
      await app.ctx.db('cryptographic_exchanges').insert({
        id,
        from_tenant_id: a.tenantId,
        to_tenant_id: b.tenantId,
        source_kid: kid('offered'),
        source_version: 1,
        key_type: 'rsa-2048',
        usage: 'sign',
        mode: 'public',
        payload: serializeMaterial({ type: 'rsa-2048', publicKeyDer: spki }).toString('base64'),
        public_key_sha256: createHash('sha256').update(spki).digest('base64url'),
        state: 'pending',
        created_by: 'test',
        expires_at: new Date(Date.now() + 3600_000),
      });
      const before = await keyCount(b.tenantId);
      const r = await api(
        app,
        'POST',
        `/api/v3/admin/tenants/${b.tenantId}/cryptographic-exchanges/${id}/accept`,
        userB,
        {},
      );
      expect([r.status, r.body.type]).toEqual([
        400,
        expect.stringMatching(/keystore-key-invalid$/),
      ]);
      expect(r.body.detail).toMatch(k().why);
      expect(await keyCount(b.tenantId)).toBe(before);
    });
  });

  it('when a stored e = 1 key is asked to verify a signature built from the message alone, then it never answers valid', async () => {
    const kid = 'stored-forgery';
    await storedBeforeTheRule(a.tenantId, kid, 'sign', weak[0]);
    const data = Buffer.from('pay 1000 to mallory');
    // EMSA-PKCS1-v1_5 (RFC 8017 section 9.2) of SHA-256(data): with e = 1 it is its own signature.
    const digestInfo = Buffer.concat([
      Buffer.from('3031300d060960864801650304020105000420', 'hex'),
      createHash('sha256').update(data).digest(),
    ]);
    const em = Buffer.concat([
      Buffer.from([0, 1]),
      Buffer.alloc(256 - digestInfo.length - 3, 0xff),
      Buffer.from([0]),
      digestInfo,
    ]);
    const r = await api(app, 'POST', '/api/v3/crypto/verify', core, {
      kid,
      data: data.toString('base64'),
      signature: em.toString('base64'),
    });
    expect(r.body.valid).not.toBe(true);
    expect(r.status).toBe(500);
  });
});
