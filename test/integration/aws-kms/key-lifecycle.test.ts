/**
 * One key lifecycle behind both APIs (docs/aws-kms.md, "Key states"): a deletion scheduled on the
 * AWS KMS API is the native key's own pending deletion. The native API shows it and can cancel
 * (resume) or settle (revoke) it; a pending key refuses operations on both APIs; at its date one
 * audited destruction, by the sweep or the first AWS read, only of a key still pending. Also the
 * control plane's text, race and half-written refusals, and EnableKey/DisableKey and the other
 * operations scripts call.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api, workloadToken } from '../../../support/auth.ts';
import { signedRequest } from '../../../support/sigv4.ts';
import { AWS_PERMISSIONS, awsTenant, type AwsTenant } from './support.ts';
import { cancelDeletion } from '../../../api/services/keys/deletion.ts';

const DAY_MS = 86_400_000;

describe('AWS KMS key lifecycle: one owner, the native lifecycle', () => {
  let app: TestApp;
  let t: AwsTenant;
  let core: string;

  beforeAll(async () => {
    // The sweep runs only when a test calls it.
    app = await startTestApp({ KEY_ROTATION_CHECK_MS: '0' });
    t = await awsTenant(app);
    core = await workloadToken(app, t);
  });
  afterAll(async () => {
    await app?.stop();
  });

  async function aws(
    op: string,
    input: Record<string, unknown>,
    who: Pick<AwsTenant, 'accessKeyId' | 'secretAccessKey'> = t,
  ) {
    const { headers, body } = signedRequest(
      app.url,
      who,
      `TrentService.${op}`,
      JSON.stringify(input),
    );
    const res = await fetch(app.url, { method: 'POST', headers, body });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }
  const keysPath = () => `/api/v3/admin/tenants/${t.tenantId}/keys`;
  const native = (kid: string) => api(app, 'GET', `${keysPath()}/${kid}`, t.admin);
  const act = (kid: string, action: string) =>
    api(app, 'POST', `${keysPath()}/${kid}/${action}`, t.admin);
  const newKey = async () => (await aws('CreateKey', {})).body.KeyMetadata.KeyId as string;
  const sweep = (at: Date) => app.ctx.rotation!.runOnce(at);
  const events = async (kid: string) => {
    await app.ctx.audit.flush();
    return app.ctx
      .db('audit_events')
      .where({ tenant_id: t.tenantId, target: kid })
      .whereIn('action', ['key.revoke', 'key.archive'])
      .orderBy('seq');
  };

  it('when a key pending deletion is resumed on the native API, then the deletion is cancelled, both APIs use the key, and no later sweep or read destroys it', async () => {
    const kid = await newKey();
    const scheduled = await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
    expect(scheduled.status).toBe(200);
    const pending = await native(kid);
    expect(pending.body).toMatchObject({ state: 'suspended' });
    expect(Math.floor(Date.parse(pending.body.deletionDate as string) / 1000)).toBe(
      scheduled.body.DeletionDate,
    );

    const resumed = await act(kid, 'resume');
    expect(resumed.status).toBe(200);
    expect(resumed.body.state).toBe('active');
    expect(resumed.body).not.toHaveProperty('deletionDate');
    const described = (await aws('DescribeKey', { KeyId: kid })).body.KeyMetadata;
    expect(described).toMatchObject({ KeyState: 'Enabled', Enabled: true });
    expect(described).not.toHaveProperty('DeletionDate');
    expect((await aws('CancelKeyDeletion', { KeyId: kid })).body.__type).toBe(
      'KMSInvalidStateException',
    );

    // Past the old window: the sweep, a read-only workload's ListKeys and a DescribeKey destroy nothing.
    await sweep(new Date(Date.now() + 31 * DAY_MS));
    const reader = await awsTenantReader();
    expect((await aws('ListKeys', {}, reader)).status).toBe(200);
    expect((await aws('DescribeKey', { KeyId: kid })).body.KeyMetadata.KeyState).toBe('Enabled');
    expect((await native(kid)).body.state).toBe('active');
    expect((await aws('Encrypt', { KeyId: kid, Plaintext: 'aGk=' })).status).toBe(200);
    expect(await events(kid)).toHaveLength(0);
  });

  /** A second access key of the same tenant whose workload may only read keys. */
  async function awsTenantReader() {
    const role = await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/roles`, t.admin, {
      name: `reader-${Math.random().toString(36).slice(2, 8)}`,
      permissions: ['crypto.keys.read'],
    });
    const workload = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${t.tenantId}/workloads`,
      t.admin,
      { name: `reader-${Math.random().toString(36).slice(2, 8)}`, roleId: role.body.id },
    );
    const key = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${t.tenantId}/workloads/${workload.body.id}/access-keys`,
      t.admin,
      {},
    );
    expect(key.status).toBe(201);
    return {
      accessKeyId: key.body.accessKeyId as string,
      secretAccessKey: key.body.secretAccessKey as string,
    };
  }

  it('when a key is pending deletion, then it refuses encryption and decryption on both APIs and DescribeKey says it is not enabled', async () => {
    const kid = await newKey();
    const blob = (await aws('Encrypt', { KeyId: kid, Plaintext: 'aGk=' })).body.CiphertextBlob;
    const sealed = await api(app, 'POST', '/api/v3/crypto/encrypt', core, {
      kid,
      data: 'aGk=',
    });
    expect(sealed.status).toBe(200);
    await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });

    expect((await aws('Encrypt', { KeyId: kid, Plaintext: 'aGk=' })).body.__type).toBe(
      'KMSInvalidStateException',
    );
    expect((await aws('Decrypt', { CiphertextBlob: blob })).body.__type).toBe(
      'KMSInvalidStateException',
    );
    const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid, data: 'aGk=' });
    expect(enc.status).toBe(409);
    expect(enc.body.type).toMatch(/\/problems\/key-pending-deletion$/);
    const dec = await api(app, 'POST', '/api/v3/crypto/decrypt', core, {
      ciphertext: sealed.body.ciphertext,
    });
    expect(dec.status).toBe(409);
    expect(dec.body.type).toMatch(/\/problems\/key-pending-deletion$/);
    const described = (await aws('DescribeKey', { KeyId: kid })).body.KeyMetadata;
    expect(described).toMatchObject({
      KeyState: 'PendingDeletion',
      Enabled: false,
      PendingDeletionWindowInDays: 7,
    });
    // EnableKey cannot skip the cancellation, as in AWS.
    expect((await aws('EnableKey', { KeyId: kid })).body.__type).toBe('KMSInvalidStateException');
  });

  it('when the deletion date has come, then the sweep revokes and archives the key once, audited as the system on behalf of the requester, and its alias goes with it', async () => {
    const kid = await newKey();
    const alias = `alias/doomed-${kid.slice(-6)}`;
    expect((await aws('CreateAlias', { AliasName: alias, TargetKeyId: kid })).status).toBe(200);
    await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
    // Not yet due: nothing happens.
    await sweep(new Date(Date.now() + 6 * DAY_MS));
    expect((await native(kid)).body.state).toBe('suspended');

    await sweep(new Date(Date.now() + 8 * DAY_MS));
    await sweep(new Date(Date.now() + 9 * DAY_MS));
    const after = await native(kid);
    expect(after.body.state).toBe('archived');
    expect(after.body).not.toHaveProperty('deletionDate');
    expect((await aws('DescribeKey', { KeyId: kid })).body.__type).toBe('NotFoundException');
    expect((await aws('DescribeKey', { KeyId: alias })).body.__type).toBe('NotFoundException');
    const audit = await events(kid);
    expect(audit.map((e) => [e.action, e.actor])).toEqual([
      ['key.revoke', 'system'],
      ['key.archive', 'system'],
    ]);
    const details =
      typeof audit[0].details === 'string' ? JSON.parse(audit[0].details) : audit[0].details;
    expect(details).toMatchObject({
      reason: 'scheduled deletion',
      requestedBy: `workload:${t.workloadId}`,
      aliasesDeleted: [alias],
    });
  });

  it('when a due key is first read on the AWS API, then that read destroys it (audited) and a read-only ListKeys before it destroys nothing', async () => {
    const kid = await newKey();
    await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
    // The window has ended (moved back in the database: no clock to turn here).
    await app.ctx
      .db('keys')
      .where({ tenant_id: t.tenantId, kid })
      .update({ deletion_at: new Date(Date.now() - 1000) });
    await app.ctx.keys.invalidate(t.tenantId, kid);
    const listed = await aws('ListKeys', { Limit: 1000 }, await awsTenantReader());
    expect(listed.status).toBe(200);
    expect((await native(kid)).body.state).toBe('suspended');
    expect(await events(kid)).toHaveLength(0);

    expect((await aws('DescribeKey', { KeyId: kid })).body.__type).toBe('NotFoundException');
    expect((await native(kid)).body.state).toBe('archived');
    expect((await events(kid)).map((e) => e.action)).toEqual(['key.revoke', 'key.archive']);
  });

  it('when a key whose deletion date has passed is resumed or revoked natively before the sweep, then it is destroyed, not revived', async () => {
    for (const action of ['resume', 'revoke']) {
      const kid = await newKey();
      await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
      // The date has come but no sweep or AWS read has run yet (moved back in the database).
      await app.ctx
        .db('keys')
        .where({ tenant_id: t.tenantId, kid })
        .update({ deletion_at: new Date(Date.now() - 1000) });
      await app.ctx.keys.invalidate(t.tenantId, kid);

      const late = await act(kid, action);
      expect([late.status, late.body.type]).toEqual([
        409,
        expect.stringMatching(/\/problems\/invalid-transition$/),
      ]);
      expect((await native(kid)).body.state).toBe('archived');
      expect((await aws('DescribeKey', { KeyId: kid })).body.__type).toBe('NotFoundException');
      expect((await events(kid)).map((e) => [e.action, e.actor])).toEqual([
        ['key.revoke', 'system'],
        ['key.archive', 'system'],
      ]);
    }
  });

  it('when a cancellation reaches the key after its deletion date (a read raced it), then the key is destroyed and the cancellation finds no key', async () => {
    const kid = await newKey();
    await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
    await app.ctx
      .db('keys')
      .where({ tenant_id: t.tenantId, kid })
      .update({ deletion_at: new Date(Date.now() - 1000) });
    await expect(cancelDeletion(app.ctx, t.tenantId, kid)).rejects.toMatchObject({
      code: 'key_not_found',
    });
    expect((await native(kid)).body.state).toBe('archived');
    expect((await events(kid)).map((e) => e.action)).toEqual(['key.revoke', 'key.archive']);
  });

  it('when a key pending deletion is revoked natively, then the deletion is settled and the sweep leaves the revoked key alone', async () => {
    const kid = await newKey();
    await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
    const revoked = await act(kid, 'revoke');
    expect(revoked.status).toBe(200);
    expect(revoked.body.state).toBe('revoked');
    expect(revoked.body).not.toHaveProperty('deletionDate');
    await sweep(new Date(Date.now() + 31 * DAY_MS));
    expect((await native(kid)).body.state).toBe('revoked');
    expect((await aws('DescribeKey', { KeyId: kid })).body.KeyMetadata.KeyState).toBe(
      'Unavailable',
    );
  });

  it('when ScheduleKeyDeletion races itself, then one wins and every other answers KMSInvalidStateException, never 500', async () => {
    const statuses: string[] = [];
    for (let round = 0; round < 10; round += 1) {
      const kid = await newKey();
      const answers = await Promise.all(
        Array.from({ length: 4 }, () =>
          aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 }),
        ),
      );
      const won = answers.filter((a) => a.status === 200);
      expect(won).toHaveLength(1);
      for (const a of answers) if (a.status !== 200) statuses.push(`${a.status} ${a.body.__type}`);
    }
    expect(new Set(statuses)).toEqual(new Set(['400 KMSInvalidStateException']));
  });

  it('when EnableKey races ScheduleKeyDeletion, then the outcome is one of theirs in some order: a deletion answered as scheduled is never silently cancelled', async () => {
    const lost: string[] = [];
    for (let round = 0; round < 20; round += 1) {
      const kid = await newKey();
      await aws('DisableKey', { KeyId: kid });
      const [enabled, scheduled] = await Promise.all([
        aws('EnableKey', { KeyId: kid }),
        aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 }),
      ]);
      const after = (await native(kid)).body;
      // EnableKey then ScheduleKeyDeletion: both succeed and the key is pending. The other order:
      // EnableKey is refused (KMSInvalidStateException) and the key is pending.
      if (scheduled.status === 200 && after.deletionDate === undefined)
        lost.push(`${enabled.status} ${enabled.body.__type ?? ''} -> ${after.state}`);
      if (enabled.status !== 200) expect(enabled.body.__type).toBe('KMSInvalidStateException');
    }
    expect(lost).toEqual([]);
  });

  it('when a key is pending deletion, then CreateAlias, UpdateAlias, TagResource, UntagResource and UpdateKeyDescription refuse it with KMSInvalidStateException (as AWS) and write nothing, so no alias outlives its destruction', async () => {
    const kid = await newKey();
    const other = await newKey();
    const moving = `alias/moving-${other.slice(-6)}`;
    await aws('CreateAlias', { AliasName: moving, TargetKeyId: other });
    await aws('TagResource', { KeyId: kid, Tags: [{ TagKey: 'team', TagValue: 'a' }] });
    await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
    const refused = [
      await aws('CreateAlias', { AliasName: `alias/late-${kid.slice(-6)}`, TargetKeyId: kid }),
      await aws('UpdateAlias', { AliasName: moving, TargetKeyId: kid }),
      await aws('TagResource', { KeyId: kid, Tags: [{ TagKey: 'env', TagValue: 'b' }] }),
      await aws('UntagResource', { KeyId: kid, TagKeys: ['team'] }),
      await aws('UpdateKeyDescription', { KeyId: kid, Description: 'late' }),
    ];
    expect(refused.map((r) => `${r.status} ${r.body.__type}`)).toEqual(
      Array(5).fill('400 KMSInvalidStateException'),
    );
    expect(await app.ctx.db('key_aliases').where({ tenant_id: t.tenantId, kid })).toEqual([]);
    expect(
      (await app.ctx.db('key_aliases').where({ tenant_id: t.tenantId, name: moving }).first()).kid,
    ).toBe(other);
    expect((await aws('ListResourceTags', { KeyId: kid })).body.Tags).toEqual([
      { TagKey: 'team', TagValue: 'a' },
    ]);
    expect((await native(kid)).body.description ?? null).toBeNull();
  });

  it('when a Description or a tag holds NUL, then ValidationException or TagException, and a CreateKey refused for its tags leaves no key', async () => {
    const count = async () =>
      Number((await app.ctx.db('keys').where({ tenant_id: t.tenantId }).count('* as n'))[0].n);
    const before = await count();
    expect((await aws('CreateKey', { Description: 'a\u0000b' })).body.__type).toBe(
      'ValidationException',
    );
    const tagged = await aws('CreateKey', { Tags: [{ TagKey: 'team', TagValue: 'a\u0000' }] });
    expect([tagged.status, tagged.body.__type]).toEqual([400, 'TagException']);
    expect(
      (await aws('CreateKey', { Tags: [{ TagKey: 'x\u0000', TagValue: 'a' }] })).body.__type,
    ).toBe('TagException');
    expect(await count()).toBe(before);

    const kid = await newKey();
    expect(
      (await aws('TagResource', { KeyId: kid, Tags: [{ TagKey: 'k\u0000', TagValue: 'v' }] })).body
        .__type,
    ).toBe('TagException');
    expect((await aws('UntagResource', { KeyId: kid, TagKeys: ['k\u0000'] })).body.__type).toBe(
      'TagException',
    );
    expect(
      (await aws('UpdateKeyDescription', { KeyId: kid, Description: '\u0000' })).body.__type,
    ).toBe('ValidationException');
    // A repeated TagKey is one tag, the last value winning, as before.
    const twice = await aws('CreateKey', {
      Tags: [
        { TagKey: 'env', TagValue: 'a' },
        { TagKey: 'env', TagValue: 'b' },
      ],
    });
    expect(twice.status).toBe(200);
    const tags = await aws('ListResourceTags', { KeyId: twice.body.KeyMetadata.KeyId });
    expect(tags.body.Tags).toEqual([{ TagKey: 'env', TagValue: 'b' }]);
  });

  it('when EnableKey and DisableKey are called, then they are the native resume and suspend, seen by both APIs and idempotent as in AWS', async () => {
    const kid = await newKey();
    expect((await aws('DisableKey', { KeyId: kid })).status).toBe(200);
    expect((await native(kid)).body.state).toBe('suspended');
    expect((await aws('DisableKey', { KeyId: kid })).status).toBe(200);
    expect((await aws('Encrypt', { KeyId: kid, Plaintext: 'aGk=' })).body.__type).toBe(
      'DisabledException',
    );
    expect((await aws('EnableKey', { KeyId: kid })).status).toBe(200);
    expect((await native(kid)).body.state).toBe('active');
    expect((await aws('EnableKey', { KeyId: kid })).status).toBe(200);
    expect((await aws('Encrypt', { KeyId: kid, Plaintext: 'aGk=' })).status).toBe(200);
    // After CancelKeyDeletion the key is Disabled; EnableKey brings it back.
    await aws('ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
    await aws('CancelKeyDeletion', { KeyId: kid });
    expect((await aws('DescribeKey', { KeyId: kid })).body.KeyMetadata.KeyState).toBe('Disabled');
    expect((await aws('EnableKey', { KeyId: kid })).status).toBe(200);
    expect((await aws('DescribeKey', { KeyId: kid })).body.KeyMetadata.KeyState).toBe('Enabled');
    await app.ctx.audit.flush();
    const actions = (
      await app.ctx
        .db('audit_events')
        .where({ tenant_id: t.tenantId, target: kid })
        .orderBy('seq')
        .select('action')
    ).map((r) => r.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        'aws-kms.DisableKey',
        'aws-kms.EnableKey',
        'aws-kms.CancelKeyDeletion',
      ]),
    );
    expect(AWS_PERMISSIONS).toContain('admin.keys.suspend');
  });

  it('when UpdateAlias points an alias at another key, then the alias follows it, and a key of another usage is refused', async () => {
    const first = await newKey();
    const second = await newKey();
    const signer = (await aws('CreateKey', { KeySpec: 'ECC_NIST_P256', KeyUsage: 'SIGN_VERIFY' }))
      .body.KeyMetadata.KeyId;
    const alias = `alias/moving-${first.slice(-6)}`;
    await aws('CreateAlias', { AliasName: alias, TargetKeyId: first });
    expect((await aws('Encrypt', { KeyId: alias, Plaintext: 'aGk=' })).body.KeyId).toContain(first);
    expect((await aws('UpdateAlias', { AliasName: alias, TargetKeyId: second })).status).toBe(200);
    expect((await aws('Encrypt', { KeyId: alias, Plaintext: 'aGk=' })).body.KeyId).toContain(
      second,
    );
    expect((await aws('UpdateAlias', { AliasName: alias, TargetKeyId: signer })).body.__type).toBe(
      'ValidationException',
    );
    expect(
      (await aws('UpdateAlias', { AliasName: 'alias/none-here', TargetKeyId: second })).body.__type,
    ).toBe('NotFoundException');
  });
});
