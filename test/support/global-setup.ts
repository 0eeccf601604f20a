/**
 * Before a run: kill the process groups a test recorded (processes.ts) whose jest worker is gone,
 * left by a run that was killed before its teardown could.
 */
import { killRecordedGroups } from '../../support/processes.ts';

export default async function globalSetup(): Promise<void> {
  const killed = await killRecordedGroups((r) => !r.ownerAlive);
  if (killed > 0)
    process.stderr.write(
      `keyward tests: stopped ${killed} process group(s) left by an earlier run\n`,
    );
}
