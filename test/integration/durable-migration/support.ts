/** What the durable-migration tests do alike: wait for a state, and read the report's rows. */
import { api } from '../../../support/auth.ts';
import { expectEventually } from '../../support/time.ts';
import type { JobsEnv } from '../jobs/harness.ts';

const M = '/api/v3/migration/migrations';

/** The migration's view once it is in `state` (polled every 200 ms). */
export function waitForMigration(
  app: JobsEnv['app'],
  token: string,
  id: string,
  state: string,
  timeoutMs = 60_000,
): Promise<Record<string, any>> {
  return expectEventually(
    async () => {
      const r = await api(app, 'GET', `${M}/${id}`, token);
      expect(r.body.state).toBe(state);
      return r.body as Record<string, any>;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/** Every row of the migration's report (JSON Lines), parsed. */
export async function reportRows(
  app: JobsEnv['app'],
  token: string,
  id: string,
): Promise<Record<string, any>[]> {
  const res = await fetch(`${app.url}${M}/${id}/report`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return (await res.text())
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, any>);
}
