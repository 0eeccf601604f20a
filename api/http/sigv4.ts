/**
 * AWS Signature Version 4 verification (AWS General Reference, "Signature Version 4 signing
 * process") for the AWS KMS API: the Authorization header form only (awsJson clients never
 * presign). The canonical request is rebuilt from what arrived; the signature is compared in
 * constant time; a request is accepted while its X-Amz-Date is within 5 minutes of the clock,
 * as AWS accepts it (no seen-set: identical requests in one second sign identically).
 * Each refusal is the exception an AWS client expects, as AWS KMS answers it.
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { AwsError } from '../services/aws-kms/errors.ts';

/** How far X-Amz-Date may be from the server's clock (AWS: 5 minutes). */
export const CLOCK_WINDOW_MS = 5 * 60_000;
const ALGORITHM = 'AWS4-HMAC-SHA256';
const AMZ_DATE = /^(\d{8})T(\d{6})Z$/;

/** The parsed Authorization header. */
export interface SigV4Credential {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

/** The header as the AWS SDKs and CLI write it, read in one match; any other form takes the long way. */
const SDK_FORM =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request, ?SignedHeaders=([^,\s]+), ?Signature=([0-9a-f]{64})$/;

const incomplete = (message: string) => new AwsError('IncompleteSignatureException', message);
const invalid = (message: string) => new AwsError('InvalidSignatureException', message);

/**
 * The credential of an Authorization header; MissingAuthenticationTokenException without one,
 * IncompleteSignatureException when a part is missing or malformed (a half-signed request).
 */
export function parseAuthorization(header: string | undefined): SigV4Credential {
  if (!header)
    throw new AwsError('MissingAuthenticationTokenException', 'Missing Authentication Token');
  const sdk = SDK_FORM.exec(header);
  if (sdk)
    return {
      accessKeyId: sdk[1],
      date: sdk[2],
      region: sdk[3],
      service: sdk[4],
      signedHeaders: sdk[5].split(';'),
      signature: sdk[6],
    };
  if (!header.startsWith(`${ALGORITHM} `))
    throw incomplete(`Authorization header requires the ${ALGORITHM} algorithm`);
  const parts = new Map<string, string>();
  for (const part of header.slice(ALGORITHM.length + 1).split(',')) {
    const at = part.indexOf('=');
    if (at > 0) parts.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  const missing = ['Credential', 'SignedHeaders', 'Signature'].filter((p) => !parts.get(p));
  if (missing.length > 0)
    throw incomplete(
      missing.map((p) => `Authorization header requires '${p}' parameter.`).join(' '),
    );
  const scope = parts.get('Credential')!.split('/');
  if (scope.length !== 5 || scope[4] !== 'aws4_request' || !/^\d{8}$/.test(scope[1]))
    throw incomplete(
      "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/aws4_request, got '" +
        parts.get('Credential')!.slice(0, 200) +
        "'",
    );
  const signature = parts.get('Signature')!;
  if (!/^[0-9a-f]{64}$/.test(signature)) throw incomplete('Signature must be 64 hex characters');
  return {
    accessKeyId: scope[0],
    date: scope[1],
    region: scope[2],
    service: scope[3],
    signedHeaders: parts.get('SignedHeaders')!.split(';'),
    signature,
  };
}

/** Headers that must be signed whenever they are sent (lower-case name, name as shown). */
const MUST_SIGN: ReadonlyArray<[string, string]> = [
  ['x-amz-target', 'X-Amz-Target'],
  ['content-type', 'Content-Type'],
];

/**
 * Checks what can be checked without the secret: service, region, no session token, signed
 * headers and date.
 */
export function checkScope(
  cred: SigV4Credential,
  headers: IncomingHttpHeaders,
  regions: readonly string[],
  now: number,
): void {
  if (cred.service !== 'kms')
    throw invalid(`Credential should be scoped to correct service: 'kms'.`);
  if (
    !/^[a-z0-9-]{1,32}$/.test(cred.region) ||
    (regions.length > 0 && !regions.includes(cred.region))
  )
    throw invalid(`Credential should be scoped to a valid region.`);
  // Keyward issues no temporary credentials: a session token would be ignored, and a client
  // holding one believes a scoped, expiring credential was checked when it was not.
  if (headers['x-amz-security-token'] !== undefined)
    throw new AwsError(
      'UnrecognizedClientException',
      'The security token included in the request is invalid: this service issues no session tokens. Sign with a workload access key alone, without X-Amz-Security-Token.',
    );
  const signed = cred.signedHeaders;
  if (!signed.includes('host'))
    throw invalid("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.");
  // The operation and the body's media type are what the signature must bind: an unsigned
  // X-Amz-Target would let a captured DescribeKey be replayed as ScheduleKeyDeletion. Every AWS
  // SDK and the CLI sign both.
  for (const [name, shown] of MUST_SIGN)
    if (headers[name] !== undefined && !signed.includes(name))
      throw invalid(`'${shown}' must be a 'SignedHeader' in the AWS Authorization.`);
  const amzDate = headers['x-amz-date'];
  if (typeof amzDate !== 'string' || !signed.includes('x-amz-date'))
    throw incomplete(
      "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
    );
  const at = amzDateMs(amzDate);
  if (at === undefined)
    throw incomplete(
      `X-Amz-Date must be in the ISO 8601 basic format, got '${amzDate.slice(0, 40)}'`,
    );
  if (!amzDate.startsWith(cred.date))
    throw invalid(
      'Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP',
    );
  if (!Number.isFinite(at) || Math.abs(now - at) > CLOCK_WINDOW_MS)
    throw invalid(
      `Signature expired: ${amzDate} is now earlier than or later than the 5 minute window of ${new Date(now).toISOString()}.`,
    );
}

/** The last X-Amz-Date read and its instant: every request of one second carries the same. */
let lastAmzDate = '';
let lastAmzDateMs = Number.NaN;

/** The instant of an X-Amz-Date (YYYYMMDD'T'HHMMSS'Z'); NaN for an impossible date, undefined for another form. */
function amzDateMs(amzDate: string): number | undefined {
  if (amzDate === lastAmzDate) return lastAmzDateMs;
  const m = AMZ_DATE.exec(amzDate);
  if (!m) return undefined;
  const at = Date.parse(
    `${m[1].slice(0, 4)}-${m[1].slice(4, 6)}-${m[1].slice(6)}T${m[2].slice(0, 2)}:${m[2].slice(2, 4)}:${m[2].slice(4)}Z`,
  );
  lastAmzDate = amzDate;
  lastAmzDateMs = at;
  return at;
}

const hmac = (key: Buffer | string, data: string) =>
  createHmac('sha256', key).update(data).digest();

/** What the fold below changes: whitespace other than a space, or two spaces; most values have none. */
const FOLDABLE = /[^\S ]| {2}/;

/** The canonical request's header block: signed headers in order, values trimmed and folded. */
function canonicalHeaders(headers: IncomingHttpHeaders, names: readonly string[]): string {
  let out = '';
  for (const name of names) {
    // An own property only: a signed name such as `constructor` or `__proto__` is request input
    // and must not reach Object.prototype.
    const raw = Object.hasOwn(headers, name) ? headers[name] : undefined;
    if (raw === undefined)
      throw invalid(`Signed header ${name.slice(0, 64)} is missing from the request.`);
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    const trimmed = value.trim();
    out += `${name}:${FOLDABLE.test(trimmed) ? trimmed.replace(/\s+/g, ' ') : trimmed}\n`;
  }
  return out;
}

/** The canonical query string of a request target (sorted, RFC 3986 encoded). */
function canonicalQuery(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return '';
  const pairs = [...new URLSearchParams(url.slice(at + 1))].map(([k, v]) => [
    encodeURIComponent(k).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    ),
    encodeURIComponent(v).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    ),
  ]);
  pairs.sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

// Signing keys change once a day per access key and region: derived once per secret (the
// holder's Buffer, so an entry goes with the access-key cache entry that holds it) and scope, and
// kept as HMAC's two padded key blocks (RFC 2104: H(K ^ opad || H(K ^ ipad || m))), so a request's
// HMAC is two one-shot SHA-256 calls. In the service under load, createHmac (even with a
// KeyObject) took several times what it takes alone (OpenSSL 3 looks its digest up by name on
// every HMAC context, under a lock the pool's threads share; crypto.hash keeps its digest).
const signingKeys = new WeakMap<Buffer, Map<string, HmacPads>>();
/** Scopes kept per secret: a region is any name when AWS_KMS_REGIONS is empty. */
const MAX_SCOPES = 16;
const SHA256_BLOCK = 64;

/** A key's inner and outer padded blocks (RFC 2104). */
interface HmacPads {
  inner: Buffer;
  outer: Buffer;
}

function signingKey(secret: Buffer, cred: SigV4Credential): HmacPads {
  let scopes = signingKeys.get(secret);
  if (!scopes) {
    scopes = new Map();
    signingKeys.set(secret, scopes);
  }
  const scope = `${cred.date}/${cred.region}`;
  let pads = scopes.get(scope);
  if (!pads) {
    const key = hmac(
      hmac(hmac(hmac(`AWS4${secret.toString()}`, cred.date), cred.region), 'kms'),
      'aws4_request',
    );
    pads = { inner: Buffer.alloc(SHA256_BLOCK, 0x36), outer: Buffer.alloc(SHA256_BLOCK, 0x5c) };
    for (let i = 0; i < key.length; i++) {
      pads.inner[i] ^= key[i];
      pads.outer[i] ^= key[i];
    }
    if (scopes.size >= MAX_SCOPES) scopes.clear();
    scopes.set(scope, pads);
  }
  return pads;
}

/** HMAC-SHA256 of an ASCII message under padded key blocks. */
function hmacWithPads(pads: HmacPads, message: string): Buffer {
  const inner = Buffer.allocUnsafe(SHA256_BLOCK + message.length);
  pads.inner.copy(inner, 0);
  inner.write(message, SHA256_BLOCK, 'latin1');
  const outer = Buffer.allocUnsafe(SHA256_BLOCK + 32);
  pads.outer.copy(outer, 0);
  hash('sha256', inner, 'buffer').copy(outer, SHA256_BLOCK);
  return hash('sha256', outer, 'buffer');
}

/** Verifies the signature of a request with the access key's secret; InvalidSignatureException otherwise. */
export function verifySignature(
  cred: SigV4Credential,
  secret: Buffer,
  method: string,
  url: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): void {
  const path = url.split('?')[0] || '/';
  const canonical = [
    method,
    path,
    canonicalQuery(url),
    canonicalHeaders(headers, cred.signedHeaders),
    cred.signedHeaders.join(';'),
    hash('sha256', body, 'hex'),
  ].join('\n');
  const toSign = [
    ALGORITHM,
    headers['x-amz-date'] as string,
    `${cred.date}/${cred.region}/kms/aws4_request`,
    hash('sha256', canonical, 'hex'),
  ].join('\n');
  const expected = hmacWithPads(signingKey(secret, cred), toSign);
  if (!timingSafeEqual(expected, Buffer.from(cred.signature, 'hex')))
    throw invalid(
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    );
}
