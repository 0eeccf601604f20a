import { decodeJwt } from 'jose';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { TEST_ENGINE } from '../../support/database.ts';
import { adminToken } from '../../support/auth.ts';

// Before, PUBLIC_BASE_URL defaulted to http://127.0.0.1:8080 whatever PORT said, so a service
// started with PORT=18530 named :8080 as its issuer, its jwks_uri and every problem type.
describe(`PUBLIC_BASE_URL follows PORT when unset (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ PORT: '18530' });
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when PORT=18530, then the issuer, jwks_uri, token iss and problem types all say :18530', async () => {
    const base = 'http://127.0.0.1:18530';
    const meta = (await (
      await fetch(`${app.url}/.well-known/oauth-authorization-server`)
    ).json()) as {
      issuer: string;
      jwks_uri: string;
    };
    expect(meta.issuer).toBe(base);
    expect(meta.jwks_uri).toBe(`${base}/.well-known/jwks.json`);
    expect(decodeJwt(await adminToken(app)).iss).toBe(base);
    const missing = (await (await fetch(`${app.url}/api/v3/nothing-here`)).json()) as {
      type: string;
    };
    expect(missing.type).toBe(`${base}/problems/not-found`);
  });
});
