/**
 * The web console in a real browser (headless Chromium, playwright-core): the bootstrap
 * administrator signs in, creates a tenant and acts in it, creates a role, a workload (its
 * secret shown once, and how it connects to each API), a key, rotates and suspends it, reads and verifies the audit chain,
 * imports a key and converts an `openssl cms -encrypt` file with it (the download checked with
 * jose), sets the tenant's Vault Transit mounts, and signs out, which revokes every token the page held. Each page is checked with
 * axe-core and photographed into test-results/console/ (git-ignored).
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startTestApp, type TestApp } from '../../support/app.ts';
import {
  SCREENSHOTS,
  axeViolations,
  launchChromium,
  screenshot,
  type AxeViolation,
  type Browser,
} from '../support/browser.ts';
import { OpenSslDir, makeKey, type TestKey } from '../../support/fixtures/pkcs7.ts';
import { adminToken, api } from '../../support/auth.ts';
import { openJwe, type Answer } from '../integration/migration/helpers.ts';
import { runKeywardCli } from '../integration/jobs/harness.ts';
import { expectEventually } from '../support/time.ts';
import { cms } from '../../support/fixtures/cms.ts';

let app: TestApp;
let browser: Browser;
let page: Page;
let ssl: OpenSslDir;
let archiveKey: TestKey;
let plaintext: Buffer;
let invoice: Buffer;

/** Every bearer token the page sent, every URL it asked for, and what went wrong in it. */
const bearers = new Set<string>();
const urls: string[] = [];
const cspViolations: string[] = [];
const browserLog: string[] = [];
const pageErrors: string[] = [];
const revokes: number[] = [];
const unauthorized: string[] = [];
let refreshes = 0;
const axeByPage = new Map<string, AxeViolation[]>();
const shots: string[] = [];

/** Waits until `check` holds (a rejection counts as not yet), polling; fails with `what` after 15 s. */
const until = (what: string, check: () => Promise<boolean>) =>
  expectEventually(
    async () => {
      if (!(await check().catch(() => false))) throw new Error(`timed out waiting for ${what}`);
    },
    { timeoutMs: 15_000, intervalMs: 100 },
  );

/** The text of the alert region, when a problem is shown. */
const alertText = async () =>
  (await page.locator('#alert').isVisible()) ? await page.locator('#alert').innerText() : '';

/** Checks the page with axe (no serious or critical violation) and photographs it. */
async function check(name: string): Promise<void> {
  const violations = await axeViolations(page);
  axeByPage.set(name, violations);
  shots.push(await screenshot(page, name));
  expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
}

/** Goes to a page by the navigation and waits until it has rendered. */
async function open(label: string, heading = label): Promise<void> {
  await page
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name: label, exact: true })
    .click();
  await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  // The router puts the focus on <main> once the page has rendered and its first load ended.
  await until(
    `${label} to load`,
    async () =>
      (await page.evaluate('document.activeElement.id')) === 'main' &&
      (await page.locator('[aria-busy="true"]').count()) === 0,
  );
}

/** The table row holding a cell with exactly this text. */
const row = (text: string) =>
  page.locator('tbody tr').filter({ has: page.getByRole('cell', { name: text, exact: true }) });

beforeAll(async () => {
  // A short human token lifetime, so the console's refresh (a minute before the end, at least 5 s after) runs during the test.
  app = await startTestApp({ HUMAN_TOKEN_TTL: '65' });
  // This file's screenshots are numbered; the batch test's (batch-*) are its own.
  if (existsSync(SCREENSHOTS))
    for (const f of readdirSync(SCREENSHOTS))
      if (/^\d.*\.png$/.test(f)) rmSync(join(SCREENSHOTS, f));
  ssl = new OpenSslDir();
  archiveKey = makeKey(ssl, 'archive-rsa', 'rsa-2048');
  plaintext = randomBytes(40_000);
  ssl.write('data.bin', plaintext);
  invoice = cms.encrypt(ssl, 'data.bin', {
    to: { recip: archiveKey },
    cipher: 'aes256',
    binary: true,
    outform: 'DER',
  });
  browser = await launchChromium();
  page = browser.page;
  page.on('request', (req) => {
    urls.push(req.url());
    const auth = req.headers().authorization;
    if (auth?.startsWith('Bearer ')) bearers.add(auth.slice(7));
    if (
      req.url().endsWith('/api/v3/auth/token') &&
      req.postData()?.includes('grant_type=refresh_token')
    )
      refreshes += 1;
  });
  page.on('response', (res) => {
    if (res.url().endsWith('/api/v3/auth/token/revoke')) revokes.push(res.status());
    if (res.status() === 401) unauthorized.push(res.url());
  });
  page.on('console', (msg) => {
    browserLog.push(msg.text());
    if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
  });
  page.on('pageerror', (err) => pageErrors.push(String(err)));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  ssl?.cleanup();
  await app?.stop();
  const summary = [...axeByPage].map(
    ([name, v]) =>
      `${name}: ${v.length} violation(s)${v.length ? ` (${v.map((x) => `${x.id}/${x.impact}`).join(', ')})` : ''}`,
  );
  console.log(
    `axe-core per page:\n  ${summary.join('\n  ')}\nscreenshots:\n  ${shots.join('\n  ')}`,
  );
});

describe('the web console in headless Chromium', () => {
  it('when /console is opened, then the sign-in page loads under a strict CSP from this origin only', async () => {
    const res = await page.goto(`${app.url}/console`);
    expect(res?.status()).toBe(200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    // The skip link is reachable by keyboard and outlined.
    // The form has the focus; the skip link is the one stop before it.
    await page.keyboard.press('Shift+Tab');
    expect(
      await page.evaluate(
        '[document.activeElement.textContent, getComputedStyle(document.activeElement).outlineStyle]',
      ),
    ).toEqual(['Skip to content', 'solid']);
    // The tenant field's pattern compiles (v flag: a literal - in a class must be escaped), so a
    // value that is not a UUID is flagged in the browser; before, every page logged "Pattern
    // attribute value [0-9a-fA-F-]{36} is not a valid regular expression" and nothing was checked.
    const tenantField = page.getByLabel('Tenant', { exact: true });
    await tenantField.fill('not-a-tenant-id');
    expect(
      await tenantField.evaluate(
        (el) =>
          (el as unknown as { validity: { patternMismatch: boolean } }).validity.patternMismatch,
      ),
    ).toBe(true);
    await tenantField.fill(app.platformTenantId);
    expect(
      await tenantField.evaluate(
        (el) => (el as unknown as { validity: { valid: boolean } }).validity.valid,
      ),
    ).toBe(true);
    await tenantField.fill('');
    expect(browserLog.filter((line) => /not a valid regular expression/i.test(line))).toEqual([]);
    await check('01-sign-in');
  });

  it('when the password is wrong, then the problem is shown and the form stays', async () => {
    await page.getByLabel('E-mail', { exact: true }).fill(ADMIN_EMAIL);
    await page.getByLabel('Password', { exact: true }).fill('not the password at all');
    await page.getByLabel('Tenant', { exact: true }).fill(app.platformTenantId);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await until('the refusal', async () => (await alertText()).length > 0);
    expect(await alertText()).toMatch(/Sign-in refused/);
    await check('02-sign-in-refused');
  });

  it('when the bootstrap administrator signs in, then the keys page of the platform tenant shows', async () => {
    await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    expect(await page.locator('#current-tenant').innerText()).toBeTruthy();
    // The header says who is signed in.
    expect(await page.locator('#signed-in-as').innerText()).toBe(ADMIN_EMAIL);
    expect(await page.getByLabel('Password', { exact: true }).count()).toBe(0);
  });

  it('when a tenant is created and chosen, then the console acts in it (token exchange)', async () => {
    await open('Tenants');
    await page.getByLabel('Tenant name').fill('acme-e2e');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await row('acme-e2e').waitFor();
    await page.getByLabel('Tenant name').fill('beta-e2e');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await row('beta-e2e').waitFor();
    await page.getByRole('button', { name: 'Suspend tenant beta-e2e' }).click();
    await until('suspended', async () => (await row('beta-e2e').innerText()).includes('suspended'));
    await check('03-tenants');
    await page.getByRole('button', { name: 'Resume tenant beta-e2e' }).click();
    await until('active', async () => (await row('beta-e2e').innerText()).includes('active'));
    await page.getByRole('button', { name: 'Act in this tenant acme-e2e' }).click();
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    await until(
      'the header to name acme-e2e',
      async () => (await page.locator('#current-tenant').innerText()) === 'acme-e2e',
    );
  });

  it('when a role is created with permissions picked by family, then it is listed with them, and editing it changes them', async () => {
    await open('Roles');
    await page.getByLabel('Role name').fill('app');
    const crypto = page.getByRole('group', { name: 'crypto', exact: true });
    await crypto.getByLabel('encrypt', { exact: true }).check();
    await crypto.getByLabel('decrypt', { exact: true }).check();
    await page
      .getByRole('group', { name: 'audit.events', exact: true })
      .getByLabel('read', { exact: true })
      .check();
    await page.getByRole('button', { name: 'Create role' }).click();
    await row('app').waitFor();
    expect(await row('app').innerText()).toContain('crypto.encrypt');

    // Editing fills the same picker with the role's permissions.
    await page.getByRole('button', { name: 'Edit app' }).click();
    await page.getByRole('heading', { name: 'Edit role app' }).waitFor();
    expect(await crypto.getByLabel('encrypt', { exact: true }).isChecked()).toBe(true);
    await crypto.getByLabel('sign', { exact: true }).check();
    await page.getByRole('button', { name: 'Save role' }).click();
    await until('the saved role', async () =>
      (await row('app').innerText()).includes('crypto.sign'),
    );

    await page.getByLabel('Role name').fill('auditor');
    await page
      .getByRole('group', { name: 'audit.events', exact: true })
      .getByLabel('read', { exact: true })
      .check();
    await page.getByRole('button', { name: 'Create role' }).click();
    await row('auditor').waitFor();
    await check('04-roles');
  });

  it('when a workload is created, then its secret is shown once with a warning and leaves the page when dismissed', async () => {
    await open('Workloads');
    await page.getByLabel('Workload name').fill('billing');
    await page.getByLabel('Role', { exact: true }).selectOption({ label: 'app' });
    await page.getByRole('button', { name: 'Create workload' }).click();
    const secretEl = page.locator('#client-secret');
    await secretEl.waitFor();
    const secret = await secretEl.innerText();
    const clientId = await row('billing').locator('code').innerText();
    expect(await page.getByText('Shown once.').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Copy secret' }).waitFor();
    // The new workload's Connect card: every API's address with its names, never its secret.
    const connect = await page.getByRole('region', { name: 'Connect billing' }).innerText();
    for (const text of [
      `POST ${app.url}/api/v3/auth/token`,
      `client_id=${clientId}`,
      `${app.url}/`,
      'keyward workloads access-keys create',
      'VAULT_ADDR',
      '/v1/transit/',
      `POST ${app.url}/v1/auth/approle/login`,
      `"role_id":"${clientId}"`,
      'secret_id its client secret',
    ])
      expect(connect).toContain(text);
    expect(connect).not.toContain(secret);
    await check('05-workload-secret');
    // The secret works: the workload gets a token with it.
    const token = await fetch(`${app.url}/api/v3/auth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: secret,
      }),
    });
    expect(token.status).toBe(200);
    await page.getByRole('button', { name: 'I stored it, hide the secret' }).click();
    expect(await page.locator('#client-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    urls.push(`secret:${secret}`); // checked against every URL below (as a marker, not a URL)
    await check('06-workloads');

    // A rotated secret is shown once too, and leaving the page takes it away.
    await page.getByRole('button', { name: 'Rotate secret of billing' }).click();
    await page.locator('#client-secret').waitFor();
    const rotated = await page.locator('#client-secret').innerText();
    expect(rotated).not.toBe(secret);
    urls.push(`secret:${rotated}`);
    await open('Keys');
    await open('Workloads');
    expect(await page.content()).not.toContain(rotated);

    await page.getByRole('button', { name: 'Disable billing' }).click();
    await until('disabled', async () => (await row('billing').innerText()).includes('disabled'));
    await page.getByRole('button', { name: 'Enable billing' }).click();
    await until('enabled', async () => (await row('billing').innerText()).includes('enabled'));
  });

  it('when a key is created, rotated and suspended, then the table shows each state; revoke asks for the kid', async () => {
    await open('Keys');
    await page.getByLabel('Kid', { exact: true }).fill('orders');
    await page.getByLabel('Key type').selectOption('aes-256');
    await page.getByLabel('Rotation period (days)').fill('90');
    await page.getByRole('button', { name: 'Create key' }).click();
    await row('orders').waitFor();
    const cells = () => row('orders').locator('td').allInnerTexts();
    expect((await cells()).slice(1, 5)).toEqual(['aes-256', 'encrypt', 'active', '1']);
    expect((await cells())[5]).not.toBe('—');
    await page.getByRole('button', { name: 'Rotate orders' }).click();
    await until('version 2', async () => (await cells())[4] === '2');
    await page.getByRole('button', { name: 'Suspend orders' }).click();
    await until('suspended', async () => (await cells())[3] === 'suspended');
    await page.getByRole('button', { name: 'Resume orders' }).waitFor();

    // Revoke needs the kid typed: the button stays disabled until it matches; cancelling does nothing.
    await page.getByRole('button', { name: 'Revoke orders' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const confirm = dialog.getByRole('button', { name: 'Revoke key' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Type orders to confirm').fill('order');
    expect(await confirm.isDisabled()).toBe(true);
    await check('07-keys-revoke-confirm');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await cells())[3]).toBe('suspended');

    // With the kid typed, revoke and then archive go through.
    await page.getByLabel('Kid', { exact: true }).fill('old-key');
    await page.getByRole('button', { name: 'Create key' }).click();
    await row('old-key').waitFor();
    const state = async () => (await row('old-key').locator('td').allInnerTexts())[3];
    const confirmWith = async (action: string) => {
      await page.getByRole('button', { name: `${action} old-key` }).click();
      await dialog.getByLabel('Type old-key to confirm').fill('old-key');
      await dialog.getByRole('button', { name: `${action} key` }).click();
    };
    await confirmWith('Revoke');
    await until('revoked', async () => (await state()) === 'revoked');
    await confirmWith('Archive');
    // Archived keys leave the default list; the state filter shows them.
    await until('archived', async () => (await row('old-key').count()) === 0);
    await page.getByLabel('State', { exact: true }).selectOption('archived');
    await until('the archived key', async () => (await state()) === 'archived');

    await page.getByLabel('State', { exact: true }).selectOption('active');
    await until('the filter to hide orders', async () => (await row('orders').count()) === 0);
    await page.getByLabel('State', { exact: true }).selectOption('');
    await row('orders').waitFor();
    await check('08-keys');
  });

  it("when a key's page is opened, then its versions and settings show", async () => {
    await page.getByRole('link', { name: 'orders', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Key orders' }).waitFor();
    await page.getByRole('table', { name: 'Versions of orders' }).waitFor();
    expect(
      await page.getByRole('table', { name: 'Versions of orders' }).locator('tbody tr').count(),
    ).toBe(2);
    await page.getByLabel('Description').fill('orders column');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await until(
      'saved',
      async () => (await page.locator('#status').innerText()) === 'Settings saved.',
    );
    await until('the record to show it', async () =>
      (await page.getByRole('region', { name: 'Record' }).innerText()).includes('orders column'),
    );
    await check('09-key');
  });

  it('when a keystore is imported, then its public key downloads as PEM equal to the original', async () => {
    await open('Keys');
    const pem = Buffer.concat([ssl.read(archiveKey.keyFile), ssl.read(archiveKey.certFile)]);
    await page
      .getByLabel('Keystore file (PKCS#12 or PEM)')
      .setInputFiles({ name: 'archive.pem', mimeType: 'application/x-pem-file', buffer: pem });
    await page.getByLabel('Kid of the imported key').fill('archive-rsa');
    await page.getByLabel('Usage of the imported key').selectOption('encrypt');
    await page.getByRole('button', { name: 'Import key' }).click();
    await row('archive-rsa').waitFor();
    await page.getByRole('link', { name: 'archive-rsa', exact: true }).click();
    // The version names its certificate (before: only "yes").
    const versions = page.getByRole('table', { name: 'Versions of archive-rsa' });
    await versions.waitFor();
    expect(await versions.locator('tbody tr').first().innerText()).toContain(
      'O=Keyward Tests,CN=archive-rsa',
    );
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download version 1 as PEM' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('archive-rsa-v1.pem');
    const got = readFileSync(await download.path(), 'utf8');
    expect(got).toBe(
      createPublicKey(archiveKey.privateKey).export({ type: 'spki', format: 'pem' }),
    );
    const [jwkDownload] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download version 1 as JWK' }).click(),
    ]);
    const jwk = JSON.parse(readFileSync(await jwkDownload.path(), 'utf8'));
    const expected = createPublicKey(archiveKey.privateKey).export({ format: 'jwk' });
    expect(jwk).toMatchObject({ kty: 'RSA', n: expected.n, e: expected.e, kid: 'archive-rsa#1' });
    expect(jwk.d).toBeUndefined();
  });

  it('when the audit page is opened, then the events show with filters, and "Verify chain" says the chain is valid', async () => {
    await open('Audit');
    // The first page holds the tenant's oldest events: the console's own work in it.
    const actions = await page.locator('tbody tr td:nth-child(4)').allInnerTexts();
    for (const action of [
      'tenant.created',
      'role.create',
      'workload.register',
      'key.create',
      'key.rotate',
    ])
      expect(actions).toContain(action);
    // Actors read as people and workloads, not bare ids: the administrator's e-mail.
    const actors = await page.locator('tbody tr td:nth-child(3)').allInnerTexts();
    expect(actors.some((a) => a.startsWith(ADMIN_EMAIL))).toBe(true);
    expect(actors.filter((a) => /^user:[0-9a-f-]{36}$/.test(a.trim()))).toEqual([]);
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await page.locator('#verdict-text').waitFor();
    expect(await page.locator('#verdict-text').innerText()).toMatch(
      /^Chain valid: \d+ events checked/,
    );
    await page.getByLabel('Outcome').selectOption('denied');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await until(
      'the filtered list',
      async () =>
        (await page.getByText('No events match these filters.').count()) === 1 ||
        (await page.locator('tbody tr td:nth-child(5)').allInnerTexts()).every(
          (o) => o === 'denied',
        ),
    );
    await check('10-audit');

    // A tampered event: the verdict names the first broken link.
    const tenantId = await page.locator('#current-tenant + code').innerText();
    const third = await app.ctx.db('audit_events').where({ tenant_id: tenantId, seq: 3 }).first();
    await app.ctx
      .db('audit_events')
      .where({ tenant_id: tenantId, seq: 3 })
      .update({ action: `${third.action}.tampered` });
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await until('the broken verdict', async () =>
      (await page.locator('#verdict-text').innerText()).startsWith('Chain broken'),
    );
    expect(await page.locator('#verdict').innerText()).toMatch(/First broken link: event 3: /);
    await check('10b-audit-broken-chain');
    await app.ctx
      .db('audit_events')
      .where({ tenant_id: tenantId, seq: 3 })
      .update({ action: third.action });
  });

  it('when a CMS file made by openssl cms -encrypt is analyzed and converted, then the analysis names the imported key and the download decrypts with jose', async () => {
    await open('Migration');
    await page
      .getByLabel('CMS file', { exact: true })
      .setInputFiles({ name: 'invoice.p7m', mimeType: 'application/pkcs7-mime', buffer: invoice });
    await page.getByRole('button', { name: 'Analyze' }).click();
    await page.getByRole('heading', { name: 'Analysis' }).waitFor();
    const analysis = await page.locator('#analysis').innerText();
    expect(analysis).toContain('envelopedData');
    expect(analysis).toMatch(/DER/);
    expect(analysis).toMatch(/aes256-CBC/i);
    expect(analysis).toContain('imported as archive-rsa');
    expect(analysis).toContain('rsaEncryption');
    await check('11-migration');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Convert and download' }).click(),
    ]);
    // Regression: the file kept MIME headers (invoice.jwe.mime), which keyward open refused; it
    // is now the body a job stores, opened by jose and by keyward open alike.
    expect(download.suggestedFilename()).toBe('invoice.jwe');
    const saved = readFileSync(await download.path());
    const boundary = /^--([^\r\n]+)\r\n/.exec(saved.toString('latin1', 0, 100))![1];
    const answer = {
      body: saved,
      headers: new Headers({ 'content-type': `multipart/mixed; boundary="${boundary}"` }),
    } as unknown as Answer;
    const opened = await openJwe(answer, archiveKey.privateKey);
    expect(opened.closed).toBe(true);
    expect(opened.plaintext.equals(plaintext)).toBe(true);
    const file = ssl.write('invoice.jwe', saved);
    const out = ssl.path('invoice.out');
    const cli = await runKeywardCli(
      ['open', file, '--key', ssl.path(archiveKey.keyFile), '--out', out],
      {},
    );
    expect([cli.code, cli.stderr]).toEqual([0, '']);
    expect(readFileSync(out).equals(plaintext)).toBe(true);
  });

  it('when an S/MIME .eml is analyzed, then the container says S/MIME, not DER', async () => {
    // Regression: the Container line showed the CMS encoding (DER) whatever the archive form.
    ssl.write('note.txt', Buffer.from('a short archived note\n'));
    const eml = cms.encrypt(ssl, 'note.txt', { to: archiveKey, cipher: 'aes256' });
    await page
      .getByLabel('CMS file', { exact: true })
      .setInputFiles({ name: 'note.eml', mimeType: 'message/rfc822', buffer: eml });
    await page.getByRole('button', { name: 'Analyze' }).click();
    await until('the S/MIME analysis', async () =>
      (await page.locator('#analysis').innerText()).includes('S/MIME'),
    );
    const facts = await page.locator('#analysis dl').innerText();
    expect(facts).toMatch(/Container\s+S\/MIME, CMS in DER/);
  });

  it('when metadata is filled in, then convert sends it; a failure after a success leaves no stale success notice', async () => {
    await page
      .getByLabel('CMS file', { exact: true })
      .setInputFiles({ name: 'invoice.p7m', mimeType: 'application/pkcs7-mime', buffer: invoice });
    // Regression: the page had no metadata fields, and always sent {}.
    await page.getByLabel('Target kids (targetKid)').fill('archive-rsa');
    await page.getByLabel('Signer check (verify)').selectOption('chain');
    // The metadata part as the page hands it to fetch (a multipart body with a file has no
    // postData for the browser's request events).
    await page.evaluate(`{
      const send = window.fetch;
      window.sentMetadata = [];
      window.fetch = (url, opts) => {
        if (opts?.body instanceof FormData) window.sentMetadata.push(opts.body.get('metadata'));
        return send(url, opts);
      };
    }`);
    await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Convert and download' }).click(),
    ]);
    expect(await page.evaluate('window.sentMetadata')).toEqual([
      '{"targetKid":"archive-rsa","verify":"chain"}',
    ]);
    await until('the success notice', async () =>
      (await page.locator('#status').innerText()).startsWith('Converted invoice.p7m'),
    );
    // Regression: the success notice stayed beside the next failure's problem.
    await page.getByLabel('Target kids (targetKid)').fill('archive-rsa, nobody-here');
    await page.getByRole('button', { name: 'Convert and download' }).click();
    await until('the problem', async () => (await alertText()).length > 0);
    expect(await page.locator('#alert .problem-detail').innerText()).toContain('nobody-here');
    expect(await page.locator('#status').innerText()).toBe('');
    await check('11b-migration-metadata-problem');
    // And the other way round: a success takes the earlier failure's problem away.
    await page.getByLabel('Target kids (targetKid)').fill('');
    await page.getByLabel('Signer check (verify)').selectOption('');
    await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Convert and download' }).click(),
    ]);
    await until('the problem to go', async () => !(await page.locator('#alert').isVisible()));
    expect(await page.evaluate('window.sentMetadata.at(-1)')).toBe('{}');
  });

  it('when a batch is started without the queue, then the problem of the service is shown, not a blank page', async () => {
    await page
      .getByLabel('CMS files for the batch', { exact: true })
      .setInputFiles({ name: 'invoice.p7m', mimeType: 'application/pkcs7-mime', buffer: invoice });
    await page.getByRole('button', { name: 'Upload and convert' }).click();
    await until('the problem', async () => (await alertText()).length > 0);
    // The test app runs without REDIS_URL: the jobs API answers 503 queue-unavailable.
    // The problem's title, then its detail, as the service wrote them.
    expect(await page.locator('#alert .problem-title').innerText()).toBe('Queue Unavailable');
    expect(await page.locator('#alert .problem-detail').innerText()).toMatch(/\S/);
    expect(await page.getByRole('heading', { level: 1, name: 'Migration' }).isVisible()).toBe(true);
    await check('12-migration-batch-problem');
  });

  it('when a tenant has more keys than a page, then the list pages forward and back with the cursors', async () => {
    const root = await adminToken(app);
    const tenantId = await page.locator('#current-tenant + code').innerText();
    for (let i = 0; i < 22; i += 1) {
      const res = await api(app, 'POST', `/api/v3/admin/tenants/${tenantId}/keys`, root, {
        type: 'aes-128',
        kid: `bulk-${String(i).padStart(2, '0')}`,
      });
      expect(res.status).toBe(201);
    }
    await open('Keys');
    const rows = page.getByRole('table', { name: 'Keys of this tenant' }).locator('tbody tr');
    expect(await rows.count()).toBe(20);
    const first = await rows.first().locator('td').first().innerText();
    await page.getByRole('button', { name: 'Next page' }).click();
    await until('the second page', async () => (await rows.count()) === 4);
    expect(await page.getByRole('button', { name: 'Next page' }).isHidden()).toBe(true);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await until('the first page again', async () => (await rows.count()) === 20);
    expect(await rows.first().locator('td').first().innerText()).toBe(first);
  });

  it('when a bulk operation is previewed, then the dry run lists the keys, and running it uses that count', async () => {
    await open('Bulk operations', 'Bulk key operations');
    await page.getByLabel('Operation').selectOption('resume');
    await page.getByLabel('Kid prefix').fill('ord');
    await page.getByRole('button', { name: 'Preview (dry run)' }).click();
    await page.locator('#preview-count').waitFor();
    expect(await page.locator('#preview-count').innerText()).toBe('resume would touch 1 key(s).');
    await check('13-bulk-preview');
    await page.getByRole('button', { name: 'Run resume on 1 key(s)' }).click();
    await page.locator('#outcome-text').waitFor();
    expect(await page.locator('#outcome-text').innerText()).toBe('1 of 1 key(s) done.');
    expect(await row('orders').innerText()).toContain('active');
  });

  it('when a key is offered to another tenant, then the exchange is listed as outgoing and pending', async () => {
    await open('Exchanges', 'Cryptographic exchanges');
    await page.getByLabel('Kid to offer').fill('archive-rsa');
    await page.getByLabel('Receiving tenant id').fill(app.platformTenantId);
    await page.getByRole('button', { name: 'Offer key' }).click();
    await row('archive-rsa').waitFor();
    expect(await row('archive-rsa').innerText()).toMatch(/outgoing[\s\S]*pending/);
    await check('14-exchanges');
  });

  it('when the policy overrides are saved, then the effective policy shows them', async () => {
    await open('Policies');
    await page.getByLabel('Rotation period (days)').fill('30');
    await page.getByRole('button', { name: 'Save overrides' }).click();
    await until(
      'saved',
      async () => (await page.locator('#status').innerText()) === 'Overrides saved.',
    );
    expect(await page.getByRole('region', { name: 'Effective policy' }).innerText()).toContain(
      '30 days',
    );
    await check('15-policies');

    // A reserved Transit mount is refused with the problem's words; nothing is saved.
    await page.getByLabel('Vault Transit mounts').fill('auth');
    await page.getByRole('button', { name: 'Save overrides' }).click();
    await until('the refusal', async () => (await alertText()).includes('reserves'));
    // The tenant's own mounts: the policy shows them, and a workload's Connect card names them.
    await page.getByLabel('Vault Transit mounts').fill('sops, transit');
    await page.getByRole('button', { name: 'Save overrides' }).click();
    await until('the mounts', async () =>
      (await page.getByRole('region', { name: 'Effective policy' }).innerText()).includes(
        '/v1/sops/, /v1/transit/',
      ),
    );
    expect(await page.getByRole('region', { name: 'Effective policy' }).innerText()).toContain(
      '30 days',
    );
    await open('Workloads');
    await page.getByRole('button', { name: 'Connect billing' }).click();
    const connect = page.getByRole('region', { name: 'Connect billing' });
    await connect.waitFor();
    expect(await connect.innerText()).toContain('/v1/sops/keys/<key name>');
    await check('15b-workload-connect');
  });

  it('when a user is created with a role, then it is listed, its role can change and it can be disabled', async () => {
    await open('Users');
    await page.getByLabel('User e-mail').fill('ops@acme.test');
    await page.getByLabel('Initial password').fill('a long enough password');
    await page.getByLabel('Role', { exact: true }).selectOption({ label: 'app' });
    await page.getByRole('button', { name: 'Create user' }).click();
    await row('ops@acme.test').waitFor();
    await page
      .getByLabel('Role of ops@acme.test', { exact: true })
      .selectOption({ label: 'auditor' });
    await page.getByRole('button', { name: 'Change role of ops@acme.test' }).click();
    await until('the new role', async () =>
      (await page.locator('#status').innerText()).includes('now has the role auditor'),
    );
    await page.getByRole('button', { name: 'Disable ops@acme.test' }).click();
    await until('disabled', async () =>
      (await row('ops@acme.test').innerText()).includes('disabled'),
    );
    await check('16-users');
  });

  it('when the window is 390 px wide, then the pages fit without sideways scrolling and pass axe', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [label, name] of [
      ['Keys', '17-keys-390px'],
      ['Migration', '18-migration-390px'],
      ['Audit', '19-audit-390px'],
    ]) {
      await open(label);
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await check(name);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('when the keyboard is used, then the navigation works with Enter and the focus is visible', async () => {
    await page.getByRole('link', { name: 'Workloads', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Workloads' }).waitFor();
    // The new page has the focus on its main region; Tab reaches its first control, outlined.
    await until(
      'the focus on main',
      async () => (await page.evaluate('document.activeElement.id')) === 'main',
    );
    await page.keyboard.press('Tab');
    const focused = (await page.evaluate(
      '[document.activeElement.tagName, getComputedStyle(document.activeElement).outlineStyle, document.activeElement.closest("main") !== null]',
    )) as [string, string, boolean];
    expect(focused[1]).toBe('solid');
    expect(focused[2]).toBe(true);
  });

  it('when the person signs out, then every token the page held is revoked and nothing was kept in storage or URLs', async () => {
    expect(await page.evaluate('localStorage.length + sessionStorage.length')).toBe(0);
    expect(await page.evaluate('document.cookie')).toBe('');
    // The tokens were renewed before their end: no call of the session was ever refused as unauthenticated.
    expect(refreshes).toBeGreaterThan(0);
    expect(unauthorized).toEqual([]);
    // Some token of the page still works before sign-out (a delegated one is refused 403 here, not 401).
    const statusOf = async (token: string) =>
      (
        await fetch(`${app.url}/api/v3/admin/platform/tenants`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).status;
    const before = await Promise.all([...bearers].map(statusOf));
    expect(before).toContain(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(revokes.length).toBeGreaterThanOrEqual(2);
    expect(revokes.every((s) => s === 200)).toBe(true);
    await check('20-signed-out');
    expect(bearers.size).toBeGreaterThan(1);
    expect(await Promise.all([...bearers].map(statusOf))).toEqual([...bearers].map(() => 401));
    const secrets = [
      ADMIN_PASSWORD,
      'a long enough password',
      ...bearers,
      ...urls.filter((u) => u.startsWith('secret:')).map((u) => u.slice(7)),
    ];
    const requested = urls.filter((u) => !u.startsWith('secret:'));
    for (const s of secrets) {
      expect(requested.filter((u) => u.includes(s) || u.includes(encodeURIComponent(s)))).toEqual(
        [],
      );
      expect(app.logText()).not.toContain(s);
      expect(browserLog.filter((line) => line.includes(s))).toEqual([]);
    }
    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
