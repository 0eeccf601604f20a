/**
 * Forgot-password answers before it does anything about the account (for a
 * registered address the answer waited for the mail to be handed over, so known addresses were
 * slower in 30 of 30 paired requests). The order is shown by holding or gating the work that
 * comes after the answer, never by a clock.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { makeTenant, postForm, type TestTenant } from '../../../support/auth.ts';
import type { Mailer } from '../../../api/services/auth/password-reset.ts';

const FORGOT = '/api/v3/auth/password/forgot';

describe(`forgot-password answers first (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let t: TestTenant;
  let mailer: Mailer;
  beforeAll(async () => {
    app = await startTestApp();
    t = await makeTenant(app, ['admin.keys.read']);
    mailer = app.ctx.auth.mailer;
  }, 60_000);
  afterEach(async () => {
    await app.ctx.background.idle();
    app.ctx.auth.mailer = mailer;
  });
  afterAll(async () => {
    await app.stop();
  });

  const forgot = (email: string) => postForm(app, FORGOT, { email, tenant_id: t.tenantId });
  const resets = async () =>
    Number((await app.ctx.db('password_resets').count({ n: '*' }).first())!.n);
  const mailsTo = async (email: string) =>
    Number((await app.ctx.db('outbox').where('recipient', email).count({ n: '*' }).first())!.n);

  it('when a known and an unknown address ask, then both are answered before either account is looked up, and the same work is left for each', async () => {
    const held: Array<{ name: string; task: () => Promise<unknown> }> = [];
    const run = app.ctx.background.run;
    app.ctx.background.run = (name, task) => void held.push({ name, task });
    const resetsBefore = await resets();
    try {
      const known = await forgot(t.userEmail);
      const unknown = await forgot('ghost@nowhere.test');
      expect([known.status, unknown.status]).toEqual([202, 202]);
      expect(unknown.body).toEqual(known.body);
      // Nothing about either account has happened yet: no reset token, no mail.
      expect(await resets()).toBe(resetsBefore);
      expect(await mailsTo(t.userEmail)).toBe(0);
      expect(held.map((h) => h.name)).toEqual(['password reset mail', 'password reset mail']);
    } finally {
      app.ctx.background.run = run;
    }
    for (const h of held) await h.task();
    expect(await mailsTo(t.userEmail)).toBe(1);
    expect(await mailsTo('ghost@nowhere.test')).toBe(0);
  });

  it('when the mail server has not taken the mail yet, then the request is already answered, and the mail goes out afterwards', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    app.ctx.auth.mailer = {
      async send(mail) {
        order.push('send started');
        await gate;
        await mailer.send(mail);
        order.push('mail handed over');
      },
    };
    const before = await mailsTo(t.userEmail);
    const answer = await forgot(t.userEmail);
    order.push('answered');
    expect(answer.status).toBe(202);
    release();
    await app.ctx.background.idle();
    expect(order.indexOf('answered')).toBeLessThan(order.indexOf('mail handed over'));
    expect(await mailsTo(t.userEmail)).toBe(before + 1);
  }, 20_000);

  it('when sending the mail fails, then the answer is the same 202, the failure is logged and no rejection goes unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      app.ctx.auth.mailer = {
        send: async () => {
          throw new Error('the mail relay is on fire');
        },
      };
      const u = await makeTenant(app, ['admin.keys.read']);
      const r = await postForm(app, FORGOT, { email: u.userEmail, tenant_id: u.tenantId });
      expect(r.status).toBe(202);
      await app.ctx.background.idle();
      await new Promise((resolve) => setImmediate(resolve));
      expect(app.logText()).toContain('the mail relay is on fire');
      expect(app.logText()).toContain('password reset mail');
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
