/**
 * The password-reset mail over SMTP (nodemailer), with the outbox table as the fallback: when
 * no SMTP server is configured, or the server refuses or cannot be reached, the mail is written
 * to the outbox (docs/configuration.md, "Password-reset mail") and the request answers as it would have.
 */
import type { SMTPTransportOptions } from 'nodemailer/lib/smtp-transport';
import type { Config } from '../../../shared/config/index.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { Mailer } from './password-reset.ts';

// Bounds a dead or silent server: the reset request waits for the send before it answers.
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };

/** The nodemailer transport options of the SMTP_* settings, or null when no server is set. */
export function smtpOptions(config: Config): SMTPTransportOptions | null {
  if (!config.smtpUrl && !config.smtpHost) return null;
  const tls = {
    secure: config.smtpTls === 'implicit',
    requireTLS: config.smtpTls === 'starttls',
    ignoreTLS: config.smtpTls === 'off',
    tls: { rejectUnauthorized: config.smtpTlsVerify },
  };
  // A URL's own settings (smtps://, ?secure=) win over these, as nodemailer merges them.
  if (config.smtpUrl) return { url: config.smtpUrl, ...tls, ...TIMEOUTS };
  return {
    host: config.smtpHost,
    port: config.smtpPort,
    ...(config.smtpUser ? { auth: { user: config.smtpUser, pass: config.smtpPassword } } : {}),
    ...tls,
    ...TIMEOUTS,
  };
}

/** Sends through SMTP; a failed send goes to `fallback` (the outbox) and is logged without the body. */
export function smtpMailer(
  options: SMTPTransportOptions,
  from: string,
  fallback: Mailer,
  logger: Logger,
): Mailer {
  // nodemailer (about 5 MB of heap) loads only where an SMTP server is configured: the embedded
  // default never pays for it (the API's RSS).
  const transport = import('nodemailer').then(({ createTransport }) => createTransport(options));
  transport.catch(() => {}); // a failure surfaces in send, which falls back to the outbox
  return {
    async send(mail) {
      try {
        await (
          await transport
        ).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.body });
        logger.info({ to: mail.to, subject: mail.subject }, 'mail sent over SMTP');
      } catch (err) {
        logger.warn(
          { to: mail.to, err: (err as Error).message },
          'SMTP send failed; the mail goes to the outbox',
        );
        await fallback.send(mail);
      }
    },
  };
}
