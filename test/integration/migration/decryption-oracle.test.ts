/**
 * The generated oracle test. Every operation the OpenAPI document marks
 * `x-keyward-decrypts` has a driver here, or the test fails: a route that decrypts cannot be added
 * without being driven. For each, a caller without crypto.decrypt is refused before anything is
 * decrypted, and for a caller with it every way decryption can fail (a tampered final block, a
 * content key of the wrong length, bad key-transport padding, a flipped tag) answers the same
 * status, slug and body at the same point of the answer, for a small input and, on the stream
 * routes, for one large enough to stream. Then the padding-oracle attack is run
 * against convert, and the decryption-failure budget is shown to hold on the runtime API.
 *
 * Inputs are made by OpenSSL, convert and the runtime API, altered with node:crypto and
 * @peculiar/asn1-cms (not the service's parsers).
 */
import {
  constants,
  createDecipheriv,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { ContentInfo, EncryptedContent, EnvelopedData } from '@peculiar/asn1-cms';
import { apiDocument as openApiDocument } from '../../../api/routes/index.ts';
import { createRole } from '../../../api/services/admin/roles.ts';
import { registerWorkload } from '../../../api/services/admin/workloads.ts';
import {
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  OpenSslDir,
  REENCRYPT,
  convert,
  importKey,
  makeKey,
  postRaw,
  startTestApp,
  type Answer,
  type TestApp,
  type TestKey,
} from './helpers.ts';
import { cms, type CmsCipher } from '../../../support/fixtures/cms.ts';

/** The routes' other permissions, held by both callers; only one holds crypto.decrypt. */
const BASE = [
  'admin.keys.import',
  'admin.keys.create',
  'migration.convert',
  'crypto.stream.reencrypt',
  'crypto.encrypt',
];
const AES = 'oracle-aes';
/** DECRYPT_FAILURE_BUDGET's default (shared/config). */
const BUDGET = 20;

let app: TestApp;
let ssl: OpenSslDir;
let tenant: TestTenant;
let rsa: TestKey;

/** A workload of the tenant with a role of its own: its v3 and legacy tokens. */
interface Caller {
  v3: string;
  legacy: string;
}
let both: Caller;
let noDecrypt: Caller;

async function caller(permissions: string[]): Promise<Caller> {
  const role = await createRole(app.ctx, tenant.tenantId, {
    name: `r-${randomBytes(4).toString('hex')}`,
    permissions,
  });
  const w = await registerWorkload(app.ctx, tenant.tenantId, {
    name: `w-${randomBytes(4).toString('hex')}`,
    roleId: role.id,
  });
  const legacy = await fetch(`${app.url}/api/authenticate/app`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: w.clientId, clientSecret: w.clientSecret }),
  });
  return {
    v3: await workloadToken(app, w),
    legacy: ((await legacy.json()) as { accessToken: string }).accessToken,
  };
}

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  tenant = await makeTenant(app, [...BASE, 'crypto.decrypt']);
  const admin = await userToken(app, tenant);
  rsa = makeKey(ssl, 'oracle-rsa', 'rsa-2048');
  await importKey(app, { tenant, user: admin, workload: '' }, ssl, rsa);
  const made = await api(app, 'POST', `/api/v3/admin/tenants/${tenant.tenantId}/keys`, admin, {
    kid: AES,
    type: 'aes-256',
  });
  expect(made.status).toBe(201);
  both = await caller([...BASE, 'crypto.decrypt']);
  noDecrypt = await caller(BASE);
});

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

const SMALL = randomBytes(1000);
const LARGE = randomBytes(200_000);

/** An EnvelopedData of `data` for the RSA key, made by OpenSSL (DER: the content ends the file). */
function enveloped(data: Buffer, cipher: CmsCipher = 'aes-256-cbc'): Buffer {
  ssl.write('plain.bin', data);
  return cms.encrypt(ssl, 'plain.bin', {
    to: rsa,
    cipher,
    binary: true,
    outform: 'DER',
  });
}

const parseEnveloped = (file: Buffer) =>
  AsnConvert.parse(AsnConvert.parse(file, ContentInfo).content, EnvelopedData);

/**
 * `file` with its one RSA-2048 encryptedKey (OCTET STRING 04 82 01 00, the first in the file:
 * the recipient comes before the content) replaced by `ek` of the same length.
 */
function withEncryptedKey(file: Buffer, ek: Buffer): Buffer {
  const at = file.indexOf(Buffer.from([0x04, 0x82, 0x01, 0x00])) + 4;
  expect(at).toBeGreaterThan(4);
  expect(ek.length).toBe(256);
  const out = Buffer.from(file);
  ek.copy(out, at);
  return out;
}

const flipped = (b: Buffer, at: number): Buffer => {
  const out = Buffer.from(b);
  out[at < 0 ? out.length + at : at] ^= 0x01;
  return out;
};

/** A PKCS#1 v1.5 block for the RSA key holding `key` (a well-formed key transport). */
const pkcs1To = (key: Buffer) =>
  publicEncrypt({ key: rsa.privateKey, padding: constants.RSA_PKCS1_PADDING }, key);

/** 256 random bytes below the modulus: they decrypt, to anything but a well-padded block. */
function badTransport(): Buffer {
  const b = randomBytes(256);
  b[0] = 0;
  return b;
}

/** The ways an input fails, each keeping its length; `valid` converts. */
interface Inputs {
  valid: Buffer;
  failures: Record<string, Buffer>;
}

interface Driver {
  /** The sizes it takes: runtime ciphertexts are JSON members (64 KiB at most), so small only. */
  sizes: Array<'small' | 'large'>;
  /** What a caller without crypto.decrypt gets (the legacy API answers a missing role with 401). */
  refused: number;
  inputs(size: 'small' | 'large'): Promise<Inputs>;
  send(who: Caller, input: Buffer): Promise<Answer>;
}

const fromResponse = async (r: Response): Promise<Answer> => {
  const body = Buffer.from(await r.arrayBuffer());
  return {
    status: r.status,
    headers: r.headers,
    body,
    cut: false,
    json: <T>() => JSON.parse(body.toString()) as T,
  };
};

const convertDriver: Driver = {
  sizes: ['small', 'large'],
  refused: 403,
  async inputs(size) {
    const data = size === 'small' ? SMALL : LARGE;
    const cbc = enveloped(data);
    const gcm = enveloped(data, 'aes-256-gcm');
    return {
      valid: cbc,
      failures: {
        // The last byte of the block before the last sets the last plaintext byte: bad padding.
        'a tampered final block': flipped(cbc, -17),
        'a content key of the wrong length': withEncryptedKey(cbc, pkcs1To(randomBytes(16))),
        'bad key-transport padding': withEncryptedKey(cbc, badTransport()),
        // AuthEnvelopedData: the mac is the file's last 16 bytes.
        'GCM: a flipped tag': flipped(gcm, -1),
        'GCM: a flipped ciphertext byte': flipped(gcm, -40),
        'GCM: bad key-transport padding': withEncryptedKey(gcm, badTransport()),
      },
    };
  },
  send: (who, input) => convert(app, who.v3, input, {}),
};

/** The multipart JWE of convert and its Content-Type, by input. */
const jweTypes = new WeakMap<Buffer, string>();

const reencryptDriver: Driver = {
  sizes: ['small', 'large'],
  refused: 403,
  async inputs(size) {
    const a = await convert(app, both.v3, enveloped(size === 'small' ? SMALL : LARGE), {});
    expect(a.status).toBe(200);
    const type = a.headers.get('content-type')!;
    const body = a.body;
    const boundary = Buffer.from(`--${/boundary="?([^";]+)"?/.exec(type)![1]}`);
    const d1 = body.indexOf(boundary);
    const d2 = body.indexOf(boundary, d1 + 1);
    const d3 = body.indexOf(boundary, d2 + 1);
    const headerAt = body.indexOf('\r\n\r\n', d1) + 4;
    const header = body.subarray(headerAt, d2 - 2);
    const cipherAt = body.indexOf('\r\n\r\n', d2) + 4;
    const tagEnd = d3 - 2;
    const withKey = (ek: Buffer) => {
      const h = JSON.parse(header.toString()) as { recipients: Array<{ encrypted_key: string }> };
      h.recipients[0].encrypted_key = ek.toString('base64url');
      const json = Buffer.from(JSON.stringify(h));
      expect(json.length).toBe(header.length);
      const out = Buffer.from(body);
      json.copy(out, headerAt);
      return out;
    };
    const oaep = (k: Buffer) =>
      publicEncrypt(
        { key: rsa.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
        k,
      );
    const inputs: Inputs = {
      valid: body,
      failures: {
        'a flipped tag': flipped(body, tagEnd - 1),
        'a flipped ciphertext byte': flipped(body, cipherAt + 5),
        'a content key of the wrong length': withKey(oaep(randomBytes(16))),
        'bad key-transport padding': withKey(randomBytes(256)),
      },
    };
    for (const b of [inputs.valid, ...Object.values(inputs.failures)]) jweTypes.set(b, type);
    return inputs;
  },
  send: (who, input) =>
    postRaw(app, `${REENCRYPT}?kid=${rsa.kid}`, who.v3, input, jweTypes.get(input)!),
};

/** A compact JWE of the runtime API and its failures (the key is AES: no key transport). */
async function runtimeInputs(): Promise<Inputs> {
  const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', both.v3, {
    kid: AES,
    data: SMALL.toString('base64'),
  });
  expect(enc.status).toBe(200);
  const [h, ek, iv, c, tag] = String(enc.body.ciphertext).split('.');
  const flip = (s: string) => flipped(Buffer.from(s, 'base64url'), 3).toString('base64url');
  const as = (parts: string[]) => Buffer.from(parts.join('.'));
  return {
    valid: as([h, ek, iv, c, tag]),
    failures: {
      'a flipped tag': as([h, ek, iv, c, flip(tag)]),
      'a flipped ciphertext byte': as([h, ek, iv, flip(c), tag]),
      'a flipped iv': as([h, ek, flip(iv), c, tag]),
    },
  };
}

function runtimeDriver(path: string, legacy: boolean, body: Record<string, unknown>): Driver {
  return {
    sizes: ['small'],
    refused: legacy ? 401 : 403,
    inputs: runtimeInputs,
    async send(who, input) {
      return fromResponse(
        await fetch(`${app.url}${path}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${legacy ? who.legacy : who.v3}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ ciphertext: input.toString(), ...body }),
        }),
      );
    },
  };
}

/** The jobs decrypt as their submitter may: driven in test/integration/jobs/decryption.test.ts. */
const ELSEWHERE = 'test/integration/jobs/decryption.test.ts';

const DRIVERS: Record<string, Driver | typeof ELSEWHERE> = {
  'POST /api/v3/migration/stream/convert-pkcs7-to-jose': convertDriver,
  'POST /api/v3/crypto/stream/reencrypt': reencryptDriver,
  'POST /api/v3/crypto/decrypt': runtimeDriver('/api/v3/crypto/decrypt', false, {}),
  'POST /api/v3/crypto/re-encrypt': runtimeDriver('/api/v3/crypto/re-encrypt', false, {
    targetKid: AES,
  }),
  'POST /api/crypto/decrypt': runtimeDriver('/api/crypto/decrypt', true, {}),
  'POST /api/v3/migration/jobs': ELSEWHERE,
};

/** The operations the OpenAPI document marks as decrypting, as "METHOD path". */
function decryptingOperations(): string[] {
  const doc = openApiDocument('http://x') as { paths: Record<string, Record<string, unknown>> };
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops))
      if ((op as Record<string, unknown>)['x-keyward-decrypts'] === true)
        out.push(`${method.toUpperCase()} ${path}`);
  return out.sort();
}

/** What an answer shows: status, where it ended, and the problem body when there is one. */
function observed(a: Answer): string {
  const problem = a.headers.get('content-type')?.startsWith('application/problem+json');
  return JSON.stringify({
    status: a.status,
    cut: a.cut,
    ...(problem ? { body: a.json() } : { began: a.body.length > 0 }),
  });
}

const driven = Object.entries(DRIVERS).filter((e): e is [string, Driver] => e[1] !== ELSEWHERE);

describe(`decryption oracles (${TEST_ENGINE})`, () => {
  it('when the OpenAPI document marks an operation as decrypting, then it has a driver here (and every driver names one)', () => {
    expect(decryptingOperations()).toEqual(Object.keys(DRIVERS).sort());
  });

  describe.each(driven)('%s', (_op, driver) => {
    // A caller of its own, so one route's failures do not spend another's budget.
    let who: Caller;
    beforeAll(async () => {
      who = await caller([...BASE, 'crypto.decrypt']);
    });

    it('when the caller lacks crypto.decrypt, then it is refused before anything is decrypted, whatever the input', async () => {
      const { valid, failures } = await driver.inputs('small');
      for (const input of [valid, ...Object.values(failures)]) {
        const a = await driver.send(noDecrypt, input);
        expect(a.status).toBe(driver.refused);
      }
    });

    it.each(driver.sizes)(
      'when a %s input fails in any way, then one answer: the same status, slug, body and point',
      async (size) => {
        const { valid, failures } = await driver.inputs(size);
        const ok = await driver.send(who, valid);
        expect({ status: ok.status, cut: ok.cut }).toEqual({ status: 200, cut: false });
        const seen: Record<string, string> = {};
        for (const [name, input] of Object.entries(failures))
          seen[name] = observed(await driver.send(who, input));
        expect(new Set(Object.values(seen)).size === 1 ? 'one answer' : seen).toBe('one answer');
        const one = JSON.parse(Object.values(seen)[0]) as Record<string, unknown>;
        if (size === 'small') {
          expect(one).toMatchObject({
            status: 400,
            cut: false,
            body: { type: expect.stringMatching(/\/problems\/decryption-failed$/) },
          });
        } else {
          // Large enough to stream: the answer began, and was cut before its closing delimiter.
          expect(one).toEqual({ status: 200, cut: true, began: true });
        }
      },
    );
  });
});

/**
 * The padding-oracle attack: the content replaced by X || C1 for chosen X, read as "padding
 * valid" on 200 and "invalid" otherwise, guessing the last byte of X. The fixture is remade until
 * the first guess that pads well lies past the budget (with a budget of N a lucky attacker wins a
 * byte with probability about N/256 per window; the test shows the budget's bound, not luck).
 */
describe(`the padding-oracle attack on convert (${TEST_ENGINE})`, () => {
  const REQUESTS = 3000;

  function aesCbcBlock(key: Buffer, block: Buffer): Buffer {
    return createDecipheriv(`aes-${key.length * 8}-ecb`, key, null)
      .setAutoPadding(false)
      .update(block);
  }

  /** An EnvelopedData whose content is X || C1, X being zeros but its last byte `guess`. */
  function forged(ed: EnvelopedData, c1: Buffer, guess: number): Buffer {
    const x = Buffer.alloc(16);
    x[15] = guess;
    const copy = AsnConvert.parse(AsnConvert.serialize(ed), EnvelopedData);
    copy.encryptedContentInfo.encryptedContent = new EncryptedContent({
      value: new OctetString(Buffer.concat([x, c1])),
    });
    return Buffer.from(
      AsnConvert.serialize(
        new ContentInfo({
          contentType: '1.2.840.113549.1.7.3',
          content: AsnConvert.serialize(copy),
        }),
      ),
    );
  }

  /** The first guess that pads well, computed with the content key (the test knows the RSA key). */
  function firstGoodGuess(ed: EnvelopedData, priv: KeyObject, c1: Buffer): number {
    const ek = Buffer.from(ed.recipientInfos[0].ktri!.encryptedKey.buffer);
    const cek = privateDecrypt({ key: priv, padding: constants.RSA_PKCS1_PADDING }, ek);
    const d = aesCbcBlock(cek, c1);
    for (let g = 0; g < 256; g++) {
      const p = Buffer.from(d);
      p[15] ^= g;
      const pad = p[15];
      if (pad >= 1 && pad <= 16 && p.subarray(16 - pad).every((b) => b === pad)) return g;
    }
    return 256;
  }

  async function attack(who: Caller): Promise<Record<number, number>> {
    let ed: EnvelopedData;
    let c1: Buffer;
    for (;;) {
      ed = parseEnveloped(enveloped(randomBytes(64)));
      c1 = Buffer.from(ed.encryptedContentInfo.encryptedContent!.value!.buffer).subarray(0, 16);
      if (firstGoodGuess(ed, rsa.privateKey, c1) > BUDGET) break;
    }
    const statuses: Record<number, number> = {};
    for (let i = 0; i < REQUESTS; i++) {
      const a = await convert(app, who.v3, forged(ed, c1, i % 256), {});
      statuses[a.status] = (statuses[a.status] ?? 0) + 1;
      if (a.status === 200) break; // a byte recovered
    }
    return statuses;
  }

  it(`when a migration.convert-only workload runs it, then ${REQUESTS} requests are all 403: no byte`, async () => {
    expect(await attack(await caller(BASE))).toEqual({ 403: REQUESTS });
  }, 600_000);

  it(`when a workload holding crypto.decrypt runs it under the default budget, then ${BUDGET} failures and then 429 only: no byte`, async () => {
    expect(await attack(await caller([...BASE, 'crypto.decrypt']))).toEqual({
      400: BUDGET,
      429: REQUESTS - BUDGET,
    });
  }, 600_000);
});

describe(`the budget under a burst (${TEST_ENGINE})`, () => {
  it(`when 128 wrong guesses arrive at once, then at most ${BUDGET} are tried and the rest answer 429 (a point is reserved before each decryption)`, async () => {
    const who = await caller([...BASE, 'crypto.decrypt']);
    const cbc = enveloped(randomBytes(64));
    // 256 inputs that all fail: the final block's last byte flipped to every other value.
    const inputs = Array.from({ length: 128 }, (_, i) => {
      const out = Buffer.from(cbc);
      out[out.length - 17] ^= i + 1;
      return out;
    });
    const answers = await Promise.all(inputs.map((f) => convert(app, who.v3, f, {})));
    const statuses: Record<number, number> = {};
    for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    expect(statuses[200] ?? 0).toBeLessThanOrEqual(1); // a flip may still pad well (1/256)
    expect(statuses[400]).toBeLessThanOrEqual(BUDGET);
    expect((statuses[400] ?? 0) + (statuses[200] ?? 0) + (statuses[429] ?? 0)).toBe(128);
    expect(statuses[429]).toBeGreaterThanOrEqual(128 - BUDGET - 1);
  }, 300_000);
});

describe(`signed-then-encrypted mail (${TEST_ENGINE})`, () => {
  // Clear-signed (multipart/signed) and Outlook's opaque-signed entity (application/pkcs7-mime).
  it.each([
    ['clear-signed', false],
    ['opaque-signed', true],
  ])(
    'when %s mail has a bad padding (12 fresh encryptions) or a bad inner signature, then every answer is the same',
    async (form, opaque) => {
      const who = await caller([...BASE, 'crypto.decrypt']);
      const signer = makeKey(ssl, `oracle-mail-signer-${form}`, 'rsa-2048');
      const admin = await userToken(app, tenant);
      await importKey(app, { tenant, user: admin, workload: '' }, ssl, signer, 'sign');
      const lines = Array.from({ length: 6000 }, (_, i) => `line ${i} of a long confidential mail`);
      ssl.write('mail.txt', Buffer.from(lines.join('\r\n') + '\r\n'));
      const sign = (outform: string[]) =>
        cms.sign(ssl, 'mail.txt', {
          by: signer,
          detached: !opaque,
          extra: outform,
        });
      const signed = sign([]);
      const encrypt = (entity: Buffer) => {
        ssl.write('entity.eml', entity);
        return cms.encrypt(ssl, 'entity.eml', {
          to: rsa,
          cipher: 'aes-256-cbc',
          binary: true,
          outform: 'DER',
        });
      };
      const good = encrypt(signed);
      // The opaque form's content is inside its base64: altered in the DER, then written as
      // S/MIME again by openssl (the signature left as it was).
      const alter = (b: Buffer) => {
        const copy = Buffer.from(b);
        copy[copy.indexOf('line 4000 of')] = 'L'.charCodeAt(0);
        return copy;
      };
      let altered: Buffer;
      if (opaque) {
        ssl.write('opaque.der', alter(sign(['-binary', '-outform', 'DER'])));
        altered = ssl.run([
          'cms',
          '-cmsout',
          '-inform',
          'DER',
          '-in',
          'opaque.der',
          '-outform',
          'SMIME',
        ]);
        expect(altered.toString('latin1')).toMatch(/smime-type=signed-data/);
      } else altered = alter(signed);
      const valid = await convert(app, who.v3, good, {});
      expect({ status: valid.status, cut: valid.cut }).toEqual({ status: 200, cut: false });
      // What an answer shows: a streamed answer's status and whether it was cut; a problem's
      // status and its body without what is per request.
      const shown = (a: Awaited<ReturnType<typeof convert>>) => {
        if (a.status === 200) return { status: 200, cut: a.cut };
        const { type, title, status, detail } = a.json() as Record<string, unknown>;
        return { status: a.status, type, title, detail, problemStatus: status };
      };
      // A bad padding garbles the block before the last: in the opaque form that is base64 text,
      // which may or may not still decode, so fresh encryptions try both cases.
      const paddings = [];
      for (let i = 0; i < 12; i++) {
        paddings.push(shown(await convert(app, who.v3, flipped(encrypt(signed), -17), {})));
      }
      const badSignature = shown(await convert(app, who.v3, encrypt(altered), {}));
      // Clear-signed mail streams its entity and is cut before the JWE tag; the opaque form's
      // answer is held to its end, so every failure is the one problem before it begins.
      expect(badSignature).toEqual(
        opaque
          ? expect.objectContaining({
              status: 400,
              type: expect.stringMatching(/decryption-failed$/),
            })
          : { status: 200, cut: true },
      );
      for (const p of paddings) expect(p).toEqual(badSignature);
    },
  );
});

describe(`the decryption-failure budget (${TEST_ENGINE})`, () => {
  it('when a principal spends it on a key, then even a good ciphertext answers 429 with Retry-After, another principal is not refused, and the exhaustion is audited', async () => {
    const spender = await caller([...BASE, 'crypto.decrypt']);
    const { valid, failures } = await runtimeInputs();
    const bad = Object.values(failures)[0];
    const decrypt = (who: Caller, c: Buffer) =>
      api(app, 'POST', '/api/v3/crypto/decrypt', who.v3, { ciphertext: c.toString() });
    for (let i = 0; i < BUDGET; i++) expect((await decrypt(spender, bad)).status).toBe(400);
    const after = await decrypt(spender, valid);
    expect(after.status).toBe(429);
    expect(Number(after.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await decrypt(both, valid)).status).toBe(200);
    await app.ctx.audit.flush();
    const events = await app.ctx.db('audit_events').where({
      tenant_id: tenant.tenantId,
      action: 'crypto.decryption-budget.exhausted',
      target: AES,
    });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ outcome: 'denied', target: AES });
    expect(app.logText()).toContain('decryption-failure budget spent');
  });
});
