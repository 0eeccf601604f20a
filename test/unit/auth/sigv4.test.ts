/**
 * SigV4 verification (api/http/sigv4.ts) on its own: the one-match reading of the header the AWS
 * SDKs write gives what the general reading gives, and the signing keys kept per secret and scope
 * never verify a request signed with another secret, region or date. Requests are signed by
 * support/sigv4.ts; the real AWS clients sign in test/integration/aws-kms.
 */
import {
  checkScope,
  parseAuthorization,
  verifySignature,
  type SigV4Credential,
} from '../../../api/http/sigv4.ts';
import { signedRequest, type SignOptions } from '../../../support/sigv4.ts';

const URL_ = 'http://127.0.0.1:8080/';
const BODY = JSON.stringify({ KeyId: 'aes', Plaintext: 'aGk=' });
const keyA = { accessKeyId: 'KWAKAAAAAAAAAAAAAAAA', secretAccessKey: 'a'.repeat(40) };
const keyB = { accessKeyId: 'KWAKAAAAAAAAAAAAAAAA', secretAccessKey: 'b'.repeat(40) };

/** The headers as Node hands them to the server: lower-case names, host included. */
function arrived(key: typeof keyA, o: SignOptions = {}) {
  const { headers } = signedRequest(URL_, key, 'TrentService.Encrypt', BODY, o);
  return { ...headers, host: '127.0.0.1:8080' } as Record<string, string>;
}

/** The exception name a verification throws, or 'ok'. */
function verdict(headers: Record<string, string>, secret: Buffer): string {
  try {
    const cred: SigV4Credential = parseAuthorization(headers.authorization);
    checkScope(cred, headers, [], Date.now());
    verifySignature(cred, secret, 'POST', '/', headers, Buffer.from(BODY));
    return 'ok';
  } catch (err) {
    return (err as { type?: string }).type ?? String(err);
  }
}

describe('SigV4 verification', () => {
  it('when the header is in the SDK form or spaced otherwise, then both readings give the same credential', () => {
    const header = arrived(keyA).authorization;
    const spaced = header.replaceAll(', ', ',   ');
    expect(spaced).not.toBe(header);
    expect(parseAuthorization(spaced)).toEqual(parseAuthorization(header));
    expect(parseAuthorization(header)).toMatchObject({
      accessKeyId: keyA.accessKeyId,
      region: 'eu-west-1',
      service: 'kms',
      signedHeaders: ['content-type', 'host', 'x-amz-date', 'x-amz-target'],
    });
  });

  it('when an incomplete header differs from the SDK form, then it is still refused as incomplete', () => {
    const header = arrived(keyA).authorization;
    for (const broken of [
      header.replace(/, Signature=[0-9a-f]+/, ''),
      header.replace('aws4_request', 'aws5_request'),
      header.replace(/Signature=[0-9a-f]+/, 'Signature=XYZ'),
    ])
      expect(() => parseAuthorization(broken)).toThrow(
        expect.objectContaining({ type: 'IncompleteSignatureException' }),
      );
  });

  it('when a signing key is kept for one secret and scope, then another secret, region or day never verifies with it', () => {
    const secretA = Buffer.from(keyA.secretAccessKey);
    const secretB = Buffer.from(keyB.secretAccessKey);
    expect(verdict(arrived(keyA), secretA)).toBe('ok');
    expect(verdict(arrived(keyA), secretA)).toBe('ok');
    // Same access key id, another secret (the key re-created): refused both ways.
    expect(verdict(arrived(keyB), secretA)).toBe('InvalidSignatureException');
    expect(verdict(arrived(keyA), secretB)).toBe('InvalidSignatureException');
    expect(verdict(arrived(keyB), secretB)).toBe('ok');
    // An equal secret in another Buffer verifies the same.
    expect(verdict(arrived(keyA), Buffer.from(keyA.secretAccessKey))).toBe('ok');
    // Another region: its own signing key.
    expect(verdict(arrived(keyA, { region: 'us-east-2' }), secretA)).toBe('ok');
    const other = arrived(keyA, { region: 'us-east-2' });
    other.authorization = other.authorization.replace('/us-east-2/', '/eu-west-1/');
    expect(verdict(other, secretA)).toBe('InvalidSignatureException');
    // Yesterday's scope (inside the 5-minute window only near midnight): its own key too.
    const nearMidnight = new Date(Date.UTC(2026, 10, 26, 0, 0, 0));
    const late = arrived(keyA, { at: new Date(nearMidnight.getTime() - 1000) });
    const early = arrived(keyA, { at: nearMidnight });
    const verifyAt = (h: Record<string, string>) => {
      const cred = parseAuthorization(h.authorization);
      checkScope(cred, h, [], nearMidnight.getTime());
      verifySignature(cred, secretA, 'POST', '/', h, Buffer.from(BODY));
    };
    expect(() => verifyAt(late)).not.toThrow();
    expect(() => verifyAt(early)).not.toThrow();
    early['x-amz-date'] = late['x-amz-date'];
    expect(() => verifyAt(early)).toThrow(
      expect.objectContaining({ type: 'InvalidSignatureException' }),
    );
  });
  it('when a signed header is named after an Object.prototype member, then it is a missing header (InvalidSignatureException), never a TypeError', () => {
    const secret = Buffer.from(keyA.secretAccessKey);
    for (const name of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'])
      expect([
        name,
        verdict(arrived(keyA, { signed: ['content-type', 'host', 'x-amz-target', name] }), secret),
      ]).toEqual([name, 'InvalidSignatureException']);
  });

  it('when X-Amz-Target or Content-Type is sent but not signed, then InvalidSignatureException before the secret is used', () => {
    const secret = Buffer.from(keyA.secretAccessKey);
    expect(verdict(arrived(keyA, { signed: ['host'] }), secret)).toBe('InvalidSignatureException');
    expect(verdict(arrived(keyA, { signed: ['host', 'x-amz-target'] }), secret)).toBe(
      'InvalidSignatureException',
    );
    expect(verdict(arrived(keyA, { signed: ['content-type', 'host'] }), secret)).toBe(
      'InvalidSignatureException',
    );
    const session = { ...arrived(keyA), 'x-amz-security-token': 'FwoGZXIvYXdzEXAMPLE' };
    expect(verdict(session, secret)).toBe('UnrecognizedClientException');
  });
});
