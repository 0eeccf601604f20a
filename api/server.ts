/**
 * The API process entry: `node api/server.ts` (npm start). It takes on the service's Node
 * settings (shared/node-flags.ts) and then runs api/main.ts; nothing else is loaded before that,
 * so a relaunch costs only Node's own start.
 */
import { relaunchWithServiceFlags } from '../shared/node-flags.ts';

relaunchWithServiceFlags();
await import('./main.ts');
