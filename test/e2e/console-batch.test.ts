/**
 * The console's batch conversion in headless Chromium against the real queue: the API with
 * Redis and s3rver, one worker process (as the jobs tests run them: Postgres and Redis needed),
 * two `openssl cms -encrypt` files chosen in the page, uploaded and converted by one job whose
 * progress the page follows, then one result downloaded and opened with jose.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from '../../support/app.ts';
import { axeViolations, launchChromium, screenshot, type Browser } from '../support/browser.ts';
import { OpenSslDir, makeKey, type TestKey } from '../../support/fixtures/pkcs7.ts';
import { importKeystore } from '../../api/services/keys/import.ts';
import { openJwe, type Answer } from '../integration/migration/helpers.ts';
import {
  spawnWorker,
  startJobsEnv,
  type JobsEnv,
  type WorkerChild,
} from '../integration/jobs/harness.ts';
import { sleep } from '../support/time.ts';
import { cms } from '../../support/fixtures/cms.ts';

let env: JobsEnv;
let worker: WorkerChild;
let browser: Browser;
let page: Page;
let ssl: OpenSslDir;
let key: TestKey;
const contents = [randomBytes(30_000), randomBytes(50_000)];
const files: Buffer[] = [];

beforeAll(async () => {
  env = await startJobsEnv();
  worker = await spawnWorker(env.workerEnv());
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'batch-rsa', 'rsa-2048');
  await importKeystore(env.app.ctx, env.app.platformTenantId, {
    data: Buffer.concat([ssl.read(key.keyFile), ssl.read(key.certFile)]),
    kid: key.kid,
    usage: 'encrypt',
  });
  for (const [i, c] of contents.entries()) {
    ssl.write(`in-${i}.bin`, c);
    files.push(
      cms.encrypt(ssl, `in-${i}.bin`, {
        to: { recip: key },
        cipher: 'aes256',
        binary: true,
        outform: 'DER',
      }),
    );
  }
  browser = await launchChromium();
  page = browser.page;
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  ssl?.cleanup();
  await env?.close();
});

describe('the console runs a batch conversion through the queue', () => {
  it('when two CMS files are uploaded and converted as a batch, then the page follows the job to the end and a result opens with jose', async () => {
    await page.goto(`${env.app.url}/console`);
    await page.getByLabel('E-mail', { exact: true }).fill(ADMIN_EMAIL);
    await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
    await page.getByLabel('Tenant', { exact: true }).fill(env.app.platformTenantId);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Migration' })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Migration' }).waitFor();

    await page.getByLabel('CMS files for the batch', { exact: true }).setInputFiles(
      files.map((buffer, i) => ({
        name: `invoice-${i}.p7m`,
        mimeType: 'application/pkcs7-mime',
        buffer,
      })),
    );
    await page.getByRole('button', { name: 'Upload and convert' }).click();
    const line = page.locator('#batch-line');
    await line.waitFor();
    // Polled from here: waitForFunction with a string evaluates it in the page, which the CSP forbids.
    const deadline = Date.now() + 60_000;
    while (!/: (completed|failed|cancelled),/.test(await line.innerText())) {
      if (Date.now() > deadline) throw new Error(`the job did not end: ${await line.innerText()}`);
      await sleep(200);
    }
    expect(await line.innerText()).toMatch(/: completed, 2 done, 0 failed of 2\./);
    const progress = 'document.querySelector(\'progress[aria-label="Job progress"]\')';
    expect(await page.evaluate(`[${progress}.value, ${progress}.max]`)).toEqual([2, 2]);
    const rows = page.getByRole('table', { name: 'Converted files' }).locator('tbody tr');
    expect(await rows.count()).toBe(2);

    const violations = await axeViolations(page);
    await screenshot(page, 'batch-completed');
    console.log(`axe-core on the completed batch: ${violations.length} violation(s)`);
    expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      rows
        .first()
        .getByRole('button', { name: /^Download/ })
        .click(),
    ]);
    // The body as the job stored it: the format keyward open reads too.
    expect(download.suggestedFilename()).toMatch(/^invoice-\d\.jwe$/);
    const saved = readFileSync(await download.path());
    const boundary = /^--([^\r\n]+)\r\n/.exec(saved.toString('latin1', 0, 100))![1];
    const answer = {
      body: saved,
      headers: new Headers({ 'content-type': `multipart/mixed; boundary="${boundary}"` }),
    } as unknown as Answer;
    const opened = await openJwe(answer, key.privateKey);
    const index = Number(/invoice-(\d)/.exec(download.suggestedFilename())![1]);
    expect(opened.plaintext.equals(contents[index])).toBe(true);
  });
});
