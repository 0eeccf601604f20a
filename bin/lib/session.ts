/**
 * `keyward login` sessions: the tokens the CLI obtained, cached per profile in one private file
 * (`$KEYWARD_CONFIG_DIR/credentials.json`, default `~/.config/keyward/`, directory 0700, file
 * 0600, written whole through a temp file), renewed with the refresh token when expired. Secrets
 * and passwords are never stored: a client_credentials session (no refresh token, RFC 6749
 * section 4.4.3) is renewed from KEYWARD_CLIENT_SECRET when set, else asks for a new login.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { callAnonymous, operations, type TokenAnswer, type TokenRequest } from './api-client.ts';
import { ApiError, RENEW_MARGIN_MS, tenantOfToken, type TokenSource } from './client.ts';
import { writeWhole } from './files.ts';

/** What one login keeps. */
export interface Profile {
  url: string;
  grant: 'client_credentials' | 'password';
  /** The workload's client id, or the user's e-mail. */
  subject: string;
  tenantId: string;
  accessToken: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  refreshToken?: string;
}

interface CredentialsFile {
  version: 1;
  profiles: Record<string, Profile>;
}

/** A session problem the user fixes by logging in (exit code 2 when there is no session at all). */
export class SessionError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'SessionError';
    this.exitCode = exitCode;
  }
}

/** The directory of the credentials file. */
function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KEYWARD_CONFIG_DIR) return env.KEYWARD_CONFIG_DIR;
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'keyward');
}

/** The credentials file: profiles by name. */
export class CredentialStore {
  readonly file: string;
  readonly #dir: string;

  constructor(dir: string = configDir()) {
    this.#dir = dir;
    this.file = join(dir, 'credentials.json');
  }

  #read(): CredentialsFile {
    if (!existsSync(this.file)) return { version: 1, profiles: {} };
    const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as CredentialsFile;
    return parsed?.version === 1 && parsed.profiles && typeof parsed.profiles === 'object'
      ? parsed
      : { version: 1, profiles: {} };
  }

  async #write(data: CredentialsFile): Promise<void> {
    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    await writeWhole(this.file, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  }

  get(name: string): Profile | null {
    const { profiles } = this.#read();
    // The profile name comes from the command line: never index the plain object without hasOwn.
    return Object.hasOwn(profiles, name) ? profiles[name] : null;
  }

  async put(name: string, profile: Profile): Promise<void> {
    const data = this.#read();
    data.profiles = Object.fromEntries([
      ...Object.entries(data.profiles).filter(([n]) => n !== name),
      [name, profile],
    ]);
    await this.#write(data);
  }

  async remove(name: string): Promise<boolean> {
    const data = this.#read();
    if (!Object.hasOwn(data.profiles, name)) return false;
    data.profiles = Object.fromEntries(Object.entries(data.profiles).filter(([n]) => n !== name));
    if (Object.keys(data.profiles).length === 0) rmSync(this.file, { force: true });
    else await this.#write(data);
    return true;
  }
}

function profileOf(
  url: string,
  request: TokenRequest,
  answer: TokenAnswer,
  now: number,
  keep?: Profile,
): Profile {
  return {
    url,
    grant: request.grant_type === 'refresh_token' ? keep!.grant : request.grant_type,
    subject:
      request.grant_type === 'client_credentials'
        ? request.client_id
        : request.grant_type === 'password'
          ? request.username
          : keep!.subject,
    tenantId: tenantOfToken(answer.access_token) || keep?.tenantId || '',
    accessToken: answer.access_token,
    expiresAt: now + Number(answer.expires_in ?? 0) * 1000,
    ...(answer.refresh_token ? { refreshToken: answer.refresh_token } : {}),
  };
}

/** Obtains tokens with a grant and saves them as `name`. */
export async function login(
  store: CredentialStore,
  name: string,
  url: string,
  request: TokenRequest,
  now = Date.now(),
): Promise<Profile> {
  const answer = (await callAnonymous(url, operations.token, { body: request })) as TokenAnswer;
  const profile = profileOf(url.replace(/\/+$/, ''), request, answer, now);
  await store.put(name, profile);
  return profile;
}

/** Revokes the session's tokens (RFC 7009, best effort: the service may be gone) and forgets them. */
export async function logout(store: CredentialStore, name: string): Promise<boolean> {
  const profile = store.get(name);
  if (!profile) return false;
  const revoke = (token: string, hint: 'access_token' | 'refresh_token') =>
    callAnonymous(profile.url, operations.revokeToken, {
      body: { token, token_type_hint: hint },
    }).catch(() => undefined);
  if (profile.refreshToken) await revoke(profile.refreshToken, 'refresh_token');
  await revoke(profile.accessToken, 'access_token');
  return store.remove(name);
}

/** A saved profile as a token source, renewing (and saving) when the token is within the margin of expiry or refused. */
export class Session implements TokenSource {
  readonly name: string;
  readonly #store: CredentialStore;
  readonly #now: () => number;
  profile: Profile;

  constructor(store: CredentialStore, name: string, now: () => number = Date.now) {
    const profile = store.get(name);
    if (!profile) throw new SessionError(`not logged in (profile ${name}): run keyward login`, 2);
    this.#store = store;
    this.name = name;
    this.profile = profile;
    this.#now = now;
  }

  async token(force: boolean): Promise<string> {
    const p = this.profile;
    if (!force && this.#now() < p.expiresAt - RENEW_MARGIN_MS) return p.accessToken;
    let request: TokenRequest;
    if (p.refreshToken) request = { grant_type: 'refresh_token', refresh_token: p.refreshToken };
    else if (p.grant === 'client_credentials' && process.env.KEYWARD_CLIENT_SECRET)
      request = {
        grant_type: 'client_credentials',
        client_id: p.subject,
        client_secret: process.env.KEYWARD_CLIENT_SECRET,
      };
    else
      throw new SessionError(
        `the session of profile ${this.name} has expired: run keyward login again`,
      );
    try {
      const answer = (await callAnonymous(p.url, operations.token, {
        body: request,
      })) as TokenAnswer;
      this.profile = profileOf(p.url, request, answer, this.#now(), p);
    } catch (err) {
      // A used, revoked or expired refresh token: only a new login helps (RFC 6749 section 5.2 invalid_grant).
      if (err instanceof ApiError && err.status < 500)
        throw new SessionError(
          `the session of profile ${this.name} can no longer be renewed (${err.slug}): run keyward login again`,
        );
      throw err;
    }
    await this.#store.put(this.name, this.profile);
    return this.profile.accessToken;
  }
}
