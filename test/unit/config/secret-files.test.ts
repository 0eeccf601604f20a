import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../shared/config/index.ts';
import { SCHEMA } from '../../../shared/config/schema.ts';

/** loadConfig's error message for an environment (the test fails when it loads). */
function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('the configuration loaded');
}

describe('secret variables from files (NAME_FILE)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'keyward-secrets-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const secretFile = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it('when KEYWARD_MASTER_KEY_FILE names a file ending in a newline, then the key is its content without the newline', () => {
    const key = Buffer.alloc(32, 5);
    const path = secretFile('master.key', `${key.toString('base64')}\n`);
    expect(loadConfig({ KEYWARD_MASTER_KEY_FILE: path }).masterKey?.[0].key).toEqual(key);
  });

  it('when the bootstrap password, S3 secret key, DATABASE_URL and REDIS_URL come from files, then each loads as its file says', () => {
    const config = loadConfig({
      KEYWARD_BOOTSTRAP_ADMIN_EMAIL: 'root@example.test',
      KEYWARD_BOOTSTRAP_ADMIN_PASSWORD_FILE: secretFile('pw', 'a password with  spaces\n'),
      S3_ENDPOINT: 'http://127.0.0.1:9000',
      S3_ACCESS_KEY_FILE: secretFile('ak', 'keyward-app'),
      S3_SECRET_KEY_FILE: secretFile('sk', 'sk\r\n'),
      DATABASE_URL_FILE: secretFile('db', 'postgres://u:p@127.0.0.1:5432/k\n'),
      REDIS_URL_FILE: secretFile('redis', 'redis://:p@127.0.0.1:6379\n'),
    });
    expect(config).toMatchObject({
      bootstrapAdminPassword: 'a password with  spaces',
      s3AccessKey: 'keyward-app',
      s3SecretKey: 'sk',
      databaseUrl: 'postgres://u:p@127.0.0.1:5432/k',
      redisUrl: 'redis://:p@127.0.0.1:6379',
    });
  });

  it('when a variable and its _FILE are both set, then the ConfigError names both', () => {
    const path = secretFile('both', Buffer.alloc(32, 1).toString('base64'));
    const message = configError({
      KEYWARD_MASTER_KEY: Buffer.alloc(32, 1).toString('base64'),
      KEYWARD_MASTER_KEY_FILE: path,
    });
    expect(message).toContain('KEYWARD_MASTER_KEY and KEYWARD_MASTER_KEY_FILE are both set');
  });

  it('when the _FILE names a file that cannot be read, then the ConfigError names the variable and the file, not its content', () => {
    const path = join(dir, 'missing');
    const message = configError({ S3_SECRET_KEY_FILE: path });
    expect(message).toContain('S3_SECRET_KEY_FILE');
    expect(message).toContain(path);
    expect(message).toContain('ENOENT');
  });

  it('when a file holds a bad value, then the error names the variable as for the variable itself', () => {
    const path = secretFile('short.key', Buffer.alloc(16, 1).toString('base64'));
    expect(configError({ KEYWARD_MASTER_KEY_FILE: path })).toContain('KEYWARD_MASTER_KEY must be');
  });

  it('when node api/server.ts starts with a variable and its _FILE both set, then it exits 2 naming both', () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const field of Object.values(SCHEMA)) delete env[field.env];
    const run = spawnSync(
      process.execPath,
      [new URL('../../../api/server.ts', import.meta.url).pathname],
      {
        env: {
          ...env,
          DATA_DIR: join(dir, 'data'),
          S3_SECRET_KEY: 'x',
          S3_SECRET_KEY_FILE: secretFile('sk-both', 'y'),
        },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('S3_SECRET_KEY and S3_SECRET_KEY_FILE are both set');
  });

  it('when a variable is not secret, then NAME_FILE is ignored', () => {
    expect(loadConfig({ PORT_FILE: join(dir, 'missing') }).port).toBe(8080);
  });

  it('when the schema is listed, then every password, key or credential URL is marked secret', () => {
    const secret = Object.values(SCHEMA)
      .filter((f) => 'secret' in f && f.secret)
      .map((f) => f.env);
    expect(secret).toEqual(
      expect.arrayContaining([
        'KEYWARD_MASTER_KEY',
        'KEYWARD_BOOTSTRAP_ADMIN_PASSWORD',
        'S3_SECRET_KEY',
        'DATABASE_URL',
        'REDIS_URL',
      ]),
    );
  });
});

describe('PUBLIC_BASE_URL default', () => {
  it('when PORT=18530 and PUBLIC_BASE_URL is unset, then the base URL names port 18530', () => {
    expect(loadConfig({ PORT: '18530' }).publicBaseUrl).toBe('http://127.0.0.1:18530');
  });

  it.each([
    ['0.0.0.0', 'http://127.0.0.1:8080'],
    ['::', 'http://127.0.0.1:8080'],
    ['keyward.internal', 'http://keyward.internal:8080'],
    ['::1', 'http://[::1]:8080'],
  ])('when HOST=%s, then the base URL is %s', (host, url) => {
    expect(loadConfig({ HOST: host }).publicBaseUrl).toBe(url);
  });

  it('when PUBLIC_BASE_URL is set, then it wins over HOST and PORT', () => {
    expect(
      loadConfig({ PORT: '18530', PUBLIC_BASE_URL: 'https://kms.example.com/' }).publicBaseUrl,
    ).toBe('https://kms.example.com');
  });
});
