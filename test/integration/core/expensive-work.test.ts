/**
 * Work whose cost the caller sets (docs/expensive-work.md), driven while /healthz is probed:
 * PWRI conversions at and past the PBKDF2 iteration cap, and RSA-4096 GenerateDataKeyPair. Each
 * runs on the expensive-work pool, spends the caller's budget (429 / LimitExceededException past
 * it), and /healthz keeps answering. The figures asserted are counts, and one generous bound on
 * the longest /healthz gap, not timings that a loaded machine could miss.
 */
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api } from '../../../support/auth.ts';
import { signedRequest } from '../../../support/sigv4.ts';
import { pwriEnvelope } from '../../../support/fixtures/pwri.ts';
import { MAX_ITERATIONS } from '../../../shared/pkcs7/password-recipient.ts';
import { PERMISSIONS, convert, makeActor, type Actor } from '../migration/helpers.ts';
import { awsTenant, type AwsTenant } from '../aws-kms/support.ts';
import { sleep } from '../../support/time.ts';
import { probeHealthz } from '../../support/healthz-probe.ts';

/** The expensive tasks started while `body` runs. */
async function tasksDuring(app: TestApp, body: () => Promise<void>): Promise<string[]> {
  const tasks: string[] = [];
  const run = app.ctx.expensive.run;
  app.ctx.expensive.run = ((task: string, ...rest: unknown[]) => {
    tasks.push(task);
    return (run as (...a: unknown[]) => Promise<unknown>).call(app.ctx.expensive, task, ...rest);
  }) as typeof run;
  try {
    await body();
  } finally {
    app.ctx.expensive.run = run;
  }
  return tasks;
}

/** A generous bound: far above a scheduled probe's gap, far below a derivation on the loop. */
const HEALTHZ_GAP_MS = 2000;

describe('PWRI key derivation', () => {
  let app: TestApp;
  let actor: Actor;
  const password = 'correct horse battery staple';
  const data = randomBytes(1000);

  beforeAll(async () => {
    // Three derivations at the cap (100 units each) fit; the fourth does not.
    app = await startTestApp({ EXPENSIVE_BUDGET: '350' });
    actor = await makeActor(app, [...PERMISSIONS, 'admin.keys.create']);
    const admin = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys`,
      actor.user,
      {
        kid: 'target',
        type: 'ec-p256',
        usage: 'encrypt',
      },
    );
    expect(admin.status).toBe(201);
  });
  afterAll(() => app?.stop());

  it('when a file asks for 1,000,000 iterations, then cms-unsupported before any derivation; at the cap it converts on the expensive-work pool, the budget answers 429 past its limit, and /healthz keeps answering', async () => {
    const hostile = pwriEnvelope(data, password, 1_000_000);
    const atCap = pwriEnvelope(data, password, MAX_ITERATIONS, 'sha512');
    const metadata = { password, targetKid: 'target' };
    const stop = probeHealthz(app.url);
    let refused: Array<{ status: number; type: string }> = [];
    let converted: number[] = [];
    const tasks = await tasksDuring(app, async () => {
      refused = await Promise.all(
        Array.from({ length: 5 }, async () => {
          const r = await convert(app, actor.user, hostile, metadata);
          return {
            status: r.status,
            type: r.status === 200 ? 'converted' : r.json<{ type: string }>().type,
          };
        }),
      );
      converted = (
        await Promise.all(
          Array.from({ length: 3 }, () => convert(app, actor.user, atCap, metadata)),
        )
      ).map((r) => r.status);
    });
    const over = await convert(app, actor.user, atCap, metadata);
    const healthz = await stop();

    expect(refused).toEqual(
      Array(5).fill({ status: 415, type: expect.stringMatching(/\/problems\/cms-unsupported$/) }),
    );
    expect(converted).toEqual([200, 200, 200]);
    expect(tasks).toEqual(['derivePbkdf2', 'derivePbkdf2', 'derivePbkdf2']);
    expect(over.status).toBe(429);
    expect(over.json().type).toMatch(/\/problems\/rate-limited$/);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(healthz.failures).toBe(0);
    expect(healthz.answers).toBeGreaterThanOrEqual(5);
    expect(healthz.longestGapMs).toBeLessThan(HEALTHZ_GAP_MS);
  });
});

describe('GenerateDataKeyPair', () => {
  let app: TestApp;
  let t: AwsTenant;

  /** One AWS KMS call: status and the exception name (or the answer). */
  async function aws(target: string, members: unknown, signal?: AbortSignal) {
    const body = JSON.stringify(members);
    const s = signedRequest(app.url, t, `TrentService.${target}`, body);
    const r = await fetch(`${app.url}/`, { method: 'POST', headers: s.headers, body, signal });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  }

  beforeAll(async () => {
    // Two threads, so a queue forms; RSA-4096 costs 1000 units: three fit, the fourth does not.
    app = await startTestApp({ EXPENSIVE_BUDGET: '3500', EXPENSIVE_THREADS: '2' });
    t = await awsTenant(app);
    const created = await aws('CreateKey', { Description: 'wraps data key pairs' });
    expect(created.status).toBe(200);
    await aws('CreateAlias', {
      AliasName: 'alias/wrap',
      TargetKeyId: (created.body.KeyMetadata as { KeyId: string }).KeyId,
    });
  });
  afterAll(() => app?.stop());

  it('when four RSA-4096 pairs are asked for at once, then three are generated on the expensive-work pool, the fourth is LimitExceededException, and /healthz keeps answering', async () => {
    const stop = probeHealthz(app.url);
    let answers: Array<{ status: number; body: Record<string, unknown> }> = [];
    const tasks = await tasksDuring(app, async () => {
      answers = await Promise.all(
        Array.from({ length: 4 }, () =>
          aws('GenerateDataKeyPair', { KeyId: 'alias/wrap', KeyPairSpec: 'RSA_4096' }),
        ),
      );
    });
    const healthz = await stop();
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    expect(answers.filter((a) => a.status !== 200).map((a) => [a.status, a.body.__type])).toEqual([
      [400, 'LimitExceededException'],
    ]);
    expect(tasks.filter((x) => x === 'generateDataKeyPairTask')).toHaveLength(4);
    expect(app.ctx.expensive.running() + app.ctx.expensive.waiting()).toBe(0);
    expect(healthz.failures).toBe(0);
    expect(healthz.answers).toBeGreaterThanOrEqual(5);
    expect(healthz.longestGapMs).toBeLessThan(HEALTHZ_GAP_MS);
  }, 180_000);

  it('when the clients of waiting generations disconnect, then those generations never start', async () => {
    t = await awsTenant(app);
    const created = await aws('CreateKey', {});
    const keyId = (created.body.KeyMetadata as { KeyId: string }).KeyId;
    // Both threads are held by system work (no budget) long enough for the requests to queue.
    const hold = () =>
      app.ctx.expensive.run(
        'derivePbkdf2',
        {
          password: Buffer.from('x'),
          salt: Buffer.alloc(16),
          iterations: 1_000_000,
          keyLength: 32,
          digest: 'sha512',
        },
        { principal: '', kind: 'key-derivation', cost: 0 },
      );
    const blockers = [hold(), hold()];
    const dropped = app.ctx.expensive.dropped();
    const leaving = new AbortController();
    const requests = Array.from({ length: 3 }, () =>
      aws('GenerateDataKeyPair', { KeyId: keyId, KeyPairSpec: 'RSA_2048' }, leaving.signal).catch(
        (err: Error) => err.name,
      ),
    );
    const deadline = Date.now() + 20_000;
    while (app.ctx.expensive.waiting() < 3 && Date.now() < deadline) await sleep(20);
    expect(app.ctx.expensive.waiting()).toBe(3);
    leaving.abort();
    expect(await Promise.all(requests)).toEqual(['AbortError', 'AbortError', 'AbortError']);
    await Promise.all(blockers);
    expect(app.ctx.expensive.dropped() - dropped).toBe(3);
    expect(app.ctx.expensive.running() + app.ctx.expensive.waiting()).toBe(0);
  });
});
