/**
 * The batch worker entry: `node workers/main.ts` (npm run worker). It takes on the service's Node
 * settings (shared/node-flags.ts), which the worker's conversions benefit from as the API's do,
 * and then runs workers/run.ts.
 */
import { configOrExit } from '../shared/config/index.ts';
import { relaunchWithServiceFlags } from '../shared/node-flags.ts';

// Every variable is checked first, before a relaunch or the worker's modules cost anything.
configOrExit('keyward worker');
relaunchWithServiceFlags();
await import('./run.ts');
