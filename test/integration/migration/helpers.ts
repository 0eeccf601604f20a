/**
 * What the migration tests share: a running API with a tenant whose keys were imported through
 * the real keystore endpoint, openssl-made CMS files, multipart requests over real HTTP, and the
 * independent checks of the outputs with the jose library.
 */
import { request } from 'node:http';
import { createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { makeTenant, userToken, workloadToken, type TestTenant } from '../../../support/auth.ts';
import {
  OpenSslDir,
  decryptJweParts,
  makeKey,
  parseMultipart,
  protectedOf,
  verifyDetached,
  type Jws,
  type Part,
  type TestKey,
} from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

export { OpenSslDir, makeKey, parseMultipart, protectedOf, verifyDetached };
export type { Jws, Part, TestKey };

export const PERMISSIONS = [
  'admin.keys.import',
  'admin.keys.export-public',
  'migration.analyze',
  'migration.convert',
  'crypto.decrypt',
  'crypto.stream.reencrypt',
  'crypto.stream.resign',
];
export const CONVERT = '/api/v3/migration/stream/convert-pkcs7-to-jose';
export const ANALYZE = '/api/v3/migration/stream/analyze-pkcs7';
export const ANALYZE_ALIAS = '/api/migration/stream/analyze-pkcs7';
export const REENCRYPT = '/api/v3/crypto/stream/reencrypt';
export const RESIGN = '/api/v3/crypto/stream/resign';

/** A tenant with its admin (HUMAN) and workload (APPLICATION) tokens. */
export interface Actor {
  tenant: TestTenant;
  /** service-admin audience: imports keys, analyzes and converts. */
  user: string;
  /** service-core audience: the crypto/stream endpoints (and migration). */
  workload: string;
}

export async function makeActor(app: TestApp, permissions = PERMISSIONS): Promise<Actor> {
  const tenant = await makeTenant(app, permissions);
  return { tenant, user: await userToken(app, tenant), workload: await workloadToken(app, tenant) };
}

export { startTestApp };
export type { TestApp };

/** An HTTP answer read whole; `cut` when the server ended the connection before the body was complete. */
export interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
  cut: boolean;
  json<T = Record<string, unknown>>(): T;
}

async function answer(res: Response): Promise<Answer> {
  const chunks: Buffer[] = [];
  let cut = false;
  try {
    // Read piece by piece so what came before a cut is kept.
    for await (const c of res.body ?? []) chunks.push(Buffer.from(c));
  } catch {
    cut = true;
  }
  const body = Buffer.concat(chunks);
  return {
    status: res.status,
    headers: res.headers,
    body,
    cut,
    json: <T>() => JSON.parse(body.toString()) as T,
  };
}

/** One form part: a string field, or bytes sent as a file part. */
export type FormValue = string | { data: Buffer; type?: string; filename?: string };

/** POSTs multipart/form-data with the parts in the given order. */
export async function postParts(
  app: TestApp,
  path: string,
  token: string,
  parts: Array<[string, FormValue]>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const form = new FormData();
  for (const [name, v] of parts) {
    if (typeof v === 'string') form.append(name, v);
    else
      form.append(
        name,
        new Blob([new Uint8Array(v.data)], { type: v.type ?? 'application/octet-stream' }),
        v.filename ?? name,
      );
  }
  return answer(
    await fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, ...headers },
      body: form,
    }),
  );
}

/** POSTs a raw body with a content type. */
export async function postRaw(
  app: TestApp,
  path: string,
  token: string,
  body: Buffer,
  contentType: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return answer(
    await fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType, ...headers },
      body: new Uint8Array(body),
    }),
  );
}

/**
 * Imports a key with its certificate as a PEM keystore through the real admin endpoint; without
 * `usage` the key gets its type's default (RSA encrypts, EC and Ed25519 sign).
 */
export async function importKey(
  app: TestApp,
  actor: Actor,
  ssl: OpenSslDir,
  key: TestKey,
  usage?: 'sign' | 'encrypt',
): Promise<void> {
  const pem = Buffer.concat([ssl.read(key.keyFile), ssl.read(key.certFile)]);
  const r = await postParts(
    app,
    `/api/v3/admin/tenants/${actor.tenant.tenantId}/keys/import-keystore`,
    actor.user,
    [
      ['keystore', { data: pem, type: 'application/x-pem-file', filename: `${key.kid}.pem` }],
      ['kid', key.kid],
      ...(usage ? [['usage', usage] as [string, FormValue]] : []),
    ],
  );
  if (r.status !== 201)
    throw new Error(`import of ${key.kid} failed: ${r.status} ${r.body.toString()}`);
}

/** An attached SignedData (DER) of the file `data.bin` in `ssl`'s directory, by `key`, made by openssl cms. */
export const signCms = (ssl: OpenSslDir, key: TestKey): Buffer =>
  cms.sign(ssl, 'data.bin', { by: key, binary: true, detached: false, outform: 'DER' });

/** An EnvelopedData (DER, AES-256-CBC) of the file `data.bin` in `ssl`'s directory, for `key`'s certificate, made by openssl cms. */
export const encryptCms = (ssl: OpenSslDir, key: TestKey): Buffer =>
  cms.encrypt(ssl, 'data.bin', {
    to: { recip: key },
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
  });

/** Converts a CMS file with the given metadata (and detached content). */
export function convert(
  app: TestApp,
  token: string,
  file: Buffer,
  metadata: Record<string, unknown> = {},
  content?: Buffer,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const parts: Array<[string, FormValue]> = [
    ['metadata', JSON.stringify(metadata)],
    ['file', { data: file, type: 'application/pkcs7-mime', filename: 'in.p7m' }],
  ];
  if (content) parts.push(['content', { data: content, filename: 'content.bin' }]);
  return postParts(app, CONVERT, token, parts, headers);
}

/** The multipart JWE opened with jose: header JSON, enc, alg, plaintext, and the raw parts. */
export interface OpenedJwe {
  parts: Part[];
  closed: boolean;
  header: {
    protected: string;
    recipients: Array<{ header: { alg: string; kid: string }; encrypted_key: string }>;
    iv: string;
  };
  enc: string;
  ciphertext: Buffer;
  plaintext: Buffer;
}

/** Splits a multipart/mixed JWE answer and decrypts it with jose under `key`. */
export async function openJwe(a: Answer, key: KeyObject): Promise<OpenedJwe> {
  const { parts, closed } = parseMultipart(a.body, a.headers.get('content-type')!);
  return { parts, closed, ...(await decryptJweParts(parts, key)) };
}

export const publicOf = (k: TestKey): KeyObject => createPublicKey(k.privateKey);

/**
 * POSTs with node:http and a per-request deadline, for inputs the fuzz test sends: resolves with
 * the status and body, `cut` when the connection ended early, or `hung` past the deadline.
 */
export function postWithDeadline(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  ms: number,
): Promise<{ status: number; contentType: string; body: Buffer; cut: boolean; hung: boolean }> {
  return new Promise((resolve) => {
    const u = new URL(url);
    let settled = false;
    const finish = (r: {
      status: number;
      contentType: string;
      body: Buffer;
      cut: boolean;
      hung: boolean;
    }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          finish({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks),
            cut: false,
            hung: false,
          }),
        );
        res.on('error', () =>
          finish({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks),
            cut: true,
            hung: false,
          }),
        );
        res.on('aborted', () =>
          finish({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            body: Buffer.concat(chunks),
            cut: true,
            hung: false,
          }),
        );
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish({ status: 0, contentType: '', body: Buffer.alloc(0), cut: false, hung: true });
    }, ms);
    req.on('error', () =>
      finish({ status: 0, contentType: '', body: Buffer.alloc(0), cut: true, hung: false }),
    );
    req.end(body);
  });
}

/** A multipart/form-data body built by hand (for node:http), parts in order. */
export function formBody(parts: Array<[string, Buffer | string]>): {
  body: Buffer;
  contentType: string;
} {
  const boundary = `----keyward-test-${Math.random().toString(36).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const [name, v] of parts) {
    const file = typeof v !== 'string';
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${file ? `; filename="${name}.bin"` : ''}\r\n` +
          `Content-Type: ${file ? 'application/octet-stream' : 'application/json'}\r\n\r\n`,
      ),
    );
    chunks.push(typeof v === 'string' ? Buffer.from(v) : v, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
