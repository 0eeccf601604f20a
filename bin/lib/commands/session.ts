/**
 * `keyward login`, `logout` and `whoami`, and `connect()`: the typed API over the saved login
 * that every other command uses; `workloadClient()`, the client of the commands a workload runs
 * unattended (migrate, analyze, kms-plugin), from a login or from credentials in the environment.
 */
import { readFileSync } from 'node:fs';
import { createApi, type Api } from '../api-client.ts';
import { ApiError, KeywardClient, type ClientOptions } from '../client.ts';
import {
  EXIT,
  UsageError,
  print,
  readSecret,
  record,
  str,
  type Command,
  type Invocation,
} from '../command.ts';
import { CredentialStore, Session, SessionError, login, logout, type Profile } from '../session.ts';

/** The profile an invocation names: --profile, else KEYWARD_PROFILE, else "default". */
export const profileName = (inv: Invocation) =>
  (str(inv.values, 'profile') ?? process.env.KEYWARD_PROFILE) || 'default';

/** The tenant the command line names: --tenant, else KEYWARD_TENANT; undefined when neither. */
export const requestedTenant = (inv: Invocation): string | undefined =>
  str(inv.values, 'tenant') || process.env.KEYWARD_TENANT || undefined;

/** What a command works with: the typed API of the login, and the tenant it acts on. */
export interface Connection {
  api: Api;
  /** The HTTP client under the API, for the streaming calls the typed table does not cover. */
  client: KeywardClient;
  session: Session;
  /** `--tenant`, else KEYWARD_TENANT, else the login's tenant. */
  tenantId: string;
}

/** The saved login of `--profile` as a typed API (`timeoutMs`: the deadline of each request). */
export function connect(inv: Invocation, extra: Pick<ClientOptions, 'timeoutMs'> = {}): Connection {
  const session = new Session(new CredentialStore(), profileName(inv));
  const url = str(inv.values, 'url');
  if (url && url.replace(/\/+$/, '') !== session.profile.url)
    throw new UsageError(
      `profile ${session.name} is logged in to ${session.profile.url}, not ${url}: log in to ${url} with another --profile`,
    );
  const tenant = requestedTenant(inv);
  const client = new KeywardClient({
    url: session.profile.url,
    tokens: session,
    tenant,
    command: `keyward ${inv.path}`,
    ...extra,
  });
  return { api: createApi(client), client, session, tenantId: tenant ?? session.profile.tenantId };
}

/**
 * The workload's client secret from the environment: KEYWARD_CLIENT_SECRET, else the first line
 * of the file KEYWARD_CLIENT_SECRET_FILE names (a mounted secret: a static pod can pass a file but
 * no Secret). Undefined when neither is set.
 */
function clientSecretFromEnv(): string | undefined {
  if (process.env.KEYWARD_CLIENT_SECRET) return process.env.KEYWARD_CLIENT_SECRET;
  const file = process.env.KEYWARD_CLIENT_SECRET_FILE;
  if (!file) return undefined;
  const secret = readFileSync(file, 'utf8').split(/\r?\n/)[0];
  if (!secret) throw new UsageError(`KEYWARD_CLIENT_SECRET_FILE names ${file}, which is empty`);
  return secret;
}

/**
 * The client of the commands a workload runs unattended (migrate, analyze, kms-plugin): the saved
 * login of --profile when given; else a workload's client credentials when KEYWARD_CLIENT_ID (or
 * --client-id) is set, the secret from KEYWARD_CLIENT_SECRET or KEYWARD_CLIENT_SECRET_FILE (never
 * an argument: a command line is visible to other users); else the saved login of KEYWARD_PROFILE
 * or "default", as every other command uses.
 */
export function workloadClient(
  inv: Invocation,
  extra: Pick<ClientOptions, 'timeoutMs'> = {},
): KeywardClient {
  if (str(inv.values, 'profile') !== undefined) return connect(inv, extra).client;
  const clientId = str(inv.values, 'client-id') ?? process.env.KEYWARD_CLIENT_ID;
  if (clientId) {
    const url = str(inv.values, 'url') ?? process.env.KEYWARD_URL;
    const clientSecret = clientSecretFromEnv();
    if (!url) throw new UsageError('the service URL is missing: --url or KEYWARD_URL');
    if (!clientSecret)
      throw new UsageError(
        'the client secret is missing: set KEYWARD_CLIENT_SECRET (or KEYWARD_CLIENT_SECRET_FILE), or log in with `keyward login --client-id` and use --profile',
      );
    return new KeywardClient({
      url,
      clientId,
      clientSecret,
      tenant: requestedTenant(inv),
      command: `keyward ${inv.path}`,
      ...extra,
    });
  }
  if (new CredentialStore().get(profileName(inv)) === null)
    throw new UsageError(
      `not logged in (profile ${profileName(inv)}) and no credentials in the environment: run \`keyward login --client-id <id>\` (then --profile), or set KEYWARD_URL, KEYWARD_CLIENT_ID and KEYWARD_CLIENT_SECRET`,
    );
  return connect(inv, extra).client;
}

/** The --client-id option of the commands that take workloadClient's credentials. */
export const WORKLOAD_OPTIONS = {
  'client-id': {
    type: 'string',
    value: '<id>',
    help: 'workload client id (env KEYWARD_CLIENT_ID; the secret from KEYWARD_CLIENT_SECRET or KEYWARD_CLIENT_SECRET_FILE); without it, the login of --profile',
  },
} as const;

/** A login as shown: never a token. */
const view = (name: string, p: Profile) => ({
  profile: name,
  url: p.url,
  grant: p.grant,
  subject: p.subject,
  tenantId: p.tenantId,
  expiresAt: new Date(p.expiresAt).toISOString(),
  renewable: Boolean(p.refreshToken),
});

export const sessionCommands: Command[] = [
  {
    name: 'login',
    summary: 'Log in and cache the token in a private file',
    details: [
      'A workload logs in with client credentials: --client-id (or KEYWARD_CLIENT_ID), the secret from',
      'KEYWARD_CLIENT_SECRET or stdin. A person logs in with the password grant: --email, --tenant, the',
      'password from KEYWARD_PASSWORD or stdin (a prompt without echo on a terminal). Admin commands need',
      "a person's login (service-admin); crypto and audit commands a workload's (service-core).",
      'Tokens are kept in $KEYWARD_CONFIG_DIR/credentials.json (default ~/.config/keyward/, mode 0600),',
      'one entry per --profile, and renewed with the refresh token when they expire.',
    ].join('\n'),
    options: {
      'client-id': {
        type: 'string',
        value: '<id>',
        help: 'workload client id (client_credentials)',
      },
      email: {
        type: 'string',
        value: '<email>',
        help: 'user e-mail (password grant, with --tenant)',
      },
    },
    async run(inv) {
      const v = inv.values;
      const url = str(v, 'url') ?? process.env.KEYWARD_URL;
      if (!url) throw new UsageError('the service URL is missing: --url or KEYWARD_URL');
      const email = str(v, 'email');
      const clientId = str(v, 'client-id') ?? (email ? undefined : process.env.KEYWARD_CLIENT_ID);
      if (email && clientId) throw new UsageError('give either --client-id or --email, not both');
      const name = profileName(inv);
      const store = new CredentialStore();
      let profile: Profile;
      if (clientId) {
        const secret = await readSecret(undefined, 'KEYWARD_CLIENT_SECRET', 'client secret');
        profile = await login(store, name, url, {
          grant_type: 'client_credentials',
          client_id: clientId,
          client_secret: secret,
        });
        // A workload belongs to one tenant; --tenant naming another would leave later commands
        // acting where the caller did not mean to. Nothing of such a login is kept.
        const named = requestedTenant(inv);
        if (named && named.toLowerCase() !== profile.tenantId.toLowerCase()) {
          await logout(store, name);
          throw new SessionError(
            `client ${clientId} belongs to tenant ${profile.tenantId}, and --tenant/KEYWARD_TENANT names ${named}: log in with a workload of ${named}, or drop --tenant`,
          );
        }
      } else if (email) {
        const tenantId = str(v, 'tenant') ?? process.env.KEYWARD_TENANT;
        if (!tenantId)
          throw new UsageError('the password login needs --tenant (or KEYWARD_TENANT)');
        const password = await readSecret(undefined, 'KEYWARD_PASSWORD', 'password');
        profile = await login(store, name, url, {
          grant_type: 'password',
          username: email,
          password,
          tenant_id: tenantId,
        }).catch((err: unknown) => {
          // The service cannot say which part is wrong (that would tell who has an account
          // where); the most common case is a platform administrator naming the tenant it
          // means to work on instead of its own.
          if (err instanceof ApiError && err.slug === 'invalid_grant')
            throw new SessionError(
              `${err.message} (invalid_grant): the e-mail, the password, or the tenant ${tenantId} is wrong. A user logs in to the tenant it belongs to: a platform administrator to the platform tenant (the id printed at first start), then reaches another tenant's admin commands with --tenant; crypto, audit and migrate act in the login's own tenant and need a workload's login there`,
            );
          throw err;
        });
      } else {
        throw new UsageError('login needs --client-id (or KEYWARD_CLIENT_ID) or --email');
      }
      print(
        inv,
        view(name, profile),
        () =>
          `logged in to ${profile.url} as ${profile.subject} (tenant ${profile.tenantId}), profile ${name}, token valid until ${new Date(profile.expiresAt).toISOString()}\n`,
      );
      return EXIT.ok;
    },
  },
  {
    name: 'logout',
    summary: 'Revoke the cached tokens (RFC 7009) and forget the login',
    async run(inv) {
      const name = profileName(inv);
      const removed = await logout(new CredentialStore(), name);
      print(inv, { profile: name, loggedOut: removed }, () =>
        removed ? `logged out (profile ${name})\n` : `not logged in (profile ${name})\n`,
      );
      return EXIT.ok;
    },
  },
  {
    name: 'whoami',
    local: true,
    summary: 'Show the cached login (never the token)',
    async run(inv) {
      const name = profileName(inv);
      const session = new Session(new CredentialStore(), name);
      const shown = view(name, session.profile);
      print(inv, shown, () => record(shown));
      return EXIT.ok;
    },
  },
];
