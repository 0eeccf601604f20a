/**
 * The AWS CLI (Debian's awscli) and boto3 (python3-boto3) against Keyward's AWS KMS API, with
 * credentials from the environment only (no config files, no instance metadata). Every client
 * runs behind a proxy that records and refuses whatever is bound beyond loopback, so a client
 * that ignores its endpoint setting and signs for AWS's own endpoint (Debian 12's CLI 2.9.19
 * ignores AWS_ENDPOINT_URL_KMS) fails the test instead of sending plaintext to AWS.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { startRefusingProxy, type RefusingProxy } from '../../support/refusing-proxy.ts';
import { awsTenant, type AwsTenant } from './support.ts';

const run = promisify(execFile);
const REGION = 'us-east-2';

describe('AWS KMS API with the AWS CLI and boto3', () => {
  let app: TestApp;
  let t: AwsTenant;
  let env: NodeJS.ProcessEnv;
  let proxy: RefusingProxy;

  beforeAll(async () => {
    app = await startTestApp();
    t = await awsTenant(app);
    proxy = await startRefusingProxy();
    env = {
      ...proxy.env,
      PATH: process.env.PATH,
      HOME: mkdtempSync(join(tmpdir(), 'aws-home-')),
      AWS_ACCESS_KEY_ID: t.accessKeyId,
      AWS_SECRET_ACCESS_KEY: t.secretAccessKey,
      AWS_DEFAULT_REGION: REGION,
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_PAGER: '',
    };
  });
  afterAll(async () => {
    await proxy?.close();
    await app?.stop();
  });
  afterEach(() => {
    // Nothing any client ran by a test was bound beyond this machine.
    expect(proxy.recorded).toEqual([]);
  });

  const aws = (...args: string[]) =>
    run('/usr/bin/aws', ['--endpoint-url', app.url, '--output', 'json', 'kms', ...args], { env });

  it('when the CLI creates a key, encrypts a file and decrypts it, then the file comes back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aws-cli-'));
    writeFileSync(join(dir, 'in.txt'), 'invoice 42');
    const key = JSON.parse((await aws('create-key', '--description', 'cli')).stdout);
    const kid = key.KeyMetadata.KeyId as string;
    const e = JSON.parse(
      (
        await aws(
          'encrypt',
          '--key-id',
          kid,
          '--plaintext',
          `fileb://${join(dir, 'in.txt')}`,
          '--encryption-context',
          'purpose=test',
        )
      ).stdout,
    );
    writeFileSync(join(dir, 'ct.bin'), Buffer.from(e.CiphertextBlob, 'base64'));
    const d = JSON.parse(
      (
        await aws(
          'decrypt',
          '--ciphertext-blob',
          `fileb://${join(dir, 'ct.bin')}`,
          '--encryption-context',
          'purpose=test',
        )
      ).stdout,
    );
    expect(Buffer.from(d.Plaintext, 'base64').toString()).toBe(
      readFileSync(join(dir, 'in.txt'), 'utf8'),
    );
    const random = JSON.parse((await aws('generate-random', '--number-of-bytes', '16')).stdout);
    expect(Buffer.from(random.Plaintext, 'base64')).toHaveLength(16);
  });

  /** The fenced blocks of a Markdown file, with their language. */
  const blocksOf = (markdown: string) =>
    [...markdown.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map(([, lang, code]) => ({ lang, code }));
  const DOCS = [
    '../../../README.md',
    ...readdirSync(new URL('../../../docs/', import.meta.url))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `../../../docs/${f}`),
  ];

  it('when the README and docs show an AWS client, then every one names its endpoint on the command or in the client (never only in AWS_ENDPOINT_URL_KMS, which older CLIs ignore)', () => {
    let commands = 0;
    for (const file of DOCS) {
      const text = readFileSync(new URL(file, import.meta.url), 'utf8');
      for (const { code } of blocksOf(text)) {
        // Shell: each `aws` command (continuation lines joined) names --endpoint-url.
        for (const line of code.replace(/\\\n/g, ' ').split('\n'))
          for (const call of line.match(/(?:^|[\s$(|;&])aws\s[^|;&)]*/g) ?? []) {
            commands += 1;
            expect([file, call.trim(), call.includes('--endpoint-url')]).toEqual([
              file,
              call.trim(),
              true,
            ]);
          }
        // SDK clients: the endpoint in the client's own configuration.
        for (const client of code.match(/new KMSClient\(\{[\s\S]*?\}\)/g) ?? [])
          expect([file, /\bendpoint:/.test(client)]).toEqual([file, true]);
        for (const client of code.match(/boto3\.client\([^)]*\)/g) ?? [])
          expect([file, /endpoint_url=/.test(client)]).toEqual([file, true]);
      }
    }
    expect(commands).toBeGreaterThanOrEqual(4);
  });

  it("when the AWS CLI example of docs/aws-sdks.md is run as written by Debian's CLI (/usr/bin/aws), with the endpoint and access key from the environment, then it prints the plaintext and nothing leaves the machine", async () => {
    const readme = readFileSync(new URL('../../../docs/aws-sdks.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Use Keyward from AWS SDKs'));
    const block = /The AWS CLI:\n\n```sh\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toContain('aws --endpoint-url "$KEYWARD_URL" kms decrypt');
    // Its exports name placeholders (KWAK..., the example URL): this test's values stand in.
    const exported = block!.split('\n').filter((l) => l.startsWith('export '));
    expect(exported.join(' ')).toMatch(/AWS_ACCESS_KEY_ID=.*KEYWARD_URL=/s);
    // Debian's packaged CLI, whatever `aws` PATH finds first (a newer one may honour what it ignores).
    const script = [
      'aws() { /usr/bin/aws "$@"; }',
      ...block!.split('\n').filter((l) => !l.startsWith('export ')),
    ].join('\n');
    const { stdout } = await run('/bin/bash', ['-euo', 'pipefail', '-c', script], {
      env: { ...env, KEYWARD_URL: app.url, AWS_DEFAULT_REGION: REGION, AWS_MAX_ATTEMPTS: '1' },
      cwd: mkdtempSync(join(tmpdir(), 'aws-readme-')),
    });
    expect(stdout.trimEnd().split('\n').pop()).toBe('invoice 42');
  });

  it("when the JavaScript SDK example of docs/aws-sdks.md is run as written, with this test's endpoint and access key, then it prints the plaintext", async () => {
    const readme = readFileSync(new URL('../../../docs/aws-sdks.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Use Keyward from AWS SDKs'));
    const block = /`@aws-sdk\/client-kms`\):\n\n```js\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toContain('new DecryptCommand');
    // The example names placeholders (the example URL, KWAK...): this test's values stand in.
    const script = block!
      .replace("'http://127.0.0.1:8080'", JSON.stringify(app.url))
      .replace("'eu-west-1'", JSON.stringify(REGION))
      .replace("'KWAK...'", JSON.stringify(t.accessKeyId));
    expect(script).not.toContain('KWAK...');
    // The example encrypts under alias/invoices, which the CLI example creates.
    await aws('describe-key', '--key-id', 'alias/invoices').catch(async () => {
      const kid = JSON.parse((await aws('create-key')).stdout).KeyMetadata.KeyId as string;
      await aws('create-alias', '--alias-name', 'alias/invoices', '--target-key-id', kid);
    });
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    // The SDK's https agent ignores HTTPS_PROXY: a preload refuses and reports any connection
    // beyond loopback instead.
    const guard = fileURLToPath(new URL('../../support/loopback-only.ts', import.meta.url));
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', guard, '--input-type=module', '--no-warnings', '-e', script],
      { cwd: root, env: { PATH: process.env.PATH, KEYWARD_AWS_SECRET: t.secretAccessKey } },
    );
    expect(stderr).not.toContain('NON-LOOPBACK');
    expect(stdout.trimEnd()).toBe('invoice 42');
  });

  it('when the CLI decrypts under another context or names an unknown key, then it fails with the AWS exception', async () => {
    const key = JSON.parse((await aws('create-key')).stdout).KeyMetadata.KeyId as string;
    const e = JSON.parse(
      (await aws('encrypt', '--key-id', key, '--plaintext', 'aGk=', '--encryption-context', 'a=b'))
        .stdout,
    );
    const dir = mkdtempSync(join(tmpdir(), 'aws-cli-'));
    writeFileSync(join(dir, 'ct.bin'), Buffer.from(e.CiphertextBlob, 'base64'));
    await expect(
      aws(
        'decrypt',
        '--ciphertext-blob',
        `fileb://${join(dir, 'ct.bin')}`,
        '--encryption-context',
        'a=c',
      ),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('InvalidCiphertextException') });
    await expect(aws('describe-key', '--key-id', 'alias/none')).rejects.toMatchObject({
      stderr: expect.stringContaining('NotFoundException'),
    });
  });

  it('when a script cancels a deletion with the CLI, then enable-key, disable-key, update-alias, update-key-description, get-key-policy, list-key-policies and list-grants answer as AWS does', async () => {
    const json = async (...args: string[]) => {
      const { stdout } = await aws(...args);
      return stdout.trim() === '' ? {} : JSON.parse(stdout);
    };
    const kid = (await json('create-key')).KeyMetadata.KeyId as string;
    // The key's state is read from its row: each CLI start takes seconds on a loaded machine.
    const row = () => app.ctx.db('keys').where({ tenant_id: t.tenantId, kid }).first();
    await json('schedule-key-deletion', '--key-id', kid, '--pending-window-in-days', '7');
    await json('cancel-key-deletion', '--key-id', kid);
    expect((await row()).state).toBe('suspended');
    await json('enable-key', '--key-id', kid);
    expect((await row()).state).toBe('active');
    await json('disable-key', '--key-id', kid);
    expect((await row()).state).toBe('suspended');
    await json('enable-key', '--key-id', kid);
    await json('update-key-description', '--key-id', kid, '--description', 'renamed');
    expect(await row()).toMatchObject({ state: 'active', description: 'renamed' });
    const policy = await json('get-key-policy', '--key-id', kid, '--policy-name', 'default');
    expect(JSON.parse(policy.Policy).Statement[0]).toMatchObject({
      Effect: 'Allow',
      Action: 'kms:*',
    });
    expect((await json('list-key-policies', '--key-id', kid)).PolicyNames).toEqual(['default']);
    expect((await json('list-grants', '--key-id', kid)).Grants).toEqual([]);
    const other = (await json('create-key')).KeyMetadata.KeyId as string;
    await json('create-alias', '--alias-name', 'alias/cli-moving', '--target-key-id', kid);
    await json('update-alias', '--alias-name', 'alias/cli-moving', '--target-key-id', other);
    expect(
      await app.ctx
        .db('key_aliases')
        .where({ tenant_id: t.tenantId, name: 'alias/cli-moving' })
        .first('kid'),
    ).toEqual({ kid: other });
  }, 240_000);

  it('when boto3 runs the control plane (keys, aliases, rotation, tags, deletion) and the error path of every operation the other clients call only with success, then each answer is what AWS gives', async () => {
    const script = fileURLToPath(new URL('./boto3_client.py', import.meta.url));
    const { stdout } = await run('/usr/bin/python3', [script, app.url, REGION], { env });
    const out = JSON.parse(stdout);
    expect(out).toEqual({
      alias_dup: ['AlreadyExistsException', 400],
      decrypted: 'via alias',
      aliases: ['alias/boto3'],
      alias_gone: ['NotFoundException', 400],
      keys: true,
      rotation: true,
      rotation_off: ['UnsupportedOperationException', 400],
      tags: [{ TagKey: 'env', TagValue: 'prod' }],
      scheduled: 'PendingDeletion',
      pending_describe: 'PendingDeletion',
      encrypt_pending: ['KMSInvalidStateException', 400],
      window_bad: ['ValidationException', 400],
      cancelled: 'Disabled',
      cancel_again: ['KMSInvalidStateException', 400],
      enabled: 'Enabled',
      disabled: 'Disabled',
      encrypt_disabled: ['DisabledException', 400],
      description: 'renamed',
      policy_actions: ['kms:*'],
      policy_names: ['default'],
      policy_other: ['NotFoundException', 400],
      grants: [],
      alias_moved: true,
      unknown_key: ['NotFoundException', 400],
      errors: {
        re_encrypt: ['NotFoundException', 400],
        data_key_without_plaintext: ['InvalidKeyUsageException', 400],
        data_key_pair_without_plaintext: ['NotFoundException', 400],
        sign: ['InvalidKeyUsageException', 400],
        random: ['ValidationException', 400],
        list_keys: ['ValidationException', 400],
        list_aliases: ['InvalidMarkerException', 400],
        list_aliases_unknown_key: ['NotFoundException', 400],
        rotation_status: ['NotFoundException', 400],
        rotation_status_asymmetric: ['UnsupportedOperationException', 400],
        enable_rotation: ['UnsupportedOperationException', 400],
        create_key: ['ValidationException', 400],
        delete_alias: ['NotFoundException', 400],
        tag: ['NotFoundException', 400],
        untag: ['NotFoundException', 400],
        list_tags: ['NotFoundException', 400],
        enable_key: ['NotFoundException', 400],
        disable_key: ['NotFoundException', 400],
        update_alias: ['NotFoundException', 400],
        update_description: ['NotFoundException', 400],
        list_grants: ['NotFoundException', 400],
        list_key_policies: ['NotFoundException', 400],
      },
    });
  });
});
