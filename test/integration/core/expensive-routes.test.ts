/**
 * The route table's expensive work, driven (docs/expensive-work.md). Every operation whose row
 * declares caller-costed work (`x-keyward-expensive` in the OpenAPI document: the route rows and
 * the AWS KMS table's operations) has a hostile driver here for each kind it declares, or the
 * first test fails: an expensive endpoint cannot be added without being driven. Each driver sends
 * its hostile input while /healthz is probed, and asserts that /healthz kept answering (a count
 * and a generous bound on its longest gap, scaled for the machine's load, not a timing); where a
 * per-principal budget applies, the caller's budget was spent by the call and, once it is spent,
 * the next call answers 429 (LimitExceededException on the AWS API) before any work. A guard
 * checks that every place in the source that reaches the expensive-work pool, the budget or the
 * signer-check threads is listed with the declared operations that reach it.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { apiDocument } from '../../../api/routes/index.ts';
import { AWS_OPERATIONS } from '../../../api/services/aws-kms/operations.ts';
import { createKey } from '../../../api/services/keys/store.ts';
import { EXPENSIVE_KINDS, type ExpensiveKind } from '../../../shared/keys/work-budget.ts';
import { MAX_ITERATIONS } from '../../../shared/pkcs7/password-recipient.ts';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api, makeTenant, userToken, type TestTenant } from '../../../support/auth.ts';
import { loadNote, scaled } from '../../../support/deadline.ts';
import { probeHealthz } from '../../support/healthz-probe.ts';
import { signedRequest } from '../../../support/sigv4.ts';
import { pwriEnvelope } from '../../../support/fixtures/pwri.ts';
import { hostileSignedData, hostileSigner } from '../../../support/fixtures/hostile-cms.ts';
import { OpenSslDir } from '../../../support/fixtures/pkcs7.ts';
import { exportPkcs12, fixtureDir, type FixtureDir } from '../../unit/keystore/fixtures.ts';
import { awsTenant, type AwsTenant } from '../aws-kms/support.ts';
import { convert, importKey } from '../migration/helpers.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** An answer as the drivers compare it: status and problem type (or AWS `__type`). */
interface Outcome {
  status: number;
  type: string;
}

/** A caller of its own per driver, so one driver's spending does not reach another's. */
interface Caller {
  tenant: TestTenant;
  user: string;
  legacy: string;
  aws: AwsTenant;
}

/** One hostile input of one kind for one operation. */
interface Driver {
  /** Sends it once as `who`. */
  send(who: Caller): Promise<Outcome>;
  /** What the hostile call answers within the bounds (the work done, or refused by its cap). */
  expected: RegExp;
  /** The answer once the caller's budget is spent; null where no per-principal budget applies. */
  overBudget: Outcome | null;
}

/** Driven in another test file (the work runs in another process). */
interface Elsewhere {
  elsewhere: string;
}

let app: TestApp;
let ssl: OpenSslDir;
let fx: FixtureDir;

const problemType = (body: Record<string, unknown>): string =>
  typeof body.type === 'string' ? body.type.replace(/^.*\/problems\//, '') : '';

async function v3(method: string, path: string, token: string, json?: unknown): Promise<Outcome> {
  const r = await api(app, method, path, token, json);
  return { status: r.status, type: r.status >= 400 ? problemType(r.body) : '' };
}

async function aws(who: Caller, target: string, members: unknown): Promise<Outcome> {
  const body = JSON.stringify(members);
  const s = signedRequest(app.url, who.aws, `TrentService.${target}`, body);
  const r = await fetch(`${app.url}/`, { method: 'POST', headers: s.headers, body });
  const answer = (await r.json()) as Record<string, unknown>;
  return { status: r.status, type: String(answer.__type ?? '') };
}

async function uploadKeystore(path: string, token: string, data: Buffer): Promise<Outcome> {
  const form = new FormData();
  form.append('keystore', new Blob([data]), 'keystore.p12');
  form.append('password', 'pw');
  const r = await fetch(`${app.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const body = (await r.json()) as Record<string, unknown>;
  return { status: r.status, type: r.status >= 400 ? problemType(body) : '' };
}

let made = 0;

/** An RSA-4096 key of the caller's tenant made as system work (no budget), to be rotated. */
async function rsa4096(who: Caller): Promise<string> {
  const kid = `rsa-4096-${++made}`;
  await createKey(app.ctx, who.tenant.tenantId, { kid, type: 'rsa-4096', usage: 'sign' });
  return kid;
}

/**
 * A Transit write as the tenant's workload, as Vault clients send it (POST, or PUT as Vault's Go
 * client writes), its token from the AppRole login; Transit errors carry no type.
 */
async function transit(who: Caller, method: string, path: string, body: unknown): Promise<Outcome> {
  const login = await fetch(`${app.url}/v1/auth/approle/login`, {
    method: 'POST',
    body: JSON.stringify({ role_id: who.tenant.clientId, secret_id: who.tenant.clientSecret }),
  });
  const token = ((await login.json()) as { auth: { client_token: string } }).auth.client_token;
  const r = await fetch(`${app.url}/v1/${path}`, {
    method,
    headers: { 'X-Vault-Token': token },
    body: JSON.stringify(body),
  });
  await r.text();
  return { status: r.status, type: '' };
}

const RATE_LIMITED: Outcome = { status: 429, type: 'rate-limited' };
const TRANSIT_LIMITED: Outcome = { status: 429, type: '' };
const AWS_LIMITED: Outcome = { status: 400, type: 'LimitExceededException' };
const GENERATED = /^20[01]$/;

/** PKCS#12 files: one at OpenSSL's iteration count times 100, one past the per-file cap. */
const keystores: { heavy: Buffer; overCap: Buffer } = {
  heavy: Buffer.alloc(0),
  overCap: Buffer.alloc(0),
};
const KEYSTORE_OUTCOME = /^(201|400 keystore-malformed)$/;

const keystoreDriver = (path: (who: Caller) => string, token: 'user' | 'legacy'): Driver => ({
  async send(who) {
    // Past the cap: refused before any derivation; heavy but allowed: derived on the pool.
    const refused = await uploadKeystore(path(who), who[token], keystores.overCap);
    if (refused.status === 429) return refused; // the budget is spent: refused before the cap
    expect(refused).toEqual({ status: 400, type: 'keystore-malformed' });
    const heavy = await uploadKeystore(path(who), who[token], keystores.heavy);
    return heavy;
  },
  expected: KEYSTORE_OUTCOME,
  overBudget: RATE_LIMITED,
});

const legacyPemDriver: Driver = {
  async send(who) {
    // An encrypted PKCS#8 PEM (PBES2, PBKDF2 with the heavy count) through the legacy import.
    const pem = fx.read('heavy-key.pem').toString('utf8');
    return v3('POST', '/api/key-management/keys/import', who.legacy, { pem, password: 'pw' });
  },
  expected: KEYSTORE_OUTCOME,
  overBudget: RATE_LIMITED,
};

const pwriDriver: Driver = {
  async send(who) {
    const data = Buffer.from('hostile password recipient');
    const metadata = { password: 'pw', targetKid: 'target' };
    const over = await convert(app, who.user, pwriEnvelope(data, 'pw', 1_000_000), metadata);
    if (over.status === 429) return { status: 429, type: problemType(over.json()) };
    expect([over.status, problemType(over.json())]).toEqual([415, 'cms-unsupported']);
    const atCap = await convert(
      app,
      who.user,
      pwriEnvelope(data, 'pw', MAX_ITERATIONS, 'sha512'),
      metadata,
    );
    return { status: atCap.status, type: atCap.status === 200 ? '' : problemType(atCap.json()) };
  },
  expected: /^200$/,
  overBudget: RATE_LIMITED,
};

const signedDataDriver: Driver = {
  async send(who) {
    const signer = hostileSigner(ssl, `route-table-hostile-${++made}`);
    // Its key is the tenant's, so the file is converted (re-signed) once its signer verifies.
    await importKey(app, { ...who, workload: '' }, ssl, signer, 'sign');
    const file = hostileSignedData(ssl, signer, Buffer.from('mail'));
    const a = await convert(app, who.user, file, {});
    return { status: a.status, type: a.status === 200 ? '' : problemType(a.json()) };
  },
  // Bounded per conversion (128 checks): refused, or converted within the bound.
  expected: /^(200|415 cms-unsupported|422 .*)$/,
  overBudget: null,
};

const TENANT_KEYS = (who: Caller) => `/api/v3/admin/tenants/${who.tenant.tenantId}/keys`;
const JOBS_ELSEWHERE: Elsewhere = {
  elsewhere:
    'the queue worker (workers/jobs/convert.ts): the iteration cap and the 128-check bound are shared/pkcs7 code tested in test/unit/pkcs7/signature-budget.test.ts and test/unit/pkcs7/password-recipient*.test.ts',
};

/** The drivers, by "<operation> <kind>"; the operation as "METHOD /path" or "AWS <Target>". */
const DRIVERS: Record<string, Driver | Elsewhere> = {
  'POST /api/v3/admin/tenants/{tenantId}/keys key-generation': {
    send: (who) => v3('POST', TENANT_KEYS(who), who.user, { type: 'rsa-4096', usage: 'sign' }),
    expected: GENERATED,
    overBudget: RATE_LIMITED,
  },
  'POST /api/v3/admin/tenants/{tenantId}/keys/{kid}/rotate key-generation': {
    async send(who) {
      const kid = await rsa4096(who);
      return v3('POST', `${TENANT_KEYS(who)}/${kid}/rotate`, who.user);
    },
    expected: /^200$/,
    overBudget: RATE_LIMITED,
  },
  'POST /api/v3/admin/tenants/{tenantId}/keys/orchestrate key-generation': {
    async send(who) {
      const kid = await rsa4096(who);
      return v3('POST', `${TENANT_KEYS(who)}/orchestrate`, who.user, {
        operation: 'rotate',
        kids: [kid],
      });
    },
    expected: /^200$/,
    // A batch answers a result per key: the refusal is the key's, the call itself is 200.
    overBudget: null,
  },
  'POST /api/key-management/keys key-generation': {
    send: (who) => v3('POST', '/api/key-management/keys', who.legacy, { type: 'rsa-4096' }),
    expected: GENERATED,
    overBudget: RATE_LIMITED,
  },
  'POST /api/key-management/keys/import keystore-derivation': legacyPemDriver,
  'POST /api/v3/admin/tenants/{tenantId}/keys/import-keystore keystore-derivation': keystoreDriver(
    (who) => `${TENANT_KEYS(who)}/import-keystore`,
    'user',
  ),
  'POST /api/migration/pkcs12 keystore-derivation': keystoreDriver(
    () => '/api/migration/pkcs12',
    'user',
  ),
  'POST /api/v3/migration/stream/convert-pkcs7-to-jose key-derivation': pwriDriver,
  'POST /api/v3/migration/stream/convert-pkcs7-to-jose signer-chain': signedDataDriver,
  'POST /api/v3/migration/jobs key-derivation': JOBS_ELSEWHERE,
  'POST /api/v3/migration/jobs signer-chain': JOBS_ELSEWHERE,
  'POST /v1/transit/keys/{kid} key-generation': {
    send: (who) => transit(who, 'POST', `transit/keys/transit-rsa-${++made}`, { type: 'rsa-4096' }),
    expected: /^204$/,
    overBudget: TRANSIT_LIMITED,
  },
  'POST /v1/transit/keys/{kid}/rotate key-generation': {
    async send(who) {
      const kid = await rsa4096(who);
      return transit(who, 'POST', `transit/keys/${kid}/rotate`, {});
    },
    expected: /^200$/,
    overBudget: TRANSIT_LIMITED,
  },
  'PUT /v1/transit/keys/{kid} key-generation': {
    send: (who) => transit(who, 'PUT', `transit/keys/transit-rsa-${++made}`, { type: 'rsa-4096' }),
    expected: /^204$/,
    overBudget: TRANSIT_LIMITED,
  },
  'PUT /v1/transit/keys/{kid}/rotate key-generation': {
    async send(who) {
      const kid = await rsa4096(who);
      return transit(who, 'PUT', `transit/keys/${kid}/rotate`, {});
    },
    expected: /^200$/,
    overBudget: TRANSIT_LIMITED,
  },
  'AWS CreateKey key-generation': {
    send: (who) => aws(who, 'CreateKey', { KeySpec: 'RSA_4096', KeyUsage: 'SIGN_VERIFY' }),
    expected: /^200$/,
    overBudget: AWS_LIMITED,
  },
  'AWS GenerateDataKeyPair key-generation': {
    send: (who) =>
      aws(who, 'GenerateDataKeyPair', { KeyId: 'alias/wrap', KeyPairSpec: 'RSA_4096' }),
    expected: /^200$/,
    overBudget: AWS_LIMITED,
  },
  'AWS GenerateDataKeyPairWithoutPlaintext key-generation': {
    send: (who) =>
      aws(who, 'GenerateDataKeyPairWithoutPlaintext', {
        KeyId: 'alias/wrap',
        KeyPairSpec: 'RSA_4096',
      }),
    expected: /^200$/,
    overBudget: AWS_LIMITED,
  },
};

/** Every declared (operation, kind), from the OpenAPI document the rows generate. */
function declared(): string[] {
  const doc = apiDocument('http://x') as { paths: Record<string, Record<string, unknown>> };
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops)) {
      const x = (op as Record<string, unknown>)['x-keyward-expensive'] as
        { kinds: ExpensiveKind[] } | Record<string, { kinds: ExpensiveKind[] }> | undefined;
      if (!x) continue;
      if (Array.isArray(x.kinds))
        for (const kind of x.kinds as ExpensiveKind[])
          out.push(`${method.toUpperCase()} ${path} ${kind}`);
      else
        for (const [target, d] of Object.entries(x as Record<string, { kinds: ExpensiveKind[] }>))
          for (const kind of d.kinds) out.push(`AWS ${target} ${kind}`);
    }
  return out.sort();
}

/**
 * Where the source reaches expensive work, and the declared operations that reach it. A new call
 * of the pool, the budget or the signer-check threads fails the guard until it is listed here,
 * and each listed operation must declare the kind.
 */
const ENTRY_POINTS: Record<string, { kind: ExpensiveKind; reachedBy: string[] }> = {
  'api/services/crypto/decrypting-caller.ts': {
    kind: 'key-derivation',
    // The stream re-encrypt shares the resolver, but reads JWE only: no password recipient.
    reachedBy: ['POST /api/v3/migration/stream/convert-pkcs7-to-jose'],
  },
  'api/services/aws-kms/data-keys.ts': {
    kind: 'key-generation',
    reachedBy: ['AWS GenerateDataKeyPair', 'AWS GenerateDataKeyPairWithoutPlaintext'],
  },
  'api/services/keys/import.ts': {
    kind: 'keystore-derivation',
    reachedBy: [
      'POST /api/v3/admin/tenants/{tenantId}/keys/import-keystore',
      'POST /api/migration/pkcs12',
      'POST /api/key-management/keys/import',
    ],
  },
  'api/services/keys/store.ts': {
    kind: 'key-generation',
    reachedBy: [
      'POST /api/v3/admin/tenants/{tenantId}/keys',
      'POST /api/v3/admin/tenants/{tenantId}/keys/{kid}/rotate',
      'POST /api/v3/admin/tenants/{tenantId}/keys/orchestrate',
      'POST /api/key-management/keys',
      'POST /v1/transit/keys/{kid}',
      'PUT /v1/transit/keys/{kid}',
      'POST /v1/transit/keys/{kid}/rotate',
      'PUT /v1/transit/keys/{kid}/rotate',
      'AWS CreateKey',
    ],
  },
  'api/threads/conversions.ts': {
    kind: 'signer-chain',
    reachedBy: ['POST /api/v3/migration/stream/convert-pkcs7-to-jose'],
  },
  'workers/start.ts': { kind: 'signer-chain', reachedBy: ['POST /api/v3/migration/jobs'] },
  'workers/signer-pool.ts': { kind: 'signer-chain', reachedBy: ['POST /api/v3/migration/jobs'] },
};

/** The calls that reach expensive work: the pool and budget, the keystore parse, signer checks. */
const REACHES = /expensive\.(run|budget\.spend)\b|'checkSignersTask'|signerCheckPool\(/;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) return sourceFiles(rel);
    return name.endsWith('.ts') ? [rel] : [];
  });
}

/** Spends every unit left of `principal`'s budget, so its next expensive call is refused. */
async function drain(principal: string): Promise<void> {
  for (const step of [10_000, 1_000, 100, 10, 1])
    for (let i = 0; i < 20; i++)
      try {
        await app.ctx.expensive.budget.spend(principal, 'key-generation', step);
      } catch {
        break;
      }
}

/** The principals whose budget `body` spent. */
async function spentDuring<T>(
  body: () => Promise<T>,
): Promise<{ result: T; principals: string[] }> {
  const principals: string[] = [];
  const budget = app.ctx.expensive.budget;
  const spend = budget.spend;
  budget.spend = (principal, kind, cost) => {
    principals.push(principal);
    return spend.call(budget, principal, kind, cost);
  };
  try {
    return { result: await body(), principals: [...new Set(principals)] };
  } finally {
    budget.spend = spend;
  }
}

const PERMISSIONS = [
  'admin.keys.create',
  'admin.keys.rotate',
  'admin.keys.orchestrate',
  'admin.keys.import',
  'admin.keys.update',
  'migration.keystore.import',
  'migration.convert',
  'crypto.decrypt',
  'crypto.generate-data-key',
];

async function caller(): Promise<Caller> {
  const tenant = await makeTenant(app, PERMISSIONS);
  const legacy = await fetch(`${app.url}/api/authenticate/app`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: tenant.clientId, clientSecret: tenant.clientSecret }),
  });
  const who: Caller = {
    tenant,
    user: await userToken(app, tenant),
    legacy: ((await legacy.json()) as { accessToken: string }).accessToken,
    aws: await awsTenant(app, [...PERMISSIONS, 'crypto.encrypt']),
  };
  // The AWS tenant is another tenant: its wrapping key for the data key pairs.
  const body = JSON.stringify({});
  const s = signedRequest(app.url, who.aws, 'TrentService.CreateKey', body);
  const r = await fetch(`${app.url}/`, { method: 'POST', headers: s.headers, body });
  const keyId = ((await r.json()) as { KeyMetadata: { KeyId: string } }).KeyMetadata.KeyId;
  expect(await aws(who, 'CreateAlias', { AliasName: 'alias/wrap', TargetKeyId: keyId })).toEqual({
    status: 200,
    type: '',
  });
  await createKey(app.ctx, who.tenant.tenantId, {
    kid: 'target',
    type: 'ec-p256',
    usage: 'encrypt',
  });
  return who;
}

/** A generous bound: far above a probe's gap on a loaded machine, below a derivation on the loop. */
const HEALTHZ_GAP_MS = scaled(2000);

beforeAll(async () => {
  app = await startTestApp();
  ssl = new OpenSslDir();
  fx = fixtureDir();
  fx.openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'k.pem');
  fx.openssl('req', '-x509', '-key', 'k.pem', '-subj', '/CN=heavy', '-days', '2', '-out', 'k.crt');
  // 200,000 iterations: about a hundred times OpenSSL's default, under the per-file cap.
  const heavy = ['-passout', 'pass:pw', '-iter', '200000'];
  keystores.heavy = exportPkcs12(fx, 'heavy.p12', 'k.pem', 'k.crt', ...heavy);
  keystores.overCap = exportPkcs12(
    fx,
    'over.p12',
    'k.pem',
    'k.crt',
    '-passout',
    'pass:pw',
    '-iter',
    '5000000',
  );
  fx.openssl(
    'pkcs8',
    '-topk8',
    '-in',
    'k.pem',
    '-v2',
    'aes-256-cbc',
    '-iter',
    '200000',
    '-passout',
    'pass:pw',
    '-out',
    'heavy-key.pem',
  );
}, 120_000);
afterAll(async () => {
  await app?.stop();
  ssl?.cleanup();
  fx?.cleanup();
});

describe('expensive work declared by the route table', () => {
  it('when a row declares expensive work, then each kind it declares has a driver here (and every driver names a declared one)', () => {
    expect(declared()).toEqual(Object.keys(DRIVERS).sort());
    for (const kind of declared().map((d) => d.split(' ').at(-1)))
      expect(EXPENSIVE_KINDS).toContain(kind);
  });

  it('when the source reaches the expensive-work pool, the budget or the signer checks, then the place is listed and every operation that reaches it declares its kind', () => {
    const found = ['api', 'workers', 'shared']
      .flatMap(sourceFiles)
      .filter((f) => f !== 'api/threads/tasks/index.ts' && f !== 'api/threads/expensive.ts')
      .filter((f) => REACHES.test(readFileSync(join(ROOT, f), 'utf8')))
      .sort();
    expect(found).toEqual(Object.keys(ENTRY_POINTS).sort());
    const declaredSet = new Set(declared());
    for (const { kind, reachedBy } of Object.values(ENTRY_POINTS))
      for (const op of reachedBy) expect(declaredSet).toContain(`${op} ${kind}`);
    // The AWS table's own declarations agree with the list.
    const awsGenerating = [...AWS_OPERATIONS]
      .filter(([, o]) => o.expensive?.kinds.includes('key-generation'))
      .map(([name]) => `AWS ${name}`)
      .sort();
    expect(awsGenerating).toEqual(
      [...ENTRY_POINTS['api/services/aws-kms/data-keys.ts'].reachedBy, 'AWS CreateKey'].sort(),
    );
  });

  const driven = Object.entries(DRIVERS).filter((e): e is [string, Driver] => 'send' in e[1]);

  it.each(driven)(
    'when %s is driven with a hostile input while /healthz is probed, then /healthz keeps answering and, where a budget applies, the call spent it and is refused once it is spent',
    async (_op, driver) => {
      const who = await caller();
      const stop = probeHealthz(app.url);
      const { result, principals } = await spentDuring(() => driver.send(who));
      const healthz = await stop();
      expect(`${result.status}${result.type ? ` ${result.type}` : ''}`).toMatch(driver.expected);
      expect(healthz.failures).toBe(0);
      expect(healthz.answers).toBeGreaterThanOrEqual(3);
      if (healthz.longestGapMs >= HEALTHZ_GAP_MS)
        throw new Error(`/healthz went ${healthz.longestGapMs} ms unanswered (${loadNote()})`);
      if (!driver.overBudget) return;
      expect(principals.length).toBeGreaterThan(0);
      for (const p of principals) await drain(p);
      expect(await driver.send(who)).toEqual(driver.overBudget);
    },
    300_000,
  );
});
