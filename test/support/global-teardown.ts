/**
 * After a run: kill every recorded process group still alive that this run's workers (or this
 * process, running in band) started, or whose worker is gone. The environment already stops them
 * when each file ends; this catches a start that finished after its file had ended.
 */
import { killRecordedGroups } from '../../support/processes.ts';

export default async function globalTeardown(): Promise<void> {
  const killed = await killRecordedGroups(
    (r) => !r.ownerAlive || r.run === process.pid || r.owner === process.pid,
  );
  if (killed > 0)
    process.stderr.write(
      `keyward tests: stopped ${killed} process group(s) still alive after the run\n`,
    );
}
