/**
 * The commands of `keyward`, by name and summary, each loaded when the command line reaches it
 * (Command.load): `keyward --help` and `--version` import no command module, and a command loads
 * only its own (the whole tree took about a second of type stripping on every call).
 */
import { requireNode, type Command } from '../command.ts';

type Loader = () => Promise<Command | Command[]>;

/** A command known by name and summary until the command line reaches it. */
const lazy = (name: string, summary: string, load: Loader): Command => ({
  name,
  summary,
  load: async () => {
    const loaded = await load();
    const cmd = Array.isArray(loaded) ? loaded.find((c) => c.name === name) : loaded;
    if (!cmd) throw new Error(`keyward: the module of ${name} does not define it`);
    return cmd;
  },
});

const session = () => import('./session.ts').then((m) => m.sessionCommands);
const admin = () => import('./admin.ts');
const crypto = () => import('./crypto.ts').then((m) => m.cryptoCommands);

/** The commands, in the order `keyward --help` lists them. */
export const COMMANDS: Command[] = [
  lazy('login', 'Log in and cache the token in a private file', session),
  lazy('logout', 'Revoke the cached tokens (RFC 7009) and forget the login', session),
  lazy('whoami', 'Show the cached login (never the token)', session),
  lazy('tenants', 'Tenants of the platform (platform administrators)', () =>
    admin().then((m) => m.tenantsCommand),
  ),
  lazy('workloads', 'Workloads (applications) of a tenant', () =>
    admin().then((m) => m.workloadsCommand),
  ),
  lazy('roles', 'Roles (sets of catalogue permissions) of a tenant', () =>
    admin().then((m) => m.rolesCommand),
  ),
  lazy('users', 'People (password logins) of a tenant', () => admin().then((m) => m.usersCommand)),
  lazy('admin', 'Platform administration (a platform administrator login)', () =>
    import('./platform.ts').then((m) => m.adminCommand),
  ),
  lazy(
    'backup',
    'Write an encrypted snapshot of all state to a file (passphrase: KEYWARD_BACKUP_PASSPHRASE or a prompt)',
    () => import('./backup.ts').then((m) => m.backupCommand),
  ),
  lazy(
    'restore',
    'Restore a backup into an empty database, the service stopped (checks the whole file first)',
    () => import('./backup.ts').then((m) => m.restoreCommand),
  ),
  lazy('permissions', 'The permission catalogue, one permission a line (no login needed)', () =>
    import('./permissions.ts').then((m) => m.permissionsCommand),
  ),
  lazy(
    'keys',
    'Keys of a tenant: create, list, rotate, change state, import, settings, public keys',
    () => import('./keys.ts').then((m) => m.keysCommand),
  ),
  lazy('encrypt', 'Encrypt a file of any size under the key’s newest version', crypto),
  lazy('decrypt', 'Decrypt what `keyward encrypt` wrote (the key and version are in it)', crypto),
  lazy(
    're-encrypt',
    'Re-encrypt what `keyward encrypt` wrote under the newest version, or another key, without the plaintext leaving the service',
    crypto,
  ),
  lazy(
    'sign',
    'Sign a file (or a precomputed digest with --digest); the signature is written in base64',
    crypto,
  ),
  lazy(
    'verify',
    'Verify a signature of a file with any retained version; exit 4 when it does not verify',
    crypto,
  ),
  lazy(
    'data-key',
    'A fresh data key for envelope encryption: in clear (base64) and wrapped as a JWE under the key',
    crypto,
  ),
  lazy('mac', 'HMAC of a file with an HMAC key', crypto),
  lazy('random', "Random bytes from the service's CSPRNG, in base64", crypto),
  lazy('audit', "The tenant's hash-chained audit log", crypto),
  lazy(
    'open',
    'Decrypt a conversion result (JWE) locally with jose; exit 4 when it does not open',
    () => {
      requireNode(24, 'keyward open');
      return import('./local-jose.ts').then((m) => m.localJoseCommands);
    },
  ),
  lazy(
    'kms-plugin',
    'Serve the Kubernetes KMS v2 plugin API on a unix socket, sealing with a Keyward key',
    () => import('./kms-plugin.ts').then((m) => m.kmsPluginCommand),
  ),
  lazy(
    'migrate',
    'Convert a directory or bucket prefix of PKCS#7/CMS files to JOSE through the service',
    () => import('./migration.ts').then((m) => m.migrateCommand),
  ),
  lazy(
    'verify-manifest',
    "Check a migration's signed manifest offline: signature, every row's proof, every output's digest",
    () => import('./manifest.ts').then((m) => m.verifyManifestCommand),
  ),
  lazy(
    'analyze',
    'Ask the service what a PKCS#7/CMS file holds and whether it converts (JSON)',
    () => import('./migration.ts').then((m) => m.analyzeCommand),
  ),
];
