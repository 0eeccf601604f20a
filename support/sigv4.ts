/**
 * AWS Signature Version 4 signing by hand, for the AWS KMS API's tests and bench: a request can
 * be what no SDK sends (a stale date, an unsigned host, a body changed after signing).
 */
import { createHash, createHmac } from 'node:crypto';

/** How a test request departs from a correctly signed one. */
export interface SignOptions {
  region?: string;
  service?: string;
  /** X-Amz-Date as this instant (default now). */
  at?: Date;
  /** Headers signed besides x-amz-date (default content-type, host, x-amz-target). */
  signed?: string[];
  contentType?: string;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) =>
  createHmac('sha256', key).update(data).digest();

/**
 * An AWS KMS API request signed with SigV4 by hand (AWS General Reference, "Create a signed
 * AWS API request"), so a test can send what no SDK would: a stale date, an unsigned host, a
 * body changed after signing.
 */
export function signedRequest(
  url: string,
  key: { accessKeyId: string; secretAccessKey: string },
  target: string,
  body: string | Buffer,
  o: SignOptions = {},
): { headers: Record<string, string>; body: string | Buffer } {
  const region = o.region ?? 'eu-west-1';
  const service = o.service ?? 'kms';
  const amzDate = (o.at ?? new Date()).toISOString().replace(/[-:]|\.\d{3}/g, '');
  const date = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    'content-type': o.contentType ?? 'application/x-amz-json-1.1',
    host: new URL(url).host,
    'x-amz-date': amzDate,
    'x-amz-target': target,
  };
  const signed = [...(o.signed ?? ['content-type', 'host', 'x-amz-target']), 'x-amz-date'].sort();
  const canonical = [
    'POST',
    '/',
    '',
    signed.map((h) => `${h}:${headers[h]}\n`).join(''),
    signed.join(';'),
    sha256(body),
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${key.secretAccessKey}`, date), region), service),
    'aws4_request',
  );
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  const { host: _host, ...sent } = headers;
  return {
    headers: {
      ...sent,
      authorization: `AWS4-HMAC-SHA256 Credential=${key.accessKeyId}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`,
    },
    body,
  };
}
