/**
 * The production image and compose file, checked by reading them (the image builds where
 * Docker exists; here the rules are the check): multi-stage with runtime dependencies only, the
 * base image's Node 24 pinned by version, a non-root user and a healthcheck for the API and the
 * worker; compose with pinned images, the app on a bucket-scoped MinIO account, secrets as files.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { parse } from 'yaml';
import { SCHEMA } from '../../../shared/config/schema.ts';

const ROOT = new URL('../../../', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, ROOT), 'utf8');

/** One Dockerfile stage: its base, its name, and its instructions with continuations joined. */
interface Stage {
  from: string;
  name: string;
  lines: string[];
}

/** The stages of a Dockerfile, with `ARG` defaults before the first FROM substituted. */
function stagesOf(text: string): Stage[] {
  const joined = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of joined) {
    const [op, ...rest] = line.split(/\s+/);
    if (op === 'ARG' && stages.length === 0) {
      const [name, value] = rest.join(' ').split('=');
      args.set(name, value ?? '');
    } else if (op === 'FROM') {
      const from = rest[0].replace(/^\$\{(\w+)\}$/, (_m, n: string) => args.get(n) ?? '');
      const name = rest[1]?.toUpperCase() === 'AS' ? rest[2] : '';
      stages.push({ from, name, lines: [] });
    } else {
      stages.at(-1)?.lines.push(line);
    }
  }
  return stages;
}

/** The instructions in force in a stage: its own after those of the stages it is built on. */
function effective(stages: Stage[], stage: Stage): string[] {
  const parent = stages.find((s) => s.name === stage.from);
  return [...(parent ? effective(stages, parent) : []), ...stage.lines];
}

const lastOf = (lines: string[], op: string) => lines.filter((l) => l.startsWith(`${op} `)).at(-1);

describe('Dockerfile', () => {
  const stages = stagesOf(read('Dockerfile'));
  const byName = (name: string) => stages.find((s) => s.name === name)!;

  it('when its stages are read, then every base image is Node 24 slim pinned by full version, or an earlier stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    for (const s of stages) {
      if (stages.some((p) => p.name === s.from)) continue;
      expect([s.name, s.from]).toEqual([
        s.name,
        expect.stringMatching(/^node:24\.\d+\.\d+-.*slim$/),
      ]);
    }
  });

  it('when the dependencies are installed, then only the runtime ones, from the lock file, and the sources never bring node_modules', () => {
    const installs = stages.flatMap((s) => s.lines).filter((l) => /\bnpm (ci|install|i)\b/.test(l));
    expect(installs.length).toBeGreaterThan(0);
    for (const l of installs) expect(l).toMatch(/\bnpm ci\b.*--omit=dev/);
    for (const s of stages) expect(s.lines).not.toContain('COPY . .');
    const ignored = read('.dockerignore').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'secrets', '.env']));
  });

  it('when the lock file is read, then the `node` package (the local Node pin) is a dev dependency, so the image has only the base Node', () => {
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    expect(lock.packages['node_modules/node']).toMatchObject({ dev: true });
  });

  it.each([
    ['api', 'api/server.ts'],
    ['worker', 'workers/worker.ts'],
  ])(
    'when the %s target runs, then as a non-root user, with a healthcheck, running `node` directly',
    (target, entry) => {
      const lines = effective(stages, byName(target));
      expect(lastOf(lines, 'USER')).toMatch(/^USER (?!root\b|0\b)\S+$/);
      expect(lastOf(lines, 'HEALTHCHECK')).toMatch(
        /^HEALTHCHECK .*CMD \["node", "-e", ".*\/healthz/,
      );
      expect(lastOf(lines, 'CMD')).toBe(`CMD ["node", "${entry}"]`);
    },
  );

  it('when a source starts a file by path (a thread entry, a child process), then that file exists and the image copies it', () => {
    // Thread entries are loaded by path (piscina's filename, new Worker(url), a spawned script):
    // no import names them, so a move that misses one fails only when the thread starts.
    const copied = effective(stages, byName('api'))
      .filter((l) => l.startsWith('COPY ') && !l.includes('--from='))
      .map((l) => l.split(/\s+/)[1].replace(/^\.\//, ''));
    const sources = ['api', 'shared', 'workers'].flatMap((dir) =>
      readdirSync(new URL(`${dir}/`, ROOT), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .map((f) => `${dir}/${f}`),
    );
    const started: string[] = [];
    for (const file of sources) {
      for (const [, spec] of read(file).matchAll(
        /new URL\('(\.{1,2}\/[^']+\.ts)', import\.meta\.url\)/g,
      )) {
        const target = posix.join(posix.dirname(file), spec);
        started.push(target);
        expect([file, existsSync(new URL(target, ROOT))]).toEqual([file, true]);
        expect([target, copied.some((dir) => target.startsWith(`${dir}/`))]).toEqual([
          target,
          true,
        ]);
      }
    }
    expect(started).toEqual(
      expect.arrayContaining(['api/threads/tasks/index.ts', 'api/threads/token-sign-thread.ts']),
    );
  });

  it('when no target is given, then the API is built (the last stage)', () => {
    expect(stages.at(-1)!.name).toBe('api');
  });
});

interface Service {
  image?: string;
  build?: { target?: string };
  environment?: Record<string, string>;
  secrets?: string[];
  healthcheck?: { test?: string[]; disable?: boolean };
  command?: string[] | string;
  ports?: string[];
}
interface Compose {
  services: Record<string, Service>;
  secrets: Record<string, { file?: string }>;
}

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as Compose;
  const services = Object.entries(compose.services);
  const targets = new Set(stagesOf(read('Dockerfile')).map((s) => s.name));
  const secretVars = Object.values(SCHEMA)
    .filter((f) => 'secret' in f && f.secret)
    .map((f) => f.env);

  it("when MinIO's ports are read, then its S3 API (9000) is published on loopback, so an archive can be loaded into the bucket from the host", () => {
    // Before, only the web console (9001) was published: `mc cp` or `aws s3 cp` from the host had no endpoint.
    expect(compose.services.minio.ports).toEqual(expect.arrayContaining(['127.0.0.1:9000:9000']));
    for (const [name, s] of services)
      for (const p of s.ports ?? [])
        expect([name, p]).toEqual([name, expect.stringMatching(/^127\.0\.0\.1:/)]);
  });

  it('when every service is read, then its image is pinned to a version (no latest, no bare name)', () => {
    for (const [name, s] of services)
      expect([name, s.image]).toEqual([
        name,
        expect.stringMatching(
          /^[\w./-]+:(?!latest$)(\$\{KEYWARD_VERSION:-\d+\.\d+\.\d+\}|\S*\d\S*)$/,
        ),
      ]);
  });

  it('when the API and the worker are built, then each from its own Dockerfile target, with a healthcheck', () => {
    for (const name of ['api', 'worker']) {
      const s = compose.services[name];
      expect(targets.has(s.build!.target!)).toBe(true);
      expect(s.healthcheck?.disable).not.toBe(true);
      expect(s.healthcheck?.test?.join(' ')).toMatch(/\/(healthz|readyz)/);
    }
    expect(compose.services.worker.build!.target).toBe('worker');
  });

  it('when the environments are read, then no secret is a value: each comes as a *_FILE under /run/secrets from a declared secret file', () => {
    const leaks: string[] = [];
    for (const [name, s] of services) {
      const env = s.environment ?? {};
      for (const [key, value] of Object.entries(env)) {
        // An access key id names the account (secret only to stay out of logs); a URL is a
        // secret only when it holds credentials.
        const harmless =
          key === 'S3_ACCESS_KEY' || (/_URL$/.test(key) && !/\/\/[^/]*@/.test(String(value)));
        if (!harmless && [...secretVars, 'POSTGRES_PASSWORD', 'MINIO_ROOT_PASSWORD'].includes(key))
          leaks.push(`${name}: ${key} is set as a value`);
        if (key.endsWith('_FILE')) {
          const secret = String(value).replace(/^\/run\/secrets\//, '');
          if (!s.secrets?.includes(secret) || !compose.secrets[secret]?.file)
            leaks.push(`${name}: ${key} names ${value}, not a declared secret of the service`);
        }
      }
    }
    expect(leaks).toEqual([]);
    expect(compose.services.api.environment).toMatchObject({
      KEYWARD_MASTER_KEY_FILE: '/run/secrets/keyward_master_key',
      S3_SECRET_KEY_FILE: '/run/secrets/minio_app_secret_key',
      DATABASE_URL_FILE: '/run/secrets/database_url',
    });
  });

  it("when the app reaches MinIO, then with its own account whose policy names the bucket only, and the root password is the init job's alone", () => {
    const minio = compose.services.minio.environment!;
    for (const name of ['api', 'worker']) {
      const s = compose.services[name];
      expect(s.environment!.S3_ACCESS_KEY).not.toBe(minio.MINIO_ROOT_USER);
      expect(s.secrets).not.toContain('minio_root_password');
    }
    const holders = services.filter(([, s]) => s.secrets?.includes('minio_root_password'));
    expect(holders.map(([n]) => n).sort()).toEqual(['minio', 'minio-init']);
    const script = [compose.services['minio-init'].command].flat().join('\n');
    expect(script).toContain('mc admin policy create root keyward-app');
    expect(script).toContain('mc admin user add root keyward-app');
    expect(script).toContain('mc admin policy attach root keyward-app --user keyward-app');
    const policy = JSON.parse(/<<POLICY\n([\s\S]*?)\n\s*POLICY/.exec(script)![1]) as {
      Statement: Array<{ Resource: string[]; Action: string[] }>;
    };
    const resources = policy.Statement.flatMap((st) => st.Resource);
    // `$$` is compose's escape: the shell sees $S3_BUCKET.
    expect(resources.sort()).toEqual(['arn:aws:s3:::$$S3_BUCKET', 'arn:aws:s3:::$$S3_BUCKET/*']);
    expect(policy.Statement.flatMap((st) => st.Action).some((a) => /\*|admin/.test(a))).toBe(false);
  });
});
