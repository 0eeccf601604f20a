import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { makeTenant, postForm, type TestTenant } from '../../../support/auth.ts';
import { loadConfig } from '../../../shared/config/index.ts';
import { smtpOptions } from '../../../api/services/auth/smtp-mailer.ts';

/** A mail as the local SMTP server received it. */
interface Received {
  from: string;
  to: string[];
  data: string;
}

/** An SMTP server on loopback that keeps what it receives (no TLS, no login). */
async function startSmtp(): Promise<{
  port: number;
  received: Received[];
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          data: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return { port, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The reset token of a mail body (quoted-printable may wrap long lines). */
const tokenOf = (data: string) =>
  /token=([\w-]+)/.exec(data.replace(/=\r?\n/g, '').replace(/=3D/g, '='))![1];

describe(`password-reset mail over SMTP (${TEST_ENGINE})`, () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    smtp = await startSmtp();
    app = await startTestApp({
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(smtp.port),
      SMTP_TLS: 'off',
      SMTP_FROM: 'Keyward <noreply@keyward.test>',
    });
    t = await makeTenant(app, ['crypto.keys.read']);
  });
  afterAll(async () => {
    await app.stop();
    await smtp.close();
  });

  it('when a reset is requested with SMTP configured, then 202, the mail arrives with the link and the outbox stays empty', async () => {
    const r = await postForm(app, '/api/v3/auth/password/forgot', {
      email: t.userEmail,
      tenant_id: t.tenantId,
    });
    expect(r.status).toBe(202);
    await app.ctx.background.idle(); // the mail goes out after the answer
    expect(smtp.received).toHaveLength(1);
    const [mail] = smtp.received;
    expect(mail.from).toBe('noreply@keyward.test');
    expect(mail.to).toEqual([t.userEmail]);
    expect(mail.data).toContain('Subject: Keyward password reset');
    expect(mail.data.replace(/=\r?\n/g, '')).toContain(
      `${app.config.publicBaseUrl}/api/v3/auth/password/reset`,
    );
    expect(await app.ctx.db('outbox')).toEqual([]);
    // The token works: the mail carried a real reset.
    const done = await postForm(app, '/api/v3/auth/password/reset', {
      token: tokenOf(mail.data),
      password: 'a passphrase sent by mail',
    });
    expect(done.status).toBe(200);
    expect(app.logText()).not.toContain(tokenOf(mail.data));
  });

  it('when the SMTP server is down, then the request still answers 202 and the mail goes to the outbox', async () => {
    await smtp.close();
    const r = await postForm(app, '/api/v3/auth/password/forgot', {
      email: t.userEmail,
      tenant_id: t.tenantId,
    });
    expect(r.status).toBe(202);
    await app.ctx.background.idle(); // the mail goes out after the answer
    const outbox = await app.ctx.db('outbox');
    expect(outbox.map((m) => m.recipient)).toEqual([t.userEmail]);
    expect(outbox[0].body).toContain('token=');
    expect(app.logText()).toContain('SMTP send failed; the mail goes to the outbox');
  });
});

describe('SMTP settings', () => {
  it('when neither SMTP_URL nor SMTP_HOST is set, then there is no transport (the outbox alone)', () => {
    expect(smtpOptions(loadConfig({}))).toBeNull();
  });

  it('when SMTP_HOST comes with a login, then STARTTLS is required and the certificate verified by default', () => {
    expect(
      smtpOptions(
        loadConfig({ SMTP_HOST: 'mail.example.com', SMTP_USER: 'kw', SMTP_PASSWORD: 'pw' }),
      ),
    ).toMatchObject({
      host: 'mail.example.com',
      port: 587,
      auth: { user: 'kw', pass: 'pw' },
      secure: false,
      requireTLS: true,
      ignoreTLS: false,
      tls: { rejectUnauthorized: true },
    });
  });

  it('when SMTP_TLS=implicit, then TLS from the first byte', () => {
    expect(
      smtpOptions(loadConfig({ SMTP_URL: 'smtp://mail.example.com:465', SMTP_TLS: 'implicit' })),
    ).toMatchObject({ url: 'smtp://mail.example.com:465', secure: true, requireTLS: false });
  });

  it('when SMTP_USER comes without SMTP_PASSWORD, or SMTP_URL with SMTP_HOST, then the start stops naming them', () => {
    expect(() => loadConfig({ SMTP_HOST: 'h', SMTP_USER: 'kw' })).toThrow('SMTP_PASSWORD');
    expect(() => loadConfig({ SMTP_HOST: 'h', SMTP_URL: 'smtp://h' })).toThrow(
      'SMTP_URL and SMTP_HOST',
    );
  });
});
