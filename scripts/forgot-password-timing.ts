/**
 * Forgot-password timing, known against unknown addresses: an in-process API with
 * an instant local SMTP server, PAIRS pairs of requests (each pair from a loopback address of its
 * own, the order alternating, each known address asked once so its mail budget never runs out),
 * and the median wall time of each kind. Run: node scripts/forgot-password-timing.ts [PAIRS].
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startTestApp } from '../support/app.ts';
import { makeTenant, postFormFrom } from '../support/auth.ts';
import { createUser } from '../api/services/admin/users.ts';

const PAIRS = Number(process.argv[2] ?? 30);
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  onData(stream, _session, callback) {
    stream.resume();
    stream.on('end', () => callback());
  },
});
smtp.listen(0, '127.0.0.1');
await once(smtp.server, 'listening');
const app = await startTestApp({
  SMTP_HOST: '127.0.0.1',
  SMTP_PORT: String((smtp.server.address() as AddressInfo).port),
  SMTP_TLS: 'off',
  LOG_LEVEL: 'warn',
});
const t = await makeTenant(app, ['admin.keys.read']);
const known: string[] = [];
for (let i = 0; i < PAIRS; i += 1) {
  const email = `known-${i}@timing.test`;
  await createUser(app.ctx, t.tenantId, {
    email,
    password: 'a long enough password',
    roleId: t.roleId,
  });
  known.push(email);
}
const timed = async (from: string, email: string) => {
  const start = performance.now();
  const r = await postFormFrom(app, from, '/api/v3/auth/password/forgot', {
    email,
    tenant_id: t.tenantId,
  });
  if (r.status !== 202) throw new Error(`forgot answered ${r.status}`);
  return performance.now() - start;
};
// One warm-up pair: the first requests pay for lazy loading.
await timed('127.0.9.1', `warm-known@timing.test`);
const knownMs: number[] = [];
const unknownMs: number[] = [];
let knownSlower = 0;
for (let i = 0; i < PAIRS; i += 1) {
  const from = `127.0.10.${i + 1}`;
  const ghost = `ghost-${i}@timing.test`;
  let k: number;
  let u: number;
  if (i % 2 === 0) {
    k = await timed(from, known[i]);
    u = await timed(from, ghost);
  } else {
    u = await timed(from, ghost);
    k = await timed(from, known[i]);
  }
  knownMs.push(k);
  unknownMs.push(u);
  if (k > u) knownSlower += 1;
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
await app.ctx.audit.flush();
await app.stop();
await new Promise<void>((r) => smtp.close(() => r()));
process.stdout.write(
  `forgot-password, ${PAIRS} pairs: median known ${median(knownMs).toFixed(2)} ms, ` +
    `unknown ${median(unknownMs).toFixed(2)} ms; known slower in ${knownSlower} of ${PAIRS}\n`,
);
