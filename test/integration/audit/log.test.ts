/**
 * The audit log of the hardening issue: nothing lost, nothing doubled, truncation detected, head
 * readable. A lone surrogate used to fail the batch and erase the event from both tenants'
 * chains, the retry wrote other tenants' committed events a second time, a few seconds of
 * database outage dropped the events raised meanwhile, a deleted tail still verified as valid,
 * and `?from=0000-01-01` answered 500.
 */
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import {
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { createAuditLog, LOST_ACTION, type AuditLog } from '../../../shared/audit/log.ts';
import { sleep } from '../../support/time.ts';

const EXCHANGE = [
  'admin.keys.create',
  'admin.cryptographicexchange.create',
  'admin.cryptographicexchange.reject',
];
const AUDIT = ['audit.verify', 'audit.events.read'];

interface Side {
  t: TestTenant;
  human: string;
  core: string;
}

/** What the pg driver throws when the server goes away mid-transaction: no SQLSTATE. */
const connectionLost = () => new Error('Connection terminated unexpectedly');

/**
 * The app's database handle with its transactions made to fail on demand: `down` rolls each one
 * back and throws as a dropped connection would; `lostAcks` lets that many commit and then throws,
 * as when the connection drops after COMMIT reached the server.
 */
function faultyDb(db: Knex) {
  const state = { down: false, lostAcks: 0 };
  const proxy = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== 'transaction') return Reflect.get(target, prop, receiver);
      return async (work: (trx: Knex.Transaction) => Promise<unknown>) => {
        const result = await target.transaction(async (trx) => {
          const r = await work(trx);
          if (state.down) throw connectionLost();
          return r;
        });
        if (state.lostAcks > 0) {
          state.lostAcks -= 1;
          throw connectionLost();
        }
        return result;
      };
    },
  });
  return { db: proxy, state };
}

describe(`the audit log keeps every event exactly once (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let a: Side;
  let b: Side;
  const side = async (name: string, permissions: string[]): Promise<Side> => {
    const t = await makeTenant(app, permissions, name);
    return { t, human: await userToken(app, t), core: await workloadToken(app, t) };
  };
  const rows = (tenantId: string) =>
    app.ctx.db('audit_events').where({ tenant_id: tenantId }).orderBy('seq');
  const verify = async (s: Side, body: Record<string, unknown> = {}) =>
    (await api(app, 'POST', '/api/v3/audit/verify', s.core, body)).body;
  /** Rows sharing a (tenant, seq), or a content (action, target, details), with another: both must be none. */
  const doubles = async (tenantId: string) => {
    const all = await rows(tenantId);
    const seqs = all.map((r) => Number(r.seq));
    const contents = all.map((r) => JSON.stringify([r.action, r.target, r.details]));
    return {
      seq: seqs.length - new Set(seqs).size,
      content: contents.length - new Set(contents).size,
    };
  };

  beforeAll(async () => {
    app = await startTestApp();
    [a, b] = [
      await side('audit-a', [...EXCHANGE, ...AUDIT]),
      await side('audit-b', [...EXCHANGE, ...AUDIT]),
    ];
  });
  afterAll(async () => {
    await app.stop();
  });

  it("when an exchange reject reason is cut in the middle of a surrogate pair, then both tenants' chains hold the reject event and verify", async () => {
    expect(
      (
        await api(app, 'POST', `/api/v3/admin/tenants/${a.t.tenantId}/keys`, a.human, {
          kid: 'sig',
          type: 'ec-p256',
          usage: 'sign',
        })
      ).status,
    ).toBe(201);
    const offer = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${a.t.tenantId}/cryptographic-exchanges`,
      a.human,
      { toTenantId: b.t.tenantId, kid: 'sig', mode: 'public' },
    );
    expect(offer.status).toBe(201);
    const id = offer.body.id as string;
    // Well-formed as sent; the service keeps the first 200 UTF-16 units, which ends on a lone high surrogate.
    const reason = `${'r'.repeat(199)}\u{1F600}`;
    expect(
      (
        await api(
          app,
          'POST',
          `/api/v3/admin/tenants/${b.t.tenantId}/cryptographic-exchanges/${id}/reject`,
          b.human,
          { reason },
        )
      ).status,
    ).toBe(200);
    await app.ctx.audit.flush();
    for (const s of [a, b]) {
      const reject = (await rows(s.t.tenantId)).filter(
        (r) => r.target === id && r.action === 'cryptographicexchange.reject',
      );
      expect(reject.map((r) => r.details.reason)).toEqual([`${'r'.repeat(199)}\uFFFD`]);
      expect(await verify(s)).toMatchObject({ valid: true });
    }
  });

  it('when an event holds lone surrogates and NUL in any field, key or nested value, then it is stored well-formed and the chain verifies', async () => {
    app.ctx.audit.record({
      tenantId: a.t.tenantId.toUpperCase(),
      actor: 'user:\uD800x',
      action: 'probe.odd-text',
      outcome: 'success',
      target: 'k\u0000\uDFFF',
      details: {
        'key\uDBFF': ['\uDC00', { deep: 'a\u0000b' }],
        when: new Date('2026-01-02T03:04:05Z'),
        skipped: undefined,
        nan: Number.NaN,
      },
    });
    await app.ctx.audit.flush();
    const row = (await rows(a.t.tenantId)).find((r) => r.action === 'probe.odd-text');
    expect(row).toMatchObject({
      actor: 'user:\uFFFDx',
      target: 'k\uFFFD\uFFFD',
      details: {
        'key\uFFFD': ['\uFFFD', { deep: 'a\uFFFDb' }],
        when: '2026-01-02T03:04:05.000Z',
        nan: null,
      },
    });
    expect(await verify(a)).toMatchObject({ valid: true });
  });

  it("when one event of a batch is refused by the database, then the other tenants' events of that batch are written once and the refused one is logged", async () => {
    const before = { a: (await rows(a.t.tenantId)).length, b: (await rows(b.t.tenantId)).length };
    // a's events commit first; then a tenant id the uuid column refuses (SQLSTATE 22P02), then b's.
    for (const n of [1, 2])
      app.ctx.audit.record({
        tenantId: a.t.tenantId,
        actor: 'test',
        action: `probe.batch-a-${n}`,
        outcome: 'success',
      });
    app.ctx.audit.record({
      tenantId: 'not-a-tenant',
      actor: 'test',
      action: 'probe.refused',
      outcome: 'success',
    });
    app.ctx.audit.record({
      tenantId: b.t.tenantId,
      actor: 'test',
      action: 'probe.batch-b',
      outcome: 'success',
    });
    await app.ctx.audit.flush();
    expect((await rows(a.t.tenantId)).length).toBe(before.a + 2);
    expect((await rows(b.t.tenantId)).length).toBe(before.b + 1);
    for (const s of [a, b]) {
      expect(await doubles(s.t.tenantId)).toEqual({ seq: 0, content: 0 });
      expect(await verify(s)).toMatchObject({ valid: true });
    }
    expect(app.logText()).toMatch(/"action":"probe.refused".*the database refused an audit event/);
    expect(app.ctx.audit.pending()).toBe(0);
  });

  it('when runtime events are tallied, then they wait for their one-second window while single events are written within ~100 ms, and the window is one chained event with the count', async () => {
    const writer = createAuditLog(app.ctx.db, app.ctx.logger);
    try {
      const tenantId = a.t.tenantId;
      const tally = {
        tenantId,
        actor: 'workload:tally',
        action: 'crypto.encrypt',
        outcome: 'success',
      } as const;
      const tallied = async () =>
        (await rows(tenantId)).filter((r) => r.actor === 'workload:tally');
      for (let i = 0; i < 5; i += 1) writer.tally({ ...tally, target: 'k' });
      writer.record({ ...tally, action: 'key.rotate', target: 'single' });
      await sleep(400);
      expect((await tallied()).map((r) => r.action)).toEqual(['key.rotate']);
      for (let i = 0; i < 40 && (await tallied()).length < 2; i += 1) await sleep(50);
      const events = await tallied();
      expect(events.map((r) => [r.action, r.target, r.details.count])).toEqual([
        ['key.rotate', 'single', undefined],
        ['crypto.encrypt', 'k', 5],
      ]);
      expect(await verify(a)).toMatchObject({ valid: true });
    } finally {
      await writer.close();
    }
  });

  describe('while the database is unreachable', () => {
    it('when events arrive steadily, then they are written about once per window, not in a transaction each as the previous one commits', async () => {
      let transactions = 0;
      const counting = new Proxy(app.ctx.db, {
        get(target, prop, receiver) {
          if (prop !== 'transaction') return Reflect.get(target, prop, receiver);
          return (work: (trx: Knex.Transaction) => Promise<unknown>) => {
            transactions += 1;
            // A slow commit, as on a loaded database: events keep coming while it writes.
            return target.transaction(async (trx) => {
              const r = await work(trx);
              await sleep(30);
              return r;
            });
          };
        },
      });
      const writer = createAuditLog(counting, app.ctx.logger);
      const tenantId = a.t.tenantId;
      const actor = 'workload:steady';
      try {
        const started = Date.now();
        let sent = 0;
        while (Date.now() - started < 800) {
          writer.record({ tenantId, actor, action: 'probe.steady', outcome: 'success' });
          sent += 1;
          await sleep(3);
        }
        await writer.flush();
        const written = (await rows(tenantId)).filter((r) => r.actor === actor);
        expect(written).toHaveLength(sent);
        // 800 ms of events in 100 ms windows, and the last flush: about nine; back to back, each
        // transaction taking 30 ms, it was over twenty.
        expect(transactions).toBeLessThanOrEqual(12);
        expect(await verify(a)).toMatchObject({ valid: true });
      } finally {
        await writer.close();
      }
    });
    let writer: AuditLog;
    let fault: ReturnType<typeof faultyDb>;
    let real: AuditLog;
    let d: Side;
    beforeAll(async () => {
      // d may verify its chain but not read events: each events request is a denied access, audited in d.
      d = await side('audit-d', ['audit.verify']);
      fault = faultyDb(app.ctx.db);
      real = app.ctx.audit;
      await real.flush();
      writer = createAuditLog(fault.db, app.ctx.logger, { retryMinMs: 50, retryMaxMs: 400 });
      app.ctx.audit = writer;
    });
    afterAll(async () => {
      await writer.close();
      app.ctx.audit = real;
    });
    const denied = async () =>
      (await rows(d.t.tenantId)).filter((r) => r.action === 'access' && r.outcome === 'denied')
        .length;

    it('when writes fail for two seconds, then the events raised meanwhile are all written afterwards, exactly once, without anyone flushing', async () => {
      fault.state.down = true;
      for (let i = 0; i < 5; i += 1) {
        expect((await api(app, 'GET', '/api/v3/audit/events', d.core)).status).toBe(403);
        await sleep(400);
      }
      await writer.flush(); // resolves during the outage, keeping the events
      expect(await denied()).toBe(0);
      fault.state.down = false;
      for (let i = 0; i < 40 && (await denied()) < 5; i += 1) await sleep(50);
      expect(await denied()).toBe(5);
      expect(writer.pending()).toBe(0);
      expect(await doubles(d.t.tenantId)).toEqual({ seq: 0, content: 0 });
      expect(await verify(d)).toMatchObject({ valid: true });
      expect(app.logText()).toMatch(
        /audit events cannot be written; keeping them in memory and retrying/,
      );
      expect(app.logText()).toMatch(/audit log writing again/);
    });

    it('when a commit reaches the database but its acknowledgement is lost, then the retry does not append the events again', async () => {
      const before = (await rows(d.t.tenantId)).length;
      fault.state.lostAcks = 1;
      for (const n of [1, 2, 3])
        writer.record({
          tenantId: d.t.tenantId,
          actor: 'test',
          action: `probe.ack-${n}`,
          outcome: 'success',
        });
      await writer.flush();
      expect(fault.state.lostAcks).toBe(0);
      await writer.flush();
      expect((await rows(d.t.tenantId)).length).toBe(before + 3);
      expect(await doubles(d.t.tenantId)).toEqual({ seq: 0, content: 0 });
      expect(writer.pending()).toBe(0);
    });

    it('when more events arrive than the memory bound holds, then the excess is counted in an audit.events-lost event and the log says so', async () => {
      const bounded = createAuditLog(fault.db, app.ctx.logger, {
        maxPending: 3,
        retryMinMs: 50,
        retryMaxMs: 100,
      });
      try {
        fault.state.down = true;
        for (let n = 1; n <= 5; n += 1)
          bounded.record({
            tenantId: d.t.tenantId,
            actor: 'test',
            action: `probe.bound-${n}`,
            outcome: 'success',
          });
        await bounded.flush();
        fault.state.down = false;
        await bounded.flush();
        const written = (await rows(d.t.tenantId)).filter((r) =>
          /^probe\.bound-|^audit\.events-lost$/.test(r.action),
        );
        expect(written.map((r) => r.action)).toEqual([
          'probe.bound-1',
          'probe.bound-2',
          'probe.bound-3',
          LOST_ACTION,
        ]);
        expect(written[3].details).toMatchObject({ count: 2 });
        expect(app.logText()).toMatch(/audit buffer full/);
        expect(await verify(d)).toMatchObject({ valid: true });
      } finally {
        await bounded.close();
      }
    });
  });

  it('when the newest events of a tenant are deleted, then verify reports truncation against the head that GET /head showed before', async () => {
    const c = await side('audit-c', AUDIT);
    for (const n of [1, 2, 3, 4])
      app.ctx.audit.record({
        tenantId: c.t.tenantId,
        actor: 'test',
        action: `probe.tail-${n}`,
        outcome: 'success',
      });
    const head = await api(app, 'GET', '/api/v3/audit/head', c.core);
    expect(head.status).toBe(200);
    const last = (await rows(c.t.tenantId)).at(-1);
    expect(head.body).toEqual({
      tenantId: c.t.tenantId,
      seq: Number(last.seq),
      hash: last.hash,
      at: new Date(last.at).toISOString(),
    });
    expect(await verify(c)).toMatchObject({
      valid: true,
      toSeq: head.body.seq,
      head: { seq: head.body.seq, hash: head.body.hash },
    });

    const seq = head.body.seq as number;
    await app.ctx
      .db('audit_events')
      .where({ tenant_id: c.t.tenantId })
      .where('seq', '>', seq - 2)
      .delete();
    const after = await verify(c);
    expect(after).toMatchObject({
      valid: false,
      truncated: { expectedSeq: seq, foundSeq: seq - 2 },
      firstBroken: { seq: seq - 1 },
    });
    // A range that stops before the cut still verifies; one that reaches into it does not.
    expect(await verify(c, { toSeq: seq - 2 })).toMatchObject({ valid: true });
    expect(await verify(c, { toSeq: seq - 1 })).toMatchObject({
      valid: false,
      truncated: { expectedSeq: seq, foundSeq: seq - 2 },
    });
  });

  it('when a row is added past the recorded head, or the last row is rewritten with a consistent hash, then verify reports it', async () => {
    const e = await side('audit-e', AUDIT);
    for (const n of [1, 2])
      app.ctx.audit.record({
        tenantId: e.t.tenantId,
        actor: 'test',
        action: `probe.head-${n}`,
        outcome: 'success',
      });
    await app.ctx.audit.flush();
    const second = (await rows(e.t.tenantId)).at(-1);
    const { id: _id, ...copy } = second;
    await app.ctx
      .db('audit_events')
      .insert({ ...copy, seq: Number(second.seq) + 1, details: JSON.stringify(second.details) });
    expect(await verify(e)).toMatchObject({
      valid: false,
      firstBroken: {
        seq: Number(second.seq) + 1,
        reason: expect.stringMatching(/beyond the recorded head/),
      },
    });
    await app.ctx
      .db('audit_events')
      .where({ tenant_id: e.t.tenantId, seq: Number(second.seq) + 1 })
      .delete();
    await app.ctx
      .db('audit_heads')
      .where({ tenant_id: e.t.tenantId })
      .update({ hash: 'f'.repeat(64) });
    expect(await verify(e)).toMatchObject({
      valid: false,
      firstBroken: {
        seq: Number(second.seq),
        reason: 'the last event does not match the recorded head',
      },
    });
  });

  it('when the head is asked for without audit.verify, then 403', async () => {
    const reader = await side('audit-reader', ['audit.events.read']);
    expect((await api(app, 'GET', '/api/v3/audit/head', reader.core)).status).toBe(403);
  });

  it('when an events time bound is out of range, malformed, empty or repeated, then 400 naming it; years 0001 and 9999 are accepted', async () => {
    const get = (query: string) => api(app, 'GET', `/api/v3/audit/events?${query}`, a.core);
    const bad = [
      'from=0000-01-01',
      `from=${encodeURIComponent('+275760-09-13')}`,
      'from=9999-99-99',
      'from=2026-02-30',
      'from=',
      'from[]=x',
      'from=2026-01-01&from=2026-01-02',
      'to=2026-01-01T10:00',
      'to=2026-01-01T24:00:00Z',
      'to=1',
      `to=${encodeURIComponent('10000-01-01T00:00:00Z')}`,
      `from=${encodeURIComponent('0001-01-01T00:00:00+01:00')}`,
      'limit=0',
      'limit=abc',
      'cursor[]=x',
    ];
    for (const q of bad) {
      const r = await get(q);
      expect([q, r.status, r.body.type]).toEqual([
        q,
        400,
        expect.stringMatching(/validation-failed$/),
      ]);
    }
    const all = await get('from=0001-01-01&limit=1000');
    expect([all.status, (all.body.items as unknown[]).length > 0]).toEqual([200, true]);
    expect(
      (await get(`to=${encodeURIComponent('9999-12-31T23:59:59.999Z')}&limit=1000`)).body.items,
    ).toHaveLength((all.body.items as unknown[]).length);
    expect((await get('to=0001-01-02')).body.items).toEqual([]);
    expect((await get(`from=${encodeURIComponent('2000-01-01T00:00:00+01:00')}`)).status).toBe(200);
  });

  it('when a verify range is not positive integers, or an events outcome is none of success, failure, denied, then 400 naming it', async () => {
    for (const body of [
      { toSeq: 0 },
      { fromSeq: 0 },
      { fromSeq: 1.5 },
      { toSeq: '3' },
      { from: 1 },
    ]) {
      const r = await api(app, 'POST', '/api/v3/audit/verify', a.core, body);
      expect([body, r.status, r.body.field]).toEqual([body, 400, Object.keys(body)[0]]);
    }
    const r = await api(app, 'GET', '/api/v3/audit/events?outcome=bogus', a.core);
    expect([r.status, r.body.field]).toEqual([400, 'outcome']);
  });
});
