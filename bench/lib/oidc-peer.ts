/**
 * panva's oidc-provider 9 as a peer for the token endpoint. It is no dependency of
 * the project: it is installed on demand into a cache directory outside the repository
 * (~/.cache/keyward-bench/oidc-provider-9, or $KEYWARD_BENCH_CACHE/oidc-provider-9), reused when
 * present, and run as a child process on the bench's own Node (bench/lib/oidc-peer-server.ts).
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cleanEnv, freePort, startChild, type Child } from './process.ts';

const INSTALL_TIMEOUT_MS = 180_000;
const here = new URL('.', import.meta.url).pathname;

/** The directory holding node_modules/oidc-provider. */
function cacheDir(): string {
  const base = process.env.KEYWARD_BENCH_CACHE ?? join(homedir(), '.cache', 'keyward-bench');
  return join(base, 'oidc-provider-9');
}

function installedVersion(dir: string): string | null {
  const pkg = join(dir, 'node_modules', 'oidc-provider', 'package.json');
  if (!existsSync(pkg)) return null;
  const { version } = JSON.parse(readFileSync(pkg, 'utf8')) as { version: string };
  return version.startsWith('9.') ? version : null;
}

/** npm's error code (ECONNREFUSED, ENOTFOUND, E404...) from its stderr, when it names one. */
const npmErrorCode = (stderr: string) =>
  /npm error code (\S+)/.exec(stderr)?.[1] ?? /code: '([^']+)'/.exec(stderr)?.[1];

/** Where an install stands: the module directory and version, or why there is none. */
export type PeerInstall =
  | { ok: true; dir: string; version: string; installSeconds: number | null }
  | { ok: false; reason: string };

/**
 * oidc-provider@9 from the cache, installed first when absent (npm into a scratch directory
 * renamed into place, so an interrupted install never looks present). Never throws: a failed
 * install (no network) is a reason to skip the comparison, not the bench.
 */
export async function ensurePeer(): Promise<PeerInstall> {
  const dir = cacheDir();
  const present = installedVersion(dir);
  if (present) return { ok: true, dir, version: present, installSeconds: null };
  mkdirSync(dirname(dir), { recursive: true });
  const scratch = `${dir}.installing-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch);
  const started = performance.now();
  // One retry: without a network npm would otherwise spend minutes backing off.
  const args = [
    'install',
    '--prefix',
    scratch,
    '--no-audit',
    '--no-fund',
    '--fetch-retries=1',
    'oidc-provider@9',
  ];
  const failure = await new Promise<string | null>((resolve) => {
    // cwd outside the project, so its .npmrc and package.json play no part.
    execFile('npm', args, { cwd: scratch, timeout: INSTALL_TIMEOUT_MS }, (err, _out, stderr) =>
      resolve(err ? `npm install oidc-provider@9: ${npmErrorCode(stderr) ?? err.message}` : null),
    );
  });
  const installSeconds = (performance.now() - started) / 1000;
  const version = failure ? null : installedVersion(scratch);
  if (!version) {
    rmSync(scratch, { recursive: true, force: true });
    const why = failure ?? 'npm finished but left no oidc-provider 9';
    return { ok: false, reason: `${why} (after ${installSeconds.toFixed(1)} s)` };
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(scratch, dir);
  return { ok: true, dir, version, installSeconds };
}

/** One client of the peer, authenticated by client_secret_post like Keyward's workloads. */
export interface PeerClient {
  clientId: string;
  clientSecret: string;
}

export interface PeerInstance {
  url: string;
  tokenUrl: string;
  jwksUrl: string;
  /** The resource indicator its access tokens are issued for (their `aud`). */
  resource: string;
  child: Child;
  stop(): Promise<void>;
}

/** The resource server whose JWT access tokens the peer issues. */
const RESOURCE = 'https://keyward.bench/api/v3';

/** Starts the peer on a free port with these clients; waits until its discovery answers. */
export async function startPeer(
  install: { dir: string },
  clients: PeerClient[],
  scope: string,
): Promise<PeerInstance> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configDir = mkdtempSync(join(tmpdir(), 'keyward-bench-peer-'));
  const config = join(configDir, 'config.json');
  writeFileSync(config, JSON.stringify({ issuer: url, resource: RESOURCE, scope, clients }));
  try {
    const child = await startChild(
      [join(here, 'oidc-peer-server.ts'), String(port), install.dir, config],
      // NODE_ENV=production: the provider's development-only checks and warnings stay off.
      cleanEnv({ NODE_ENV: 'production' }),
      `${url}/.well-known/openid-configuration`,
      30_000,
    );
    return {
      url,
      tokenUrl: `${url}/token`,
      jwksUrl: `${url}/jwks`,
      resource: RESOURCE,
      child,
      async stop() {
        await child.stop();
        rmSync(configDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(configDir, { recursive: true, force: true });
    throw err;
  }
}
