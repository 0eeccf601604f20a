/**
 * The API process entry: `node api/server.ts` (npm start), as `node workers/worker.ts` is the
 * queue worker's. It takes on the service's Node settings (shared/node-flags.ts) and then runs
 * api/start.ts; only the config schema is loaded before that (every variable is checked first),
 * so a relaunch costs only Node's own start.
 */
import { configOrExit } from '../shared/config/index.ts';
import { relaunchWithServiceFlags } from '../shared/node-flags.ts';

// Every variable is checked first, before a relaunch or the app's modules cost anything.
configOrExit('keyward');
relaunchWithServiceFlags();
await import('./start.ts');
