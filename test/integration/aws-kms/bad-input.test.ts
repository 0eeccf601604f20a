/**
 * Bad input to the AWS KMS API ("Bad input"), as one table: malformed JSON, a body over
 * the limit, a blob that is not base64, a wrong X-Amz-Target, unsigned and half-signed requests,
 * another tenant's access key and KeyId, a foreign account's ARN, a stale or altered signature.
 * Each answers the AWS error shape at once, writes nothing, and is audited once the workload is
 * known by its signature. Requests are signed by hand (support.ts) so they can be what no SDK sends.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api } from '../../../support/auth.ts';
import { signedRequest, type SignOptions } from '../../../support/sigv4.ts';
import { awsTenant, type AwsTenant } from './support.ts';

/** "At once": an answer slower than this is a finding. */
const AT_ONCE_MS = 2_000;
const TABLES = ['keys', 'key_versions', 'key_aliases', 'key_tags', 'access_keys'];

interface Row {
  name: string;
  /** The request: who signs, the target, the body, and how it departs from a good one. */
  send: () => { key?: 'a' | 'b' | 'none'; target: string; body: string | Buffer; o?: SignOptions };
  /** Rewrites the signed headers and body before sending (tampering, half-signing). */
  tamper?: (h: Record<string, string>, body: string | Buffer) => string | Buffer;
  type: string;
  /** The signature verified, so the refusal is audited in A's chain (before that, nowhere in it). */
  audited: boolean;
}

describe('AWS KMS API bad input: the AWS error at once, nothing written', () => {
  let app: TestApp;
  let a: AwsTenant;
  let b: AwsTenant;
  let kidA: string;
  let arnA: string;
  let kidB: string;
  let arnB: string;

  async function call(
    who: AwsTenant | undefined,
    target: string,
    body: string | Buffer,
    o?: SignOptions,
    tamper?: Row['tamper'],
  ) {
    let headers: Record<string, string>;
    let sent: string | Buffer = body;
    if (who) {
      const r = signedRequest(app.url, who, target, body, o);
      headers = r.headers;
    } else headers = { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target };
    if (tamper) sent = tamper(headers, body);
    const t0 = performance.now();
    const res = await fetch(app.url, { method: 'POST', headers, body: sent });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      errorType: res.headers.get('x-amzn-errortype'),
      body: JSON.parse(text) as Record<string, unknown>,
      ms: performance.now() - t0,
    };
  }

  const json = (v: unknown) => JSON.stringify(v);

  beforeAll(async () => {
    // Every row's refusal before the signature verifies spends the (key, address) failure budget
    // (anonymous-until-signed.test.ts tests it): room for all of them.
    app = await startTestApp({ RATE_LIMIT_FAILURES_PER_MINUTE: '1000' });
    a = await awsTenant(app);
    b = await awsTenant(app);
    const create = async (who: AwsTenant) =>
      (await call(who, 'TrentService.CreateKey', '{}')).body.KeyMetadata as {
        KeyId: string;
        Arn: string;
      };
    const ma = await create(a);
    kidA = ma.KeyId;
    arnA = ma.Arn;
    const mb = await create(b);
    kidB = mb.KeyId;
    arnB = mb.Arn;
    expect(
      (
        await call(
          b,
          'TrentService.CreateAlias',
          json({ AliasName: 'alias/b-only', TargetKeyId: kidB }),
        )
      ).status,
    ).toBe(200);
  });
  afterAll(async () => {
    await app?.stop();
  });

  /** Row counts of what an AWS operation can write. */
  const snapshot = async () =>
    Object.fromEntries(
      await Promise.all(
        TABLES.map(async (t) => [t, Number((await app.ctx.db(t).count({ n: '*' }).first())!.n)]),
      ),
    );
  const failures = async (tenantId: string) => {
    await app.ctx.audit.flush();
    return Number(
      (await app.ctx
        .db('audit_events')
        .where({ tenant_id: tenantId, outcome: 'failure' })
        .where('action', 'like', 'aws-kms.%')
        .count({ n: '*' })
        .first())!.n,
    );
  };

  const ROWS: Row[] = [
    {
      name: 'malformed JSON',
      send: () => ({ target: 'TrentService.CreateKey', body: '{"Description": ' }),
      type: 'SerializationException',
      audited: true,
    },
    {
      name: 'a JSON body that is not an object',
      send: () => ({ target: 'TrentService.CreateKey', body: '["x"]' }),
      type: 'SerializationException',
      audited: true,
    },
    {
      name: 'a body over the limit',
      send: () => ({
        target: 'TrentService.Encrypt',
        body: json({ KeyId: kidA, Plaintext: 'A'.repeat(app.config.jsonLimitBytes + 10) }),
      }),
      // Read before the signature is verified: the caller is still anonymous.
      type: 'ValidationException',
      audited: false,
    },
    {
      name: 'a blob that is not base64',
      send: () => ({
        target: 'TrentService.Encrypt',
        body: json({ KeyId: kidA, Plaintext: '!!not base64!!' }),
      }),
      type: 'ValidationException',
      audited: true,
    },
    {
      name: 'an unknown operation',
      send: () => ({ target: 'TrentService.DropAllKeys', body: '{}' }),
      type: 'UnknownOperationException',
      audited: true,
    },
    {
      name: "another service's target",
      send: () => ({ target: 'DynamoDB_20120810.CreateKey', body: '{}' }),
      type: 'UnknownOperationException',
      audited: true,
    },
    {
      name: 'an unsigned request',
      send: () => ({ key: 'none', target: 'TrentService.CreateKey', body: '{}' }),
      type: 'MissingAuthenticationTokenException',
      audited: false,
    },
    {
      name: 'a half-signed request (no Signature)',
      send: () => ({ target: 'TrentService.CreateKey', body: '{}' }),
      tamper: (h, body) => {
        h.authorization = h.authorization.replace(/, Signature=\w+/, '');
        return body;
      },
      type: 'IncompleteSignatureException',
      audited: false,
    },
    {
      name: 'a request with no X-Amz-Date',
      send: () => ({ target: 'TrentService.CreateKey', body: '{}' }),
      tamper: (h, body) => {
        delete h['x-amz-date'];
        return body;
      },
      type: 'IncompleteSignatureException',
      audited: false,
    },
    {
      name: 'host not among the signed headers',
      send: () => ({
        target: 'TrentService.CreateKey',
        body: '{}',
        o: { signed: ['content-type', 'x-amz-target'] },
      }),
      type: 'InvalidSignatureException',
      audited: false,
    },
    {
      name: 'another service in the credential scope',
      send: () => ({ target: 'TrentService.CreateKey', body: '{}', o: { service: 's3' } }),
      type: 'InvalidSignatureException',
      audited: false,
    },
    {
      name: 'a captured request replayed after the 5-minute window',
      send: () => ({
        target: 'TrentService.CreateKey',
        body: '{}',
        o: { at: new Date(Date.now() - 6 * 60_000) },
      }),
      type: 'InvalidSignatureException',
      audited: false,
    },
    {
      name: 'a captured request with its body changed',
      send: () => ({ target: 'TrentService.CreateKey', body: json({ Description: 'signed' }) }),
      tamper: () => json({ Description: 'changed' }),
      type: 'InvalidSignatureException',
      audited: false,
    },
    {
      name: 'a captured request with its target changed',
      send: () => ({ target: 'TrentService.DescribeKey', body: json({ KeyId: kidA }) }),
      tamper: (h, body) => {
        h['x-amz-target'] = 'TrentService.ScheduleKeyDeletion';
        return body;
      },
      type: 'InvalidSignatureException',
      audited: false,
    },
    {
      // Signed over host and x-amz-date only, so the target could be swapped for another operation.
      name: 'a request whose X-Amz-Target is not signed, replayed as another operation',
      send: () => ({
        target: 'TrentService.DescribeKey',
        body: json({ KeyId: kidA }),
        o: { signed: ['host'] },
      }),
      tamper: (h, body) => {
        h['x-amz-target'] = 'TrentService.ScheduleKeyDeletion';
        return body;
      },
      type: 'InvalidSignatureException',
      audited: false,
    },
    {
      name: 'a request whose Content-Type is not signed',
      send: () => ({
        target: 'TrentService.DescribeKey',
        body: json({ KeyId: kidA }),
        o: { signed: ['host', 'x-amz-target'] },
      }),
      type: 'InvalidSignatureException',
      audited: false,
    },
    ...['constructor', '__proto__', 'toString', 'hasOwnProperty'].map((name): Row => ({
      name: `a signed header named ${name} (an Object.prototype member)`,
      send: () => ({
        target: 'TrentService.DescribeKey',
        body: json({ KeyId: kidA }),
        o: { signed: ['content-type', 'host', 'x-amz-target', name] },
      }),
      type: 'InvalidSignatureException',
      audited: false,
    })),
    {
      name: 'a session token (X-Amz-Security-Token) beside the access key',
      send: () => ({ target: 'TrentService.CreateKey', body: '{}' }),
      tamper: (h, body) => {
        h['x-amz-security-token'] = 'FwoGZXIvYXdzEXAMPLE';
        return body;
      },
      type: 'UnrecognizedClientException',
      audited: false,
    },
    {
      name: "this tenant's access key id on a request signed with another tenant's secret",
      send: () => ({ key: 'b', target: 'TrentService.CreateKey', body: '{}' }),
      tamper: (h, body) => {
        // Signed with B's secret, presented as A's key: A's workload is identified, the signature fails.
        h.authorization = h.authorization.replace(b.accessKeyId, a.accessKeyId);
        return body;
      },
      type: 'InvalidSignatureException',
      audited: false,
    },
    {
      name: 'an unknown access key',
      send: () => ({ target: 'TrentService.CreateKey', body: '{}' }),
      tamper: (h, body) => {
        h.authorization = h.authorization.replace(a.accessKeyId, 'KWAKAAAAAAAAAAAAAAAA');
        return body;
      },
      type: 'UnrecognizedClientException',
      audited: false,
    },
    {
      name: "another tenant's kid",
      send: () => ({ target: 'TrentService.ScheduleKeyDeletion', body: json({ KeyId: kidB }) }),
      type: 'NotFoundException',
      audited: true,
    },
    {
      name: "another tenant's alias",
      send: () => ({
        target: 'TrentService.Encrypt',
        body: json({ KeyId: 'alias/b-only', Plaintext: 'aGk=' }),
      }),
      type: 'NotFoundException',
      audited: true,
    },
    {
      name: "another tenant's ARN (a foreign account)",
      send: () => ({
        target: 'TrentService.TagResource',
        body: json({ KeyId: arnB, Tags: [{ TagKey: 'x', TagValue: 'y' }] }),
      }),
      type: 'NotFoundException',
      audited: true,
    },
    {
      name: "this tenant's kid under a foreign account's ARN",
      send: () => ({
        target: 'TrentService.CreateAlias',
        body: json({
          AliasName: 'alias/planted',
          TargetKeyId: `arn:aws:kms:eu-west-1:000000000000:key/${kidA}`,
        }),
      }),
      type: 'NotFoundException',
      audited: true,
    },
    {
      // The ARN DescribeKey gave, its region changed: AWS names one region's key by it.
      name: "this tenant's own key ARN with another region than the request's",
      send: () => ({
        target: 'TrentService.DescribeKey',
        body: json({ KeyId: arnA.replace(':eu-west-1:', ':us-west-2:') }),
      }),
      type: 'NotFoundException',
      audited: true,
    },
  ];

  it.each(ROWS.map((r) => [r.name, r] as const))(
    'when %s is sent, then the AWS error shape at once and nothing written',
    async (_name, row) => {
      const before = await snapshot();
      const auditedBefore = await failures(a.tenantId);
      const { key = 'a', target, body, o } = row.send();
      const who = key === 'none' ? undefined : key === 'a' ? a : b;
      const res = await call(who, target, body, o, row.tamper);
      expect([res.status, res.body.__type, res.errorType]).toEqual([400, row.type, row.type]);
      expect(res.type).toMatch(/^application\/x-amz-json-1\.1/);
      expect(res.body.message).toEqual(expect.any(String));
      expect(Object.keys(res.body).sort()).toEqual(['__type', 'message']);
      expect(res.ms).toBeLessThan(AT_ONCE_MS);
      expect(await snapshot()).toEqual(before);
      expect(await failures(a.tenantId)).toBe(auditedBefore + (row.audited ? 1 : 0));
    },
  );

  it("when another tenant's kid, alias or ARN is named, then the message is that of a key that never existed", async () => {
    const messageOf = async (keyId: string) =>
      (await call(a, 'TrentService.DescribeKey', json({ KeyId: keyId }))).body.message as string;
    const never = (await messageOf('never-existed')).replace('never-existed', '<id>');
    expect((await messageOf(kidB)).replace(kidB, '<id>')).toBe(never);
    expect((await messageOf('alias/b-only')).replace('alias/b-only', '<id>')).toBe(never);
    expect((await messageOf(arnB)).replace(arnB, '<id>')).toBe(never);
    const elsewhere = arnA.replace(':eu-west-1:', ':us-west-2:');
    expect((await messageOf(elsewhere)).replace(elsewhere, '<id>')).toBe(never);
  });

  it('when an access key is deleted, then its next request is UnrecognizedClientException at once', async () => {
    const base = `/api/v3/admin/tenants/${a.tenantId}/workloads/${a.workloadId}/access-keys`;
    const created = await api(app, 'POST', base, a.admin, {});
    const key = created.body as { accessKeyId: string; secretAccessKey: string };
    const random = json({ NumberOfBytes: 8 });
    const send = () => {
      const { headers, body } = signedRequest(app.url, key, 'TrentService.GenerateRandom', random);
      return fetch(app.url, { method: 'POST', headers, body });
    };
    expect((await send()).status).toBe(200);
    expect((await api(app, 'DELETE', `${base}/${key.accessKeyId}`, a.admin)).status).toBe(204);
    const res = await send();
    expect([res.status, ((await res.json()) as { __type: string }).__type]).toEqual([
      400,
      'UnrecognizedClientException',
    ]);
  });

  it('when the same signed request is sent twice in the same second, then both succeed (AWS has no seen-set)', async () => {
    const { headers, body } = signedRequest(
      app.url,
      a,
      'TrentService.GenerateRandom',
      json({ NumberOfBytes: 8 }),
    );
    const first = await fetch(app.url, { method: 'POST', headers, body });
    const again = await fetch(app.url, { method: 'POST', headers, body });
    expect([first.status, again.status]).toEqual([200, 200]);
  });
});
