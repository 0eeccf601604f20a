/**
 * How /console serves its files (the browser test is test/e2e/console.test.ts): from the
 * console/ folder by name only, each under the console's CSP; anything else is a 404 problem.
 */
import { startTestApp, type TestApp } from '../../support/app.ts';
import { CONSOLE_CSP } from '../../api/routes/console.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.stop();
});

describe('GET /console and its files', () => {
  it('when /console is asked for, then the page loads its module and stylesheet from this origin, under a CSP without inline code or other origins', async () => {
    const res = await fetch(`${app.url}/console`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("style-src 'self'");
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    expect(CONSOLE_CSP).not.toMatch(/unsafe|https?:|\*/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).toContain('<script type="module" src="/console/js/main.js"></script>');
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|\son[a-z]+=|https?:\/\//);
  });

  it('when a module or the stylesheet is asked for, then it comes with its media type and the same CSP', async () => {
    for (const [path, type] of [
      ['js/main.js', 'text/javascript'],
      ['js/pages/keys.js', 'text/javascript'],
      ['app.css', 'text/css'],
      ['icon.svg', 'image/svg+xml'],
    ]) {
      const res = await fetch(`${app.url}/console/${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')?.startsWith(type)).toBe(true);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    }
  });

  it('when a name outside the console files is asked for (README, traversal, encoded traversal, unknown), then 404 problem+json', async () => {
    for (const path of [
      'README.md',
      '../package.json',
      '..%2Fpackage.json',
      'js/%2e%2e/%2e%2e/api/app.ts',
      'nothing.js',
    ]) {
      const res = await fetch(`${app.url}/console/${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  });
});
