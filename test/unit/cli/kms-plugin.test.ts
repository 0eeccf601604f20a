/**
 * The KMS v2 plugin's answers to what Keyward answers it (bin/lib/kms-plugin/service.ts), with
 * the Core API replaced by functions that answer as the service would: the gRPC code and message
 * of each failure, one probe at a time for Status and its reuse, the bounds of what Encrypt takes
 * and gives. The plugin over a real socket and service: test/integration/kms-plugin/.
 */
import { status as Code } from '@grpc/grpc-js';
import { ApiError } from '../../../bin/lib/client.ts';
import { KmsPlugin, type PluginError } from '../../../bin/lib/kms-plugin/service.ts';

const problem = (status: number, slug: string) =>
  new ApiError(
    status,
    { type: `https://keyward.dev/problems/${slug}`, detail: 'secret detail' },
    'POST /x',
  );

type Api = ConstructorParameters<typeof KmsPlugin>[0]['api'];

function pluginWith(api: Partial<Api>, kid = 'k8s', now = () => 0) {
  const lines: string[] = [];
  const plugin = new KmsPlugin({
    api: api as Api,
    kid,
    probeTimeoutMs: 1_000,
    log: (l) => lines.push(l),
    now,
  });
  return { plugin, lines };
}

async function refusal(p: Promise<unknown>): Promise<PluginError> {
  try {
    await p;
  } catch (err) {
    return err as PluginError;
  }
  throw new Error('no refusal');
}

const signal = () => AbortSignal.timeout(5_000);
const sealed = (version: number, ciphertext = 'a.b.c.d.e') => ({ kid: 'k8s', version, ciphertext });
const input = (over: object = {}) => ({
  ciphertext: Buffer.from('aGVhZA..aXY.Y3Q.dGFn'),
  key_id: 'k8s#1',
  annotations: {},
  ...over,
});

describe('KmsPlugin', () => {
  it('when Keyward refuses a ciphertext in any way, then Decrypt answers INVALID_ARGUMENT "decryption failed" and no detail', async () => {
    for (const err of [
      problem(400, 'decryption-failed'),
      problem(400, 'validation-failed'),
      problem(404, 'key-not-found'),
      problem(422, 'key-usage-mismatch'),
    ]) {
      const { plugin } = pluginWith({ decrypt: async () => Promise.reject(err) });
      const e = await refusal(plugin.decrypt(input(), signal()));
      expect([e.code, e.message]).toEqual([Code.INVALID_ARGUMENT, 'decryption failed']);
    }
  });

  it('when the key id kept with the object is not the one the ciphertext names, then decryption failed', async () => {
    const { plugin } = pluginWith({
      decrypt: async () => ({ kid: 'k8s', version: 2, data: 'AAAA' }),
    });
    const e = await refusal(plugin.decrypt(input({ key_id: 'k8s#1' }), signal()));
    expect([e.code, e.message]).toEqual([Code.INVALID_ARGUMENT, 'decryption failed']);
  });

  it('when Keyward is down, slow, refuses the workload or the key state, then the code says which and the message only the slug', async () => {
    const cases: Array<[unknown, Code]> = [
      [new TypeError('fetch failed'), Code.UNAVAILABLE],
      [new DOMException('timed out', 'TimeoutError'), Code.DEADLINE_EXCEEDED],
      [problem(503, 'database-unavailable'), Code.UNAVAILABLE],
      [problem(401, 'unauthorized'), Code.UNAUTHENTICATED],
      [problem(403, 'forbidden'), Code.PERMISSION_DENIED],
      [problem(409, 'key-suspended'), Code.FAILED_PRECONDITION],
      [problem(429, 'rate-limited'), Code.RESOURCE_EXHAUSTED],
      [new Error('something internal at /secret/path'), Code.INTERNAL],
    ];
    for (const [err, code] of cases) {
      const { plugin } = pluginWith({ encrypt: async () => Promise.reject(err) });
      const e = await refusal(plugin.encrypt(Buffer.alloc(32), signal()));
      expect(e.code).toBe(code);
      expect(e.message).not.toContain('secret');
    }
  });

  it('when Status is polled, then one probe runs at a time and its answer is reused until it is a few seconds old', async () => {
    let clock = 0;
    let calls = 0;
    let version = 1;
    const { plugin } = pluginWith(
      {
        encrypt: async () => {
          calls += 1;
          return sealed(version);
        },
      },
      'k8s',
      () => clock,
    );
    const [a, b] = await Promise.all([plugin.status(), plugin.status()]);
    expect(calls).toBe(1);
    expect(a).toEqual({ version: 'v2', healthz: 'ok', key_id: 'k8s#1' });
    expect(b).toEqual(a);
    version = 2;
    clock = 4_000;
    expect((await plugin.status()).key_id).toBe('k8s#1');
    clock = 6_000;
    expect((await plugin.status()).key_id).toBe('k8s#2');
    expect(calls).toBe(2);
  });

  it('when an Encrypt sees a newer version than Status did, then Status reports it at once', async () => {
    let version = 1;
    const { plugin } = pluginWith({ encrypt: async () => sealed(version) });
    await plugin.status();
    version = 3;
    expect((await plugin.encrypt(Buffer.alloc(32), signal())).key_id).toBe('k8s#3');
    expect((await plugin.status()).key_id).toBe('k8s#3');
  });

  it('when Keyward fails, then healthz names the reason and key_id stays the last one known', async () => {
    let up = true;
    let clock = 0;
    const { plugin } = pluginWith(
      {
        encrypt: async () => {
          if (!up) throw new TypeError('fetch failed');
          return sealed(1);
        },
      },
      'k8s',
      () => clock,
    );
    await plugin.status();
    up = false;
    clock = 10_000;
    expect(await plugin.status()).toEqual({
      version: 'v2',
      healthz: 'keyward is unreachable',
      key_id: 'k8s#1',
    });
  });

  it('when Encrypt gets no plaintext or more than a seed, or Keyward seals past 1 KiB, then it refuses', async () => {
    const { plugin } = pluginWith({ encrypt: async () => sealed(1, 'x'.repeat(1025)) });
    expect((await refusal(plugin.encrypt(Buffer.alloc(0), signal()))).code).toBe(
      Code.INVALID_ARGUMENT,
    );
    expect((await refusal(plugin.encrypt(Buffer.alloc(129), signal()))).code).toBe(
      Code.INVALID_ARGUMENT,
    );
    expect((await refusal(plugin.encrypt(Buffer.alloc(32), signal()))).code).toBe(
      Code.FAILED_PRECONDITION,
    );
  });
});
