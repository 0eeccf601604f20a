/**
 * The CLI's HTTP client: client_credentials authentication, renewing the token 60 s before it
 * expires or when a request answers 401. Request bodies are given as factories so a
 * request refused with 401 can be sent again with a fresh stream. The API's operations are called
 * through bin/lib/api-client.ts.
 */
import { Readable } from 'node:stream';

/** Renew this long before the token's expiry. */
export const RENEW_MARGIN_MS = 60_000;

/** Where a client gets its bearer tokens from when not from its own client_credentials. */
export interface TokenSource {
  /** A valid access token; `force` when the last one was refused (401). */
  token(force: boolean): Promise<string>;
}

export interface ClientOptions {
  url: string;
  /** A workload's credentials (the client renews its token itself), or `tokens`. */
  clientId?: string;
  clientSecret?: string;
  /** The tokens of a `keyward login` session (bin/lib/session.ts). */
  tokens?: TokenSource;
  /**
   * The tenant the command line names (--tenant or KEYWARD_TENANT), when it names one. Requests
   * under /api/v3/admin/tenants/{id}/ carry it in their path; every other request acts in the
   * token's own tenant, and is refused here when that is another one (TenantError).
   */
  tenant?: string;
  /** The command making the requests (`keyward migrate`), named when --tenant is refused. */
  command?: string;
  /**
   * The deadline of each request, token requests included (a long-running caller such as
   * `keyward kms-plugin` must not wait on a service that stopped answering); none by default.
   */
  timeoutMs?: number;
  /** For tests: the clock. */
  now?: () => number;
}

/** The `tenantId` claim of an access token (read to name and check the tenant; the service verifies tokens). */
export function tenantOfToken(token: string): string {
  try {
    const claims = JSON.parse(
      Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'),
    ) as { tenantId?: unknown };
    return typeof claims.tenantId === 'string' ? claims.tenantId : '';
  } catch {
    return '';
  }
}

/** A path whose tenant is in the path itself: the Admin API's tenant-scoped operations. */
const TENANT_IN_PATH = /^\/api\/v3\/admin\/tenants\/([^/?]+)(?:[/?]|$)/;

/**
 * --tenant (or KEYWARD_TENANT) names another tenant than the login's, for an operation that acts
 * in the token's own tenant (crypto, audit, migration, platform): the API cannot act for another
 * tenant there, so nothing is sent (exit 2). docs/cli.md says which commands take --tenant.
 */
export class TenantError extends Error {
  constructor(requested: string, own: string, what: string) {
    super(
      [
        `${what} acts in the tenant of its login (${own}), and --tenant/KEYWARD_TENANT names ${requested}:`,
        `the API does this only for the token's own tenant. Log in as a workload of ${requested}`,
        '(`keyward login --client-id <id> --profile <name>`, then --profile), or drop --tenant.',
      ].join(' '),
    );
    this.name = 'TenantError';
  }
}

/** A failed call, with the problem document (RFC 7807) or OAuth error the service answered. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  constructor(status: number, body: Record<string, unknown>, what: string) {
    super(
      `${what}: ${status} ${String(body.detail ?? body.error_description ?? body.title ?? body.error ?? '')}`.trim(),
    );
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }

  /** The problem slug (the last segment of `type`), or the OAuth error code. */
  get slug(): string {
    return typeof this.body.type === 'string'
      ? this.body.type.split('/').pop()!
      : String(this.body.error ?? this.status);
  }
}

type BodyFactory = () => {
  body: RequestInit['body'] | Readable;
  contentType?: string;
  length?: number;
};

async function parse(res: Response): Promise<Record<string, unknown>> {
  const text = await res.text();
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { detail: text.slice(0, 500) };
  }
}

export class KeywardClient {
  readonly url: string;
  readonly #clientId: string;
  readonly #clientSecret: string;
  readonly #source: TokenSource | null;
  readonly #now: () => number;
  readonly #tenant: string | undefined;
  readonly #command: string | undefined;
  readonly #timeoutMs: number | undefined;
  #token: { value: string; expiresAt: number } | null = null;
  #renewing: Promise<string> | null = null;
  /** How many tokens this client obtained (for the summary and tests). */
  tokensIssued = 0;

  constructor(opts: ClientOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.#clientId = opts.clientId ?? '';
    this.#clientSecret = opts.clientSecret ?? '';
    this.#source = opts.tokens ?? null;
    this.#now = opts.now ?? Date.now;
    this.#tenant = opts.tenant || undefined;
    this.#command = opts.command;
    this.#timeoutMs = opts.timeoutMs;
  }

  /** The signal a request waits under: the caller's, the client's deadline, or both. */
  #deadline(signal?: AbortSignal): AbortSignal | undefined {
    const own = this.#timeoutMs === undefined ? undefined : AbortSignal.timeout(this.#timeoutMs);
    if (own && signal) return AbortSignal.any([own, signal]);
    return own ?? signal;
  }

  /**
   * The one check of --tenant for every request: a path under /admin/tenants/{id}/ acts in the
   * tenant it names; any other acts in the token's tenant, which must then be the one named.
   */
  #checkTenant(path: string, token: string): void {
    if (this.#tenant === undefined || TENANT_IN_PATH.test(path)) return;
    const own = tenantOfToken(token);
    if (own && own.toLowerCase() !== this.#tenant.toLowerCase())
      throw new TenantError(this.#tenant, own, this.#command ?? path.split('?')[0]);
  }

  /** A valid access token, renewed when within the margin of its expiry. */
  async token(force = false): Promise<string> {
    if (this.#source) return this.#source.token(force);
    if (!force && this.#token && this.#now() < this.#token.expiresAt - RENEW_MARGIN_MS)
      return this.#token.value;
    // One renewal at a time, shared by every request waiting for it.
    this.#renewing ??= this.#fetchToken().finally(() => {
      this.#renewing = null;
    });
    return this.#renewing;
  }

  async #fetchToken(): Promise<string> {
    const res = await fetch(`${this.url}/api/v3/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: this.#clientId,
        client_secret: this.#clientSecret,
      }).toString(),
      signal: this.#deadline(),
    });
    const body = await parse(res);
    if (res.status !== 200 || typeof body.access_token !== 'string')
      throw new ApiError(
        res.status,
        body,
        'authentication failed (check KEYWARD_CLIENT_ID and KEYWARD_CLIENT_SECRET)',
      );
    const lifetime = Number(body.expires_in ?? 0) * 1000;
    this.#token = { value: body.access_token, expiresAt: this.#now() + lifetime };
    this.tokensIssued += 1;
    return body.access_token;
  }

  /**
   * Sends a request with the bearer token; on 401 renews the token once and sends it again.
   * `signal` ends the request early (the client's own deadline applies as well).
   */
  async request(
    method: string,
    path: string,
    make?: BodyFactory,
    accept?: string,
    signal?: AbortSignal,
  ): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.token(attempt > 0);
      this.#checkTenant(path, token);
      const made = make?.();
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (made?.contentType) headers['content-type'] = made.contentType;
      if (made?.length !== undefined) headers['content-length'] = String(made.length);
      if (accept) headers.accept = accept;
      const body =
        made?.body instanceof Readable ? (Readable.toWeb(made.body) as ReadableStream) : made?.body;
      const res = await fetch(`${this.url}${path}`, {
        method,
        headers,
        body,
        signal: this.#deadline(signal),
        ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
      } as RequestInit);
      if (res.status === 401 && attempt === 0) {
        await res.body?.cancel();
        if (made?.body instanceof Readable) made.body.destroy();
        continue;
      }
      return res;
    }
  }

  /** Calls a JSON endpoint; throws ApiError unless the status is one of `ok`. */
  async json<T = Record<string, unknown>>(
    method: string,
    path: string,
    json?: unknown,
    ok = [200, 201, 202],
  ): Promise<T> {
    const res = await this.request(
      method,
      path,
      json === undefined
        ? undefined
        : () => ({ body: JSON.stringify(json), contentType: 'application/json' }),
    );
    const body = await parse(res);
    if (!ok.includes(res.status)) throw new ApiError(res.status, body, `${method} ${path}`);
    return body as T;
  }
}
