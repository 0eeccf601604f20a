/**
 * Who a SigV4 request is before its signature verifies: nobody. An access key id is not a
 * secret (it is in every request, log line and CLI profile), so a request that names one and
 * fails to sign with its secret writes nothing in the key's tenant chain: its refusal is tallied
 * in the platform chain (per address and second, actor anonymous, the access key as target), as
 * unknown client ids are at the token endpoint, and it spends the failure budget of the
 * (access key, address) pair, 429 LimitExceededException past it.
 */
import { request } from 'node:http';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { signedRequest, type SignOptions } from '../../../support/sigv4.ts';
import { ANONYMOUS_ACTOR } from '../../../shared/audit/actor.ts';
import { awsTenant, type AwsTenant } from './support.ts';

const BUDGET = 4;

interface Answer {
  status: number;
  type: string;
  retryAfter: string | undefined;
}

describe('AWS KMS API: the caller is anonymous until its signature verifies', () => {
  let app: TestApp;
  let a: AwsTenant;

  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_FAILURES_PER_MINUTE: String(BUDGET) });
    a = await awsTenant(app);
  });
  afterAll(async () => {
    await app?.stop();
  });

  /** One signed request from a loopback address of our choosing (the budget's key). */
  function send(
    from: string,
    key: { accessKeyId: string; secretAccessKey: string },
    target = 'TrentService.GenerateRandom',
    body = JSON.stringify({ NumberOfBytes: 8 }),
    o?: SignOptions,
  ): Promise<Answer> {
    const signed = signedRequest(app.url, key, target, body, o);
    return new Promise((resolve, reject) => {
      const req = request(
        app.url,
        {
          method: 'POST',
          localAddress: from,
          headers: { ...signed.headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              type: (JSON.parse(text) as { __type?: string }).__type ?? '',
              retryAfter: res.headers['retry-after'] as string | undefined,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  const eventsOf = async (tenantId: string, action?: string) => {
    await app.ctx.audit.flush();
    const q = app.ctx.db('audit_events').where({ tenant_id: tenantId }).orderBy('seq');
    if (action) q.andWhere({ action });
    return (await q) as Array<{
      actor: string;
      action: string;
      outcome: string;
      target: string | null;
      details: unknown;
    }>;
  };
  const countOf = (e: { details: unknown }) =>
    ((typeof e.details === 'string' ? JSON.parse(e.details) : e.details) as { count: number })
      .count;

  it("when many requests name a tenant's access key with a made-up secret, then none is written in that tenant's chain, the platform chain tallies them, and past the budget they answer 429", async () => {
    const attacker = '127.0.6.10';
    const forged = {
      accessKeyId: a.accessKeyId,
      secretAccessKey: 'made-up-secret-made-up-secret-0000000000',
    };
    const before = (await eventsOf(a.tenantId)).length;
    const answers: Answer[] = [];
    for (let i = 0; i < 30; i += 1) answers.push(await send(attacker, forged));
    expect(answers.slice(0, BUDGET).map((r) => [r.status, r.type])).toEqual(
      Array(BUDGET).fill([400, 'InvalidSignatureException']),
    );
    expect(answers.slice(BUDGET).map((r) => [r.status, r.type])).toEqual(
      Array(30 - BUDGET).fill([429, 'LimitExceededException']),
    );
    expect(Number(answers[BUDGET].retryAfter)).toBeGreaterThanOrEqual(1);
    // Nothing in the victim's chain, in the victim's name or any other.
    expect((await eventsOf(a.tenantId)).length).toBe(before);
    const tallied = (await eventsOf(app.platformTenantId, 'aws-kms.authenticate')).filter(
      (e) => e.target === `access-key:${a.accessKeyId}@${attacker}`,
    );
    expect(tallied.length).toBeGreaterThanOrEqual(1);
    // One event per tally window (a window may end between requests): far fewer than requests.
    expect(tallied.length).toBeLessThanOrEqual(BUDGET + 1);
    expect(tallied.map((e) => [e.actor, e.outcome])).toEqual(
      tallied.map(() => [ANONYMOUS_ACTOR, 'failure']),
    );
    expect(tallied.reduce((n, e) => n + countOf(e), 0)).toBeLessThanOrEqual(BUDGET + 1);
  });

  it("when one address has spent the pair's budget, then the key's holder still signs from another address", async () => {
    const attacker = '127.0.6.20';
    const forged = { accessKeyId: a.accessKeyId, secretAccessKey: 'x'.repeat(40) };
    for (let i = 0; i <= BUDGET; i += 1) await send(attacker, forged);
    expect((await send(attacker, forged)).status).toBe(429);
    expect(await send('127.0.6.21', a)).toMatchObject({ status: 200 });
  });

  it('when a request names no access key at all, then the refusal is tallied with the address as target (never the sent id) and spends the address budget', async () => {
    const from = '127.0.6.30';
    const unknown = { accessKeyId: 'KWAKAAAAAAAAAAAAAAAA', secretAccessKey: 'y'.repeat(40) };
    const answers: Answer[] = [];
    for (let i = 0; i <= BUDGET; i += 1) answers.push(await send(from, unknown));
    expect(answers.map((r) => r.type)).toEqual([
      ...Array(BUDGET).fill('UnrecognizedClientException'),
      'LimitExceededException',
    ]);
    const events = await eventsOf(app.platformTenantId, 'aws-kms.authenticate');
    expect(events.filter((e) => e.target === `address:${from}`).length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(events)).not.toContain('KWAKAAAAAAAAAAAAAAAA');
  });

  it("when a captured request is replayed late or with its body changed, then it is refused anonymously too: nothing in the key's tenant chain", async () => {
    const from = '127.0.6.40';
    const before = (await eventsOf(a.tenantId)).length;
    const stale = await send(from, a, undefined, undefined, {
      at: new Date(Date.now() - 6 * 60_000),
    });
    expect([stale.status, stale.type]).toEqual([400, 'InvalidSignatureException']);
    expect((await eventsOf(a.tenantId)).length).toBe(before);
  });

  it("when the signature verifies, then the request is the workload's: audited in its tenant's chain in its name", async () => {
    const before = await eventsOf(a.tenantId);
    const r = await send(
      '127.0.6.50',
      a,
      'TrentService.DescribeKey',
      JSON.stringify({ KeyId: 'nope' }),
    );
    expect([r.status, r.type]).toEqual([400, 'NotFoundException']);
    const after = await eventsOf(a.tenantId);
    expect(after.slice(before.length).map((e) => [e.actor, e.action, e.outcome])).toEqual([
      [`workload:${a.workloadId}`, 'aws-kms.DescribeKey', 'failure'],
    ]);
  });
});
