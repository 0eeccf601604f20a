/**
 * Bench-only server: the same handler on `/open` and behind the real bearer check on
 * `/guarded` (api/middleware/authenticate.ts), over an in-memory database. Writes a valid
 * service-core token to the file named by argv[3]. Usage: node bench/lib/guarded-server.ts PORT TOKEN_FILE
 */
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import express from 'express';
import { loadConfig } from '../../shared/config/index.ts';
import { createContext } from '../../api/open-context.ts';
import { authenticate } from '../../api/middleware/authenticate.ts';
import { AUDIENCE_CORE } from '../../api/services/auth/access-tokens.ts';

const [port, tokenFile] = [Number(process.argv[2]), process.argv[3]];
const config = loadConfig({
  DATA_DIR: mkdtempSync(join(tmpdir(), 'keyward-guarded-')),
  LOG_LEVEL: 'warn',
  KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
  POOL_THREADS: '1',
});
const ctx = await createContext(config, { inMemoryDatabase: true });
const { token } = await ctx.auth.tokens.issue(
  {
    sub: 'bench',
    aud: AUDIENCE_CORE,
    tenantId: '00000000-0000-4000-8000-000000000000',
    permissions: ['crypto.keys.read'],
    client_id: 'bench',
    kind: 'workload',
  },
  3600,
);
writeFileSync(tokenFile, token);

const BODY = JSON.stringify({ items: [], nextCursor: null });
const handler: express.RequestHandler = (_req, res) => {
  res.type('application/json').send(BODY);
};
const app = express();
app.get('/open', handler);
app.get('/guarded', authenticate(ctx, [AUDIENCE_CORE]), handler);
app.get('/healthz', handler);
const server = app.listen(port, '127.0.0.1');
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
