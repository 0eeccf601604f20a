/**
 * The queue worker process entry: `node workers/worker.ts` (npm run worker), as
 * `node api/server.ts` is the API's. It takes on the service's Node settings
 * (shared/node-flags.ts), which the worker's conversions benefit from as the API's do, and then
 * runs workers/start.ts, the worker's start as api/start.ts is the API's.
 */
import { configOrExit } from '../shared/config/index.ts';
import { relaunchWithServiceFlags } from '../shared/node-flags.ts';

// Every variable is checked first, before a relaunch or the worker's modules cost anything.
configOrExit('keyward worker');
relaunchWithServiceFlags();
await import('./start.ts');
