/**
 * jest's node environment, plus the guarantee that a test file leaves nothing running: when the
 * file ends (after its own `afterAll` hooks, whatever failed), the environment closes what the
 * file started in-process (file-teardown.ts), then stops every process below this jest worker and
 * every process group it recorded (processes.ts), SIGKILL after a short grace. It sweeps once more
 * before a file starts, for anything a start that outlived the previous file left. A line on
 * stderr names what it had to stop, so a leak stays visible. See docs/testing.md.
 */
import { TestEnvironment as NodeEnvironment } from 'jest-environment-node';
import { relative } from 'node:path';
import { scaled } from '../../support/deadline.ts';
import { FileTeardown, installFileTeardown } from '../../support/file-teardown.ts';
import {
  commandLine,
  descendantsOf,
  killOwnGroupsNow,
  killRecordedGroups,
  ownDescendants,
  stopProcesses,
} from '../../support/processes.ts';

/** How long a leftover process gets to exit on SIGTERM before SIGKILL. */
const GRACE_MS = 2_000;
/** How long each in-process closer (an API's stop, a browser's close) may take, scaled. */
const CLOSE_BASE_MS = 15_000;

let exitHooksInstalled = false;

/**
 * When the worker itself ends (jest ends it, replaces it past its memory limit, or a signal
 * arrives), its children would be re-parented and live on: kill them first. Synchronous, as an
 * 'exit' listener must be.
 */
function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  const killAll = () => {
    killOwnGroupsNow();
    for (const row of descendantsOf(process.pid)) {
      try {
        process.kill(row.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  };
  process.once('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      killAll();
      // Then end as the signal would have ended the process without this listener.
      process.removeListener(sig, onSignal);
      process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

/** Stops what runs below this worker and what it recorded; answers a line naming it, or ''. */
async function sweep(when: string): Promise<string> {
  const below = ownDescendants();
  const described = below.rows.map((r) => `${r.pid} ${commandLine(r.pid)}`);
  const killed = await stopProcesses(below, { graceMs: GRACE_MS });
  const groups = await killRecordedGroups((r) => r.owner === process.pid, { graceMs: GRACE_MS });
  if (described.length === 0 && groups === 0) return '';
  return `${when}: stopped ${described.length} process(es)${killed.length > 0 ? ` (${killed.length} needed SIGKILL)` : ''}${groups > 0 ? ` and ${groups} recorded group(s)` : ''}: ${described.join('; ')}`;
}

export default class KeywardEnvironment extends NodeEnvironment {
  readonly #file: string;
  readonly #teardown = new FileTeardown();

  constructor(...[config, context]: ConstructorParameters<typeof NodeEnvironment>) {
    super(config, context);
    this.#file = relative(config.globalConfig.rootDir, context.testPath);
    installFileTeardown(this.global, this.#teardown);
  }

  override async setup(): Promise<void> {
    installExitHooks();
    const note = await sweep('left from an earlier file, before the file starts');
    if (note) process.stderr.write(`keyward tests: ${this.#file}: ${note}\n`);
    await super.setup();
  }

  override async teardown(): Promise<void> {
    try {
      const problems = await this.#teardown.closeAll(scaled(CLOSE_BASE_MS));
      const note = await sweep('still running when the file ended');
      for (const line of [...problems.map((p) => `could not close ${p}`), note].filter(Boolean))
        process.stderr.write(`keyward tests: ${this.#file}: ${line}\n`);
    } finally {
      await super.teardown();
    }
  }
}
