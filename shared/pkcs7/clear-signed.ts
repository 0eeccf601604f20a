/**
 * Clear-signed mail (RFC 1847, RFC 8551 section 3.5.3) to a detached JWS: the signed MIME entity
 * comes before the signature in the message, so it is hashed as it streams, with the digests its
 * micalg parameter names (all common ones when it names none), and the JWS signing input is
 * prepared for every alg the signer could need, as for an attached SignedData. The detached
 * SignedData that follows is then read, its signer verified over those digests, and the JWS
 * signed: over the signed entity's bytes exactly as the message carries them.
 */
import { BerReader } from '../asn1/ber-reader.ts';
import { OID, oidName } from '../asn1/oids.ts';
import { DetachedJwsSigner, type JwsAlg } from '../jose/jws.ts';
import { problem } from '../errors/index.ts';
import { readHead, readTail } from './cms-structure.ts';
import type { Container } from './container.ts';
import { candidatesFor, finishSignature, signerKeyOf } from './resigning.ts';
import { ContentDigests, describeSigner } from './signers.ts';
import type { ConvertOptions, ConvertResult } from './types.ts';

/** RFC 8551 section 3.5.3.2 micalg names, with the hash each sizes the JWS alg by. */
const MICALG = new Map<string, { oid: string; hash: string }>([
  ['sha-1', { oid: OID.sha1, hash: 'sha1' }],
  ['sha1', { oid: OID.sha1, hash: 'sha1' }],
  ['sha-224', { oid: OID.sha224, hash: 'sha224' }],
  ['sha-256', { oid: OID.sha256, hash: 'sha256' }],
  ['sha-384', { oid: OID.sha384, hash: 'sha384' }],
  ['sha-512', { oid: OID.sha512, hash: 'sha512' }],
]);
const FALLBACK = ['sha-256', 'sha-384', 'sha-512', 'sha-1'];

/** The digests to compute for a micalg list: the named ones, or every common one. */
export function micalgDigests(micalg: readonly string[] | undefined): {
  oids: string[];
  hashes: string[];
} {
  const known = (micalg ?? []).filter((m) => MICALG.has(m));
  const names = known.length ? known : FALLBACK;
  return {
    oids: names.map((n) => MICALG.get(n)!.oid),
    hashes: names.map((n) => MICALG.get(n)!.hash),
  };
}

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

/** Converts a multipart/signed container into the detached JWS of its signed entity. */
export async function convertClearSigned(
  container: Container,
  opts: ConvertOptions,
): Promise<ConvertResult> {
  if (opts.content)
    throw problem(
      'cms_bad_metadata',
      'a content part was given for a clear-signed message, which carries its signed content',
    );
  const { oids, hashes } = micalgDigests(container.micalg);
  const key = await signerKeyOf(opts);
  const algs = new Set<JwsAlg>();
  for (const h of new Set(hashes.filter((h) => h !== 'sha1' && h !== 'sha224')))
    for (const a of await candidatesFor(opts.resolver, key, h)) algs.add(a);
  if (algs.size === 0)
    for (const a of await candidatesFor(opts.resolver, key, 'sha256')) algs.add(a);
  const jws = new DetachedJwsSigner([...algs], { b64: opts.metadata.b64 ?? false, key });
  const digests = new ContentDigests(oids);
  for await (const chunk of container.signedContent!) {
    digests.update(chunk);
    jws.update(chunk);
  }
  const reader = new BerReader(container.cms);
  try {
    const head = await readHead(reader);
    opts.onInputType?.(head.type);
    if (head.type !== 'signedData' || head.content)
      throw problem(
        'cms_multipart_signed_malformed',
        head.type !== 'signedData'
          ? `the signature part holds a ${head.type}, not a SignedData`
          : 'the signature part holds a SignedData with its own content; clear-signed mail signs the first part',
      );
    const tail = await readTail(reader, head);
    const computed = digests.digest();
    const cmsHash =
      head.digestAlgorithms.map((a) => MICALG_BY_OID.get(a.algorithm)).find((h) => h) ?? 'sha256';
    const signer = tail.signers.length === 1 ? describeSigner(tail.signers[0]) : null;
    if (signer && !signer.unsupported && !computed.has(signer.digestOid))
      throw problem(
        'cms_multipart_signed_malformed',
        `the signer digests with ${oidName(signer.digestOid)}, which the micalg parameter (${(container.micalg ?? []).join(',') || 'absent'}) does not name`,
      );
    const result = await finishSignature({
      tail,
      eContentType: head.contentType,
      digests: computed,
      jws,
      key,
      resolver: opts.resolver,
      cmsHash,
    });
    return {
      contentType: 'application/octet-stream',
      body: once(Buffer.from(JSON.stringify(result))),
    };
  } catch (err) {
    await reader.close().catch(() => {});
    throw err;
  }
}

const MICALG_BY_OID = new Map<string, string>(
  [...MICALG.values()]
    .filter((v) => v.hash !== 'sha1' && v.hash !== 'sha224')
    .map((v) => [v.oid, v.hash]),
);
