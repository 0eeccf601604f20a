import { startTestApp, type TestApp } from '../../support/app.ts';
import { TEST_ENGINE } from '../../support/database.ts';
import { PROBLEMS } from '../../shared/errors/index.ts';

const SPECS = [...new Map(Object.values(PROBLEMS).map((p) => [p.slug as string, p])).values()];

describe(`problem type pages and the root (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when every catalogued slug is fetched as HTML, then 200 with its title, status and help line, escaped, and no script', async () => {
    const wrong: string[] = [];
    for (const spec of SPECS) {
      const res = await fetch(`${app.url}/problems/${spec.slug}`);
      const html = await res.text();
      const escaped = (s: string) => s.replace(/&/g, '&amp;').replace(/'/g, '&#39;');
      if (
        res.status !== 200 ||
        !res.headers.get('content-type')?.startsWith('text/html') ||
        !html.includes(`<h1>${escaped(spec.title)}</h1>`) ||
        !html.includes(`HTTP status ${spec.status}`) ||
        !html.includes(escaped(spec.help)) ||
        /<script/i.test(html) ||
        !res.headers.get('content-security-policy')?.includes("default-src 'none'")
      )
        wrong.push(`${spec.slug}: ${res.status}`);
    }
    console.log(`problem pages: ${SPECS.length - wrong.length} of ${SPECS.length} slugs as HTML`);
    expect(wrong).toEqual([]);
  });

  it('when every catalogued slug is fetched with Accept: application/json, then 200 with the type URL the problems carry', async () => {
    const wrong: string[] = [];
    for (const spec of SPECS) {
      const res = await fetch(`${app.url}/problems/${spec.slug}`, {
        headers: { accept: 'application/json' },
      });
      const body = (await res.json()) as Record<string, unknown>;
      const expected = {
        type: `${app.config.publicBaseUrl}/problems/${spec.slug}`,
        title: spec.title,
        status: spec.status,
        description: spec.help,
      };
      if (res.status !== 200 || JSON.stringify(body) !== JSON.stringify(expected))
        wrong.push(`${spec.slug}: ${res.status} ${JSON.stringify(body)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('when a problem answered by the API is followed, then its type page exists', async () => {
    const res = await fetch(`${app.url}/api/v3/nothing-here`);
    const { type } = (await res.json()) as { type: string };
    const page = await fetch(`${app.url}${new URL(type).pathname}`, {
      headers: { accept: 'application/json' },
    });
    expect(page.status).toBe(200);
    expect(((await page.json()) as { type: string }).type).toBe(type);
  });

  it('when an unknown slug is fetched, then 404 problem+json that does not echo the slug', async () => {
    const res = await fetch(`${app.url}/problems/%3Cscript%3Ealert(1)%3C%2Fscript%3E`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as { detail: string };
    expect(body.detail).toBe('no problem type has this name');
    expect(JSON.stringify(body)).not.toContain('<script');
  });

  it('when / is fetched, then 302 to /docs', async () => {
    const res = await fetch(`${app.url}/`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/docs');
  });

  it('when every catalogue entry is read, then it has a help line of one sentence or two', () => {
    const short = Object.entries(PROBLEMS).filter(
      ([, p]) => p.help.length < 30 || p.help.length > 240 || p.help.includes('\n'),
    );
    expect(short).toEqual([]);
  });
});
