/**
 * `keyward migrate --durable` as a user runs it (the CLI a child process, a worker process, real
 * Redis and s3rver): it creates the migration, prints its id, shows progress with objects/s and
 * ETA on stderr (one line per interval when stderr is not a terminal), and exits 1 when an object
 * was refused; `keyward migrate report ID` writes the ledger as CSV and JSON Lines, `status` the
 * migration as JSON.
 */
import { importKeystore } from '../../../api/services/keys/import.ts';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { makeTenant, workloadToken } from '../../../support/auth.ts';
import { JOB_PERMISSIONS } from '../../../support/job-permissions.ts';
import {
  runKeywardCli,
  spawnWorker,
  startJobsEnv,
  upload,
  type JobsEnv,
  type WorkerChild,
} from '../jobs/harness.ts';

let env: JobsEnv;
let ssl: OpenSslDir;
let key: TestKey;
let worker: WorkerChild;
let cliEnv: Record<string, string>;

beforeAll(async () => {
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'cli-durable', 'rsa-2048');
  env = await startJobsEnv();
  const t = await makeTenant(env.app, JOB_PERMISSIONS);
  await importKeystore(env.app.ctx, t.tenantId, {
    data: Buffer.concat([ssl.read(key.keyFile), ssl.read(key.certFile)]),
    kid: key.kid,
  });
  cliEnv = {
    KEYWARD_URL: env.app.url,
    KEYWARD_CLIENT_ID: t.clientId,
    KEYWARD_CLIENT_SECRET: t.clientSecret,
  };
  const token = await workloadToken(env.app, t);
  ssl.write('plain.txt', Buffer.from('durable\n'));
  const enc = ssl.run([
    'cms',
    '-encrypt',
    '-binary',
    '-aes-256-cbc',
    '-in',
    'plain.txt',
    '-recip',
    key.certFile,
    '-outform',
    'DER',
  ]);
  for (let i = 0; i < 4; i++)
    expect((await upload(env.app, token, `arch/m-${i}.p7m`, enc)).status).toBe(201);
  expect((await upload(env.app, token, 'arch/junk.p7m', Buffer.from('junk'))).status).toBe(201);
  worker = await spawnWorker(env.workerEnv());
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  ssl?.cleanup();
});

describe('keyward migrate --durable', () => {
  it('when a prefix is migrated durably, then the id is printed, progress has a rate and an ETA, the exit code says one was refused, and the report lists every object', async () => {
    const bucket = env.s3.bucket;
    const run = await runKeywardCli(
      [
        'migrate',
        `s3://${bucket}/arch/`,
        '--out',
        `s3://${bucket}/conv/`,
        '--durable',
        '--poll',
        '200',
        '--progress-interval',
        '200',
      ],
      cliEnv,
    );
    expect(run.stderr).toMatch(
      /objects 5\/5, 1 refused \| [\d.]+ objects\/s \| .* read \| ETA 0:00/,
    );
    expect(run.code).toBe(1);
    const id = run.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    const csv = await runKeywardCli(['migrate', 'report', id, '--format', 'csv'], cliEnv);
    expect(csv.code).toBe(0);
    const lines = csv.stdout.trim().split('\r\n');
    expect(lines).toHaveLength(6);
    expect(lines[1]).toMatch(/^arch\/junk\.p7m,refused,cms-malformed,/);
    expect(lines.slice(2).every((l) => /^arch\/m-\d\.p7m,converted,,/.test(l))).toBe(true);

    const jsonl = await runKeywardCli(['migrate', 'report', id], cliEnv);
    const rows = jsonl.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.outputs[0]?.key ?? null)).toEqual([
      null,
      'conv/m-0.p7m.jwe',
      'conv/m-1.p7m.jwe',
      'conv/m-2.p7m.jwe',
      'conv/m-3.p7m.jwe',
    ]);

    const status = await runKeywardCli(['migrate', 'status', id], cliEnv);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      id,
      state: 'completed',
      counts: { converted: 4, refused: 1 },
    });
  }, 120_000);
});
