/**
 * Headless Chromium for the console's end-to-end tests: Debian's /usr/bin/chromium driven by
 * playwright-core (`npx playwright install` cannot download browsers here, and CI installs the
 * Debian package: scripts/test-setup.sh, which `npm test` runs first). A missing browser fails
 * the test loudly; it never skips.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { READY_BASE_MS, scaled } from '../../support/deadline.ts';
import { closeWhenFileEnds, once } from '../../support/file-teardown.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where the tests write their screenshots (git-ignored). */
export const SCREENSHOTS = join(process.cwd(), 'test-results', 'console');

/** A fresh browser profile, closed and removed by `close()`. */
export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * Starts Chromium with a fresh --user-data-dir; throws with the fix when it is not installed. The
 * file's end closes it if the test did not (Chromium's processes go with the jest worker's
 * children in any case: test/support/environment.ts).
 */
export function launchChromium(): Promise<Browser> {
  return closeWhenFileEnds('Chromium', launch(), (browser) => browser.close());
}

async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: the console's end-to-end tests need it (sudo bash scripts/test-setup.sh installs it)`,
    );
  const profile = mkdtempSync(join(tmpdir(), 'keyward-chromium-'));
  const timeout = scaled(READY_BASE_MS);
  const context = await chromium
    .launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      timeout,
      headless: true,
      acceptDownloads: true,
      viewport: { width: 1280, height: 900 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    .catch((err: Error) => {
      rmSync(profile, { recursive: true, force: true });
      throw new Error(`Chromium did not become ready within ${timeout} ms: ${err.message}`);
    });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: once(async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }),
  };
}

const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);

/** One axe-core violation, summarised. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core in the page (through the DevTools protocol, so the page's CSP, which forbids
 * inline scripts, stays as it is) and answers every violation.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(`axe
    .run(document, { resultTypes: ['violations'] })
    .then((r) => r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    })))`) as Promise<AxeViolation[]>;
}

/** Writes a full-page screenshot as test-results/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
