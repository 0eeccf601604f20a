/**
 * The route table's areas: authentication covers a whole prefix, so every path under a
 * protected prefix, unknown ones and wrong methods included, answers 401 to a caller without a
 * token before 404 or 405 (the legacy areas checked the token inside each route, so a wrong
 * method there was a 405 before authentication). Generated from the table.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { ROUTE_TABLE } from '../../../api/routes/index.ts';

describe(`the areas of the route table (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a path under a protected area is unknown or called with the wrong method without a token, then 401 unauthorized', async () => {
    const answers: string[] = [];
    for (const area of ROUTE_TABLE.filter((a) => a.audiences)) {
      for (const [method, path] of [
        ['GET', `${area.prefix}/no-such-path`],
        ['DELETE', area.prefix],
      ]) {
        const res = await fetch(`${app.url}${path}`, { method });
        const body = (await res.json()) as { type?: string };
        answers.push(`${method} ${path} ${res.status} ${body.type?.split('/').pop()}`);
      }
    }
    expect(answers).toEqual(answers.map((a) => a.replace(/ \d{3} \S+$/, ' 401 unauthorized')));
    expect(answers.length).toBeGreaterThanOrEqual(2 * 8);
  });

  it('when a path under a public area is unknown, then 404 (the auth area answers in the OAuth shape)', async () => {
    expect((await fetch(`${app.url}/.well-known/no-such-path`)).status).toBe(404);
    const auth = await fetch(`${app.url}/api/v3/auth/no-such-path`, { method: 'POST' });
    expect([auth.status, ((await auth.json()) as { error?: string }).error]).toEqual([
      404,
      'not_found',
    ]);
  });
});
