/**
 * Admin commands (a person's login, audience service-admin): tenants (platform), workloads,
 * roles and users of a tenant (`--tenant`, default the login's).
 */
import type { AccessKey, Page, PageQuery, Role, Tenant, User, Workload } from '../api-client.ts';
import { ApiError } from '../client.ts';
import {
  EXIT,
  UsageError,
  int,
  print,
  readSecret,
  record,
  str,
  table,
  type Command,
  type Invocation,
  type OptionDef,
} from '../command.ts';
import { connect } from './session.ts';
import { unknownPermissions } from './permissions.ts';

export const PAGE_OPTIONS: Record<string, OptionDef> = {
  limit: { type: 'string', value: '<n>', help: 'page size (1 to 500)' },
  cursor: {
    type: 'string',
    value: '<cursor>',
    help: 'the next page, as printed after the previous one',
  },
};

/** The page query of --limit and --cursor. */
export const pageOf = (inv: Invocation): PageQuery => ({
  limit: int(inv.values, 'limit', 1, 500),
  cursor: str(inv.values, 'cursor'),
});

/** Prints a page as a table, with how to get the next one on stderr. */
export function printPage<T>(
  inv: Invocation,
  page: Page<T>,
  columns: Array<[string, (row: T) => unknown]>,
): number {
  print(inv, page, () => table(page.items, columns));
  if (page.nextCursor && inv.values.output !== 'json')
    inv.stderr.write(`more: --cursor ${page.nextCursor}\n`);
  return EXIT.ok;
}

const TENANT_COLUMNS: Array<[string, (t: Tenant) => unknown]> = [
  ['id', (t) => t.id],
  ['name', (t) => t.name],
  ['status', (t) => t.status],
  ['platform', (t) => t.isPlatform],
  ['created', (t) => t.createdAt],
];
const WORKLOAD_COLUMNS: Array<[string, (w: Workload) => unknown]> = [
  ['id', (w) => w.id],
  ['name', (w) => w.name],
  ['clientId', (w) => w.clientId],
  ['roleId', (w) => w.roleId],
  ['disabled', (w) => w.disabled],
];
const ROLE_COLUMNS: Array<[string, (r: Role) => unknown]> = [
  ['id', (r) => r.id],
  ['name', (r) => r.name],
  ['permissions', (r) => r.permissions.join(',')],
];
const USER_COLUMNS: Array<[string, (u: User) => unknown]> = [
  ['id', (u) => u.id],
  ['email', (u) => u.email],
  ['roleId', (u) => u.roleId],
  ['disabled', (u) => u.disabled],
  ['lockedUntil', (u) => u.lockedUntil],
];

const shown = (inv: Invocation, data: object) => {
  print(inv, data, () => record(data as Record<string, unknown>));
  return EXIT.ok;
};

/** `--permission a --permission b,c` as one list. */
/** The --permission values; a usage error naming the unknown ones and the valid ones near them. */
function permissionsOf(inv: Invocation): string[] {
  const permissions = ((inv.values.permission as string[] | undefined) ?? [])
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = unknownPermissions(permissions);
  if (unknown) throw new UsageError(unknown);
  return permissions;
}

const tenantAction = (name: 'suspend' | 'resume', summary: string): Command => ({
  name,
  summary,
  args: ['<id>'],
  run: async (inv) =>
    shown(
      inv,
      await connect(inv).api[name === 'suspend' ? 'suspendTenant' : 'resumeTenant']({
        id: inv.args[0],
      }),
    ),
});

export const tenantsCommand: Command = {
  name: 'tenants',
  summary: 'Tenants of the platform (platform administrators)',
  subcommands: [
    {
      name: 'list',
      summary: 'List tenants',
      options: PAGE_OPTIONS,
      run: async (inv) =>
        printPage(inv, await connect(inv).api.listTenants({ query: pageOf(inv) }), TENANT_COLUMNS),
    },
    {
      name: 'create',
      summary: 'Create a tenant',
      args: ['<name>'],
      run: async (inv) =>
        shown(inv, await connect(inv).api.createTenant({ body: { name: inv.args[0] } })),
    },
    {
      name: 'show',
      summary: 'Show a tenant',
      args: ['<id>'],
      run: async (inv) => shown(inv, await connect(inv).api.getTenant({ id: inv.args[0] })),
    },
    tenantAction('suspend', 'Suspend a tenant: its workloads can no longer log in'),
    tenantAction('resume', 'Resume a suspended tenant'),
  ],
};

const workloadAction = (name: 'disable' | 'enable', summary: string): Command => ({
  name,
  summary,
  args: ['<id>'],
  run: async (inv) => {
    const c = connect(inv);
    return shown(
      inv,
      await c.api[name === 'disable' ? 'disableWorkload' : 'enableWorkload']({
        tenantId: c.tenantId,
        id: inv.args[0],
      }),
    );
  },
});

const ACCESS_KEY_COLUMNS: Array<[string, (k: AccessKey) => unknown]> = [
  ['accessKeyId', (k) => k.accessKeyId],
  ['createdAt', (k) => k.createdAt],
];

/** `keyward workloads access-keys ...`: the SigV4 credentials of the AWS KMS API. */
const accessKeysCommand: Command = {
  name: 'access-keys',
  summary: "A workload's AWS access keys, for AWS CLIs and SDKs (the AWS KMS API)",
  subcommands: [
    {
      name: 'list',
      summary: "List a workload's access keys (never their secrets)",
      args: ['<workloadId>'],
      run: async (inv) => {
        const c = connect(inv);
        const page = await c.api.listAccessKeys({ tenantId: c.tenantId, id: inv.args[0] });
        print(inv, page, () => table(page.items, ACCESS_KEY_COLUMNS));
        return EXIT.ok;
      },
    },
    {
      name: 'create',
      summary: 'Create an access key; its secret is shown once, here',
      args: ['<workloadId>'],
      async run(inv) {
        const c = connect(inv);
        const key = await c.api.createAccessKey({
          tenantId: c.tenantId,
          id: inv.args[0],
          body: {},
        });
        inv.stderr.write(
          'The secret access key is shown only now: store it (e.g. as AWS_SECRET_ACCESS_KEY in a secret manager) before closing this terminal.\n',
        );
        return shown(inv, key);
      },
    },
    {
      name: 'delete',
      summary: 'Revoke an access key on every instance',
      args: ['<workloadId>', '<accessKeyId>'],
      async run(inv) {
        const c = connect(inv);
        await c.api.deleteAccessKey({
          tenantId: c.tenantId,
          id: inv.args[0],
          accessKeyId: inv.args[1],
        });
        return shown(inv, { accessKeyId: inv.args[1], deleted: true });
      },
    },
  ],
};

/** Where the client secret comes from: the CLI never knows it, so it names it. */
const CLIENT_SECRET_SOURCE =
  'the one shown once when the workload was created (`keyward workloads create`) or its secret rotated (`keyward workloads rotate-secret`); Keyward cannot show it again';

/**
 * How a workload connects through each API the service speaks, with its own names filled in: the
 * Core API's token endpoint (client_credentials), the AWS KMS API (SigV4 access keys) and the
 * Vault Transit API at the tenant's mounts (AppRole login). The same content as the web console's
 * Connect card. `mounts` is null when this login may not read the tenant's policy: the default
 * mount is shown and said to be the default. It names the client secret, never holds it.
 */
function connectionOf(
  origin: string,
  tenantId: string,
  w: Pick<Workload, 'id' | 'name' | 'clientId'>,
  mounts: string[] | null,
) {
  const shown = mounts ?? ['transit'];
  return {
    workload: { id: w.id, name: w.name, clientId: w.clientId, tenantId },
    clientSecret: CLIENT_SECRET_SOURCE,
    coreApi: {
      tokenEndpoint: `POST ${origin}/api/v3/auth/token`,
      form: `grant_type=client_credentials&client_id=${w.clientId}&client_secret=<client secret>`,
      then: `Authorization: Bearer <access_token> on ${origin}/api/v3/crypto/…`,
    },
    awsKms: {
      endpoint: `${origin}/`,
      awsCli: `aws --endpoint-url ${origin} kms …`,
      accessKeys: `keyward workloads access-keys create ${w.id} --tenant ${tenantId}`,
      accessKeysApi: `POST ${origin}/api/v3/admin/tenants/${tenantId}/workloads/${w.id}/access-keys`,
      regions: 'any, unless the service lists them (AWS_KMS_REGIONS)',
    },
    vaultTransit: {
      vaultAddr: origin,
      mounts: shown,
      mountsFrom: mounts ? 'policy' : 'default',
      appRoleLogin: `POST ${origin}/v1/auth/approle/login`,
      body: { role_id: w.clientId, secret_id: '<client secret>' },
      token:
        'auth.client_token of the answer, in X-Vault-Token; it is not renewable, so log in again before lease_duration ends',
      sopsKeyUrl: `${origin}/v1/${shown[0]}/keys/<key name>`,
    },
  };
}

/** The human view of connectionOf: a short section per API. */
function connectionText(c: ReturnType<typeof connectionOf>): string {
  const section = (title: string, fields: Record<string, string>) =>
    `${title}\n${record(fields).replace(/^(?=.)/gm, '  ')}`;
  const v = c.vaultTransit;
  return [
    `Connect ${c.workload.name} (workload ${c.workload.id}, tenant ${c.workload.tenantId})`,
    `The client secret is ${c.clientSecret}.\n`,
    section('Core API', {
      'Token endpoint': c.coreApi.tokenEndpoint,
      Form: c.coreApi.form,
      Then: c.coreApi.then,
    }),
    section('AWS KMS API', {
      Endpoint: c.awsKms.endpoint,
      'AWS CLI': c.awsKms.awsCli,
      'Access keys': `${c.awsKms.accessKeys} (its secret shown once), or ${c.awsKms.accessKeysApi}`,
      Regions: c.awsKms.regions,
    }),
    section('Vault Transit API', {
      VAULT_ADDR: v.vaultAddr,
      [v.mounts.length === 1 ? 'Mount' : 'Mounts']:
        `${v.mounts.map((m) => `/v1/${m}/`).join(', ')}${
          v.mountsFrom === 'default'
            ? " (the default; this login cannot read the tenant's policy, where other mounts are set)"
            : ''
        }`,
      'AppRole login': v.appRoleLogin,
      Body: `${JSON.stringify(v.body)} (role_id is the workload's client id, secret_id its client secret)`,
      Token: v.token,
      'SOPS key URL': v.sopsKeyUrl,
    }),
  ].join('\n');
}

/** `keyward workloads connect`: how the workload reaches each API. */
const connectWorkloadCommand: Command = {
  name: 'connect',
  summary:
    'How a workload connects through each API: Core, AWS KMS, Vault Transit (never a secret)',
  args: ['<workloadId>'],
  async run(inv) {
    const c = connect(inv);
    const w = await c.api.getWorkload({ tenantId: c.tenantId, id: inv.args[0] });
    // A login that may manage workloads but not read the policy still gets the rest: the default mount.
    const mounts = await c.api.getEffectivePolicy({ tenantId: c.tenantId }).then(
      (answer) => answer.policy.vaultTransitMounts,
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 403) return null;
        throw err;
      },
    );
    const connection = connectionOf(c.client.url, c.tenantId, w, mounts);
    print(inv, connection, () => connectionText(connection));
    return EXIT.ok;
  },
};

export const workloadsCommand: Command = {
  name: 'workloads',
  summary: 'Workloads (applications) of a tenant',
  subcommands: [
    {
      name: 'list',
      summary: 'List workloads (never their secrets)',
      options: PAGE_OPTIONS,
      run: async (inv) => {
        const c = connect(inv);
        return printPage(
          inv,
          await c.api.listWorkloads({ tenantId: c.tenantId, query: pageOf(inv) }),
          WORKLOAD_COLUMNS,
        );
      },
    },
    {
      name: 'create',
      summary: 'Register a workload; its client secret is shown once, here',
      args: ['<name>'],
      options: {
        role: { type: 'string', value: '<roleId>', help: 'the role of the workload (required)' },
      },
      async run(inv) {
        const roleId = str(inv.values, 'role');
        if (!roleId) throw new UsageError('workloads create needs --role <roleId>');
        const c = connect(inv);
        const w = await c.api.createWorkload({
          tenantId: c.tenantId,
          body: { name: inv.args[0], roleId },
        });
        inv.stderr.write(
          'The client secret is shown only now: store it (e.g. in a secret manager) before closing this terminal.\n',
        );
        return shown(inv, w);
      },
    },
    accessKeysCommand,
    connectWorkloadCommand,
    workloadAction('disable', 'Disable a workload: its logins answer invalid_client'),
    workloadAction('enable', 'Enable a disabled workload'),
    {
      name: 'rotate-secret',
      summary:
        'Issue a new client secret (shown once); the old one stays valid for the grace period',
      args: ['<id>'],
      options: {
        'grace-seconds': {
          type: 'string',
          value: '<n>',
          help: 'how long the previous secret stays valid (0 to 2592000)',
        },
      },
      async run(inv) {
        const graceSeconds = int(inv.values, 'grace-seconds', 0, 2_592_000);
        const c = connect(inv);
        const answer = await c.api.rotateWorkloadSecret({
          tenantId: c.tenantId,
          id: inv.args[0],
          body: graceSeconds === undefined ? {} : { graceSeconds },
        });
        inv.stderr.write(
          'The new client secret is shown only now: store it before closing this terminal.\n',
        );
        return shown(inv, answer);
      },
    },
  ],
};

const PERMISSION: OptionDef = {
  type: 'string',
  multiple: true,
  value: '<permission>',
  help: 'a catalogue permission (or a comma-separated list); `keyward permissions` lists them',
};

export const rolesCommand: Command = {
  name: 'roles',
  summary: 'Roles (sets of catalogue permissions) of a tenant',
  subcommands: [
    {
      name: 'list',
      summary: 'List roles',
      options: PAGE_OPTIONS,
      run: async (inv) => {
        const c = connect(inv);
        return printPage(
          inv,
          await c.api.listRoles({ tenantId: c.tenantId, query: pageOf(inv) }),
          ROLE_COLUMNS,
        );
      },
    },
    {
      name: 'create',
      summary: 'Create a role',
      args: ['<name>'],
      options: { permission: PERMISSION },
      async run(inv) {
        const permissions = permissionsOf(inv);
        if (permissions.length === 0)
          throw new UsageError('roles create needs at least one --permission');
        const c = connect(inv);
        return shown(
          inv,
          await c.api.createRole({
            tenantId: c.tenantId,
            body: { name: inv.args[0], permissions },
          }),
        );
      },
    },
    {
      name: 'update',
      summary: 'Rename a role or replace its permissions',
      args: ['<id>'],
      options: {
        name: { type: 'string', value: '<name>', help: 'the new name' },
        permission: {
          ...PERMISSION,
          help: 'the new permissions (all of them; replaces the old list)',
        },
      },
      async run(inv) {
        const permissions = permissionsOf(inv);
        const body = {
          ...(str(inv.values, 'name') ? { name: str(inv.values, 'name') } : {}),
          ...(permissions.length ? { permissions } : {}),
        };
        if (Object.keys(body).length === 0)
          throw new UsageError('roles update needs --name or --permission');
        const c = connect(inv);
        return shown(inv, await c.api.updateRole({ tenantId: c.tenantId, id: inv.args[0], body }));
      },
    },
  ],
};

export const usersCommand: Command = {
  name: 'users',
  summary: 'People (password logins) of a tenant',
  subcommands: [
    {
      name: 'list',
      summary: 'List users (never passwords)',
      options: PAGE_OPTIONS,
      run: async (inv) => {
        const c = connect(inv);
        return printPage(
          inv,
          await c.api.listUsers({ tenantId: c.tenantId, query: pageOf(inv) }),
          USER_COLUMNS,
        );
      },
    },
    {
      name: 'create',
      summary: 'Create a user; the password comes from KEYWARD_USER_PASSWORD or stdin',
      args: ['<email>'],
      options: { role: { type: 'string', value: '<roleId>', help: "the user's role (required)" } },
      async run(inv) {
        const roleId = str(inv.values, 'role');
        if (!roleId) throw new UsageError('users create needs --role <roleId>');
        const password = await readSecret(
          undefined,
          'KEYWARD_USER_PASSWORD',
          "the new user's password",
        );
        const c = connect(inv);
        return shown(
          inv,
          await c.api.createUser({
            tenantId: c.tenantId,
            body: { email: inv.args[0], password, roleId },
          }),
        );
      },
    },
    {
      name: 'update',
      summary: "Change a user's role, or disable or enable it",
      args: ['<id>'],
      options: {
        role: { type: 'string', value: '<roleId>', help: 'the new role' },
        disable: { type: 'boolean', help: 'disable the user' },
        enable: { type: 'boolean', help: 'enable the user' },
      },
      async run(inv) {
        if (inv.values.disable && inv.values.enable)
          throw new UsageError('give --disable or --enable, not both');
        const body = {
          ...(str(inv.values, 'role') ? { roleId: str(inv.values, 'role') } : {}),
          ...(inv.values.disable
            ? { disabled: true }
            : inv.values.enable
              ? { disabled: false }
              : {}),
        };
        if (Object.keys(body).length === 0)
          throw new UsageError('users update needs --role, --disable or --enable');
        const c = connect(inv);
        return shown(inv, await c.api.updateUser({ tenantId: c.tenantId, id: inv.args[0], body }));
      },
    },
  ],
};
