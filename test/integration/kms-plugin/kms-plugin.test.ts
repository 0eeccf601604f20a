/**
 * `keyward kms-plugin` as the kube-apiserver uses it: a gRPC client made by proto-loader from the
 * published k8s.io/kms/apis/v2 api.proto polls Status, encrypts a 32-byte DEK seed, decrypts it
 * with the key_id and annotations it got, sees key_id change when the key rotates through the
 * native API, and still decrypts what it wrote before. Keyward behind a proxy that stops answering
 * turns healthz from ok; a tampered ciphertext or a key_id that is not the ciphertext's is
 * refused alike. The socket is 0600, a stale one is replaced, and SIGTERM removes it.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { decodeProtectedHeader } from 'jose';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { adminToken, api, makeTenant, type TestTenant } from '../../../support/auth.ts';
import { spawnTracked } from '../../../support/processes.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.ts';
import { expectEventually } from '../../support/time.ts';
import { scaled } from '../../../support/deadline.ts';

const root = new URL('../../../', import.meta.url).pathname;
/** The published api.proto, as vendored (its header names the commit it was taken from). */
const PROTO = join(root, 'bin/lib/kms-plugin/api.proto');
const KID = 'k8s-secrets';

interface StatusResponse {
  version: string;
  healthz: string;
  key_id: string;
}
interface EncryptResponse {
  ciphertext: Buffer;
  key_id: string;
  annotations: Record<string, Buffer>;
}
type Unary = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;
type KmsClient = grpc.Client & { Status: Unary; Encrypt: Unary; Decrypt: Unary };

/** A client of the socket, as the API server makes one (a deadline on every call). */
function kmsClient(socket: string) {
  const definition = loadSync(PROTO, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
  });
  const v2 = grpc.loadPackageDefinition(definition).v2 as unknown as {
    KeyManagementService: new (address: string, creds: grpc.ChannelCredentials) => KmsClient;
  };
  const client = new v2.KeyManagementService(`unix://${socket}`, grpc.credentials.createInsecure());
  const call =
    <T>(method: 'Status' | 'Encrypt' | 'Decrypt') =>
    (req: unknown): Promise<T> =>
      new Promise((resolve, reject) =>
        client[method](
          req,
          new grpc.Metadata(),
          { deadline: Date.now() + scaled(5_000) },
          (err, res) => (err ? reject(err) : resolve(res as T)),
        ),
      );
  return {
    status: () => call<StatusResponse>('Status')({}),
    encrypt: (plaintext: Buffer) =>
      call<EncryptResponse>('Encrypt')({ plaintext, uid: crypto.randomUUID() }),
    decrypt: (req: { ciphertext: Buffer; key_id: string; annotations: Record<string, Buffer> }) =>
      call<{ plaintext: Buffer }>('Decrypt')({ ...req, uid: crypto.randomUUID() }),
    close: () => client.close(),
  };
}

/**
 * The API server's rule for annotation keys (k8s.io/apimachinery validation
 * IsFullyQualifiedDomainName): an RFC 1123 subdomain of at least two labels, at most 253.
 */
const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const isFqdn = (name: string) =>
  name.length <= 253 &&
  new RegExp(`^${LABEL}(\\.${LABEL})*$`).test(name) &&
  name.split('.').length >= 2;

/** The gRPC error a promise rejects with. */
async function refusal(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('the call succeeded');
}

let app: TestApp;
let tenant: TestTenant;
let admin: string;
let proxy: TcpProxy;
let dir: string;
const plugins: ChildProcess[] = [];

/** Starts the plugin on `socket` through the proxy; resolves once the socket exists. */
async function startPlugin(socket: string): Promise<{ child: ChildProcess; log: () => string }> {
  const child = spawnTracked(
    process.execPath,
    [join(root, 'bin/keyward.js'), 'kms-plugin', '--socket', socket, '--key', KID],
    {
      env: {
        ...process.env,
        KEYWARD_URL: `http://127.0.0.1:${proxy.port}`,
        KEYWARD_CLIENT_ID: tenant.clientId,
        KEYWARD_CLIENT_SECRET: tenant.clientSecret,
        KEYWARD_PROFILE: '',
        KEYWARD_TENANT: '',
        KEYWARD_CONFIG_DIR: dir,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  plugins.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  await expectEventually(
    () => {
      if (child.exitCode !== null) throw new Error(`the plugin exited: ${stderr}`);
      expect(stderr).toContain('serving unix://');
    },
    { timeoutMs: scaled(30_000), intervalMs: 50 },
  );
  return { child, log: () => stderr };
}

/** Sends SIGTERM and answers the exit code. */
function terminate(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

beforeAll(async () => {
  app = await startTestApp();
  tenant = await makeTenant(app, ['crypto.encrypt', 'crypto.decrypt']);
  admin = await adminToken(app);
  const created = await api(app, 'POST', `/api/v3/admin/tenants/${tenant.tenantId}/keys`, admin, {
    kid: KID,
    type: 'aes-256',
  });
  expect(created.status).toBe(201);
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(app.url).port) });
  dir = mkdtempSync(join(tmpdir(), 'keyward-kms-plugin-'));
});

afterAll(async () => {
  for (const child of plugins) await terminate(child);
  await proxy?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  await app?.stop();
});

describe('keyward kms-plugin, as the API server calls it', () => {
  let socket: string;
  let plugin: { child: ChildProcess; log: () => string };
  let kms: ReturnType<typeof kmsClient>;

  beforeAll(async () => {
    socket = join(dir, 'kms.sock');
    plugin = await startPlugin(socket);
    kms = kmsClient(socket);
  });
  afterAll(() => kms?.close());

  // Written under the first version, decrypted after the rotation.
  let seed: Buffer;
  let first: EncryptResponse;

  it('when the plugin serves, then the socket is 0600 and Status answers v2, ok and the key version', async () => {
    expect(statSync(socket).isSocket()).toBe(true);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    // Polled, as the API server does: the first probe also fetches the plugin's token.
    await expectEventually(
      async () =>
        expect(await kms.status()).toEqual({ version: 'v2', healthz: 'ok', key_id: `${KID}#1` }),
      { timeoutMs: scaled(20_000), intervalMs: 500 },
    );
  });

  it('when a 32-byte seed is encrypted, then the ciphertext is a bounded JWE under the key, with valid annotations', async () => {
    seed = randomBytes(32);
    first = await kms.encrypt(seed);
    expect(first.key_id).toBe(`${KID}#1`);
    expect(first.ciphertext.length).toBeGreaterThan(0);
    expect(first.ciphertext.length).toBeLessThan(1024);
    expect(first.ciphertext.includes(seed)).toBe(false);
    // An independent reader of the JWE: the version it names is the key_id's.
    expect(decodeProtectedHeader(first.ciphertext.toString('utf8')).kid).toBe(`${KID}#1`);
    const names = Object.keys(first.annotations);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(isFqdn(name)).toBe(true);
    const size = names.reduce((n, k) => n + k.length + first.annotations[k].length, 0);
    expect(size).toBeLessThan(256);
  });

  it('when the ciphertext comes back with its key_id and annotations, then Decrypt answers the seed', async () => {
    const { plaintext } = await kms.decrypt(first);
    expect(Buffer.compare(plaintext, seed)).toBe(0);
  });

  it('when the key rotates through the native API, then key_id changes and what was written before still decrypts', async () => {
    const rotated = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${tenant.tenantId}/keys/${KID}/rotate`,
      admin,
    );
    expect(rotated.status).toBe(200);
    // Status answers from a probe a few seconds old at most.
    await expectEventually(async () => expect((await kms.status()).key_id).toBe(`${KID}#2`), {
      timeoutMs: scaled(15_000),
      intervalMs: 250,
    });
    const seed2 = randomBytes(32);
    const second = await kms.encrypt(seed2);
    expect(second.key_id).toBe(`${KID}#2`);
    expect(decodeProtectedHeader(second.ciphertext.toString('utf8')).kid).toBe(`${KID}#2`);
    expect(Buffer.compare((await kms.decrypt(second)).plaintext, seed2)).toBe(0);
    // The object written under the old key_id.
    expect(Buffer.compare((await kms.decrypt(first)).plaintext, seed)).toBe(0);
  });

  it('when the ciphertext is tampered with or the key_id is not its own, then Decrypt refuses alike', async () => {
    const jwe = first.ciphertext.toString('utf8');
    const parts = jwe.split('.');
    const flip = (s: string) =>
      s[5] === 'A' ? `${s.slice(0, 5)}B${s.slice(6)}` : `${s.slice(0, 5)}A${s.slice(6)}`;
    const tampered = [
      {
        ...first,
        ciphertext: Buffer.from([...parts.slice(0, 3), flip(parts[3]), parts[4]].join('.')),
      },
      { ...first, ciphertext: Buffer.from([...parts.slice(0, 4), flip(parts[4])].join('.')) },
      { ...first, ciphertext: Buffer.from(jwe.slice(0, -4)) },
      { ...first, ciphertext: randomBytes(200) },
      { ...first, key_id: `${KID}#2` },
      { ...first, annotations: { 'format.kms.keyward.io': Buffer.from('jwe/9') } },
    ];
    for (const req of tampered) {
      const err = await refusal(kms.decrypt(req));
      expect([err.code, err.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'decryption failed']);
    }
    // Nothing of the request or of Keyward's answer in the log either.
    expect(plugin.log()).not.toContain(seed.toString('base64'));
  });

  it('when Keyward stops answering, then healthz is not ok, and ok again once it is back', async () => {
    proxy.refuse();
    try {
      const down = await expectEventually(
        async () => {
          const s = await kms.status();
          expect(s.healthz).not.toBe('ok');
          return s;
        },
        { timeoutMs: scaled(20_000), intervalMs: 250 },
      );
      expect(down.version).toBe('v2');
      expect(down.healthz).toBe('keyward is unreachable');
      const err = await refusal(kms.encrypt(randomBytes(32)));
      expect(err.code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      proxy.accept();
    }
    await expectEventually(async () => expect((await kms.status()).healthz).toBe('ok'), {
      timeoutMs: scaled(20_000),
      intervalMs: 250,
    });
  });

  it('when the plugin gets SIGTERM, then it exits 0 and removes its socket', async () => {
    kms.close();
    expect(await terminate(plugin.child)).toBe(0);
    expect(existsSync(socket)).toBe(false);
    expect(plugin.log()).toContain('SIGTERM: closing');
  });
});

describe('keyward kms-plugin, its socket', () => {
  it('when a plugin died and left its socket, then the next one replaces it; one that serves is not replaced', async () => {
    const socket = join(dir, 'stale.sock');
    const dead = await startPlugin(socket);
    dead.child.kill('SIGKILL');
    await new Promise((resolve) => dead.child.once('exit', resolve));
    expect(statSync(socket).isSocket()).toBe(true);

    const next = await startPlugin(socket);
    const kms = kmsClient(socket);
    try {
      // The first probe also fetches the plugin's token: on a loaded machine it may take longer
      // than the probe's deadline, and the next one answers.
      await expectEventually(async () => expect((await kms.status()).healthz).toBe('ok'), {
        timeoutMs: scaled(20_000),
        intervalMs: 500,
      });
    } finally {
      kms.close();
    }
    // A second plugin on the socket the first one serves exits non-zero, and leaves it in place.
    const second = spawnTracked(
      process.execPath,
      [join(root, 'bin/keyward.js'), 'kms-plugin', '--socket', socket, '--key', KID],
      {
        env: {
          ...process.env,
          KEYWARD_URL: app.url,
          KEYWARD_CLIENT_ID: tenant.clientId,
          KEYWARD_CLIENT_SECRET: tenant.clientSecret,
          KEYWARD_PROFILE: '',
          KEYWARD_TENANT: '',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    plugins.push(second);
    let stderr = '';
    second.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise((resolve) => second.once('exit', resolve));
    expect(code).not.toBe(0);
    expect(stderr).toContain('another process serves');
    expect(statSync(socket).isSocket()).toBe(true);
    expect(await terminate(next.child)).toBe(0);
    expect(existsSync(socket)).toBe(false);
  });
});
