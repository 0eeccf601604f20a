/**
 * analyzePkcs7: what a CMS message holds, read in one streaming pass. The
 * content is counted and discarded, so memory stays constant whatever the size.
 */
import { BerReader } from '../asn1/ber-reader.ts';
import { certificateSummary, matchCertificate, parseCertificate } from './certificates.ts';
import type { ParsedCertificate } from './certificates.ts';
import { readHead, readTail, signedContent } from './cms-structure.ts';
import { openContainer } from './container.ts';
import { oidName } from '../asn1/oids.ts';
import { CONTENT_CIPHERS } from './algorithms.ts';
import { describeRecipient } from './recipients.ts';
import { MAX_CMS_NESTING, NESTING_WINDOW, cmsLayersIn } from './nesting.ts';
import { describeSigner } from './signers.ts';
import { ownSigningKey } from './resigning.ts';
import { chooseRecipient } from './recipient-choice.ts';
import { AppError } from '../errors/index.ts';
import type {
  Analysis,
  CertificateSummary,
  KeyResolver,
  RecipientSummary,
  SignerSummary,
} from './types.ts';

function summaryOf(der: Buffer | undefined): CertificateSummary | null {
  if (!der) return null;
  try {
    const c = parseCertificate(der);
    return c ? certificateSummary(c) : null;
  } catch {
    return null;
  }
}

/** Why a signer's own key cannot re-sign, when it is more than "not imported" (the refused key's kid and usage). */
function refusal(err: AppError): string | null {
  return err.code === 'cms_key_not_imported' ? null : err.message;
}

/** Reads a whole CMS message and reports its type, encoding, signers, recipients and convertibility. */
export async function analyzePkcs7(
  input: AsyncIterable<Uint8Array>,
  resolver?: KeyResolver,
): Promise<Analysis> {
  const container = await openContainer(input);
  // Clear-signed mail: the signed entity comes first, and is what the detached signature covers.
  let signedLength = 0;
  try {
    if (container.signedContent)
      for await (const c of container.signedContent) signedLength += c.length;
  } catch (err) {
    await container.close().catch(() => {});
    throw err;
  }
  const reader = new BerReader(container.cms);
  try {
    const head = await readHead(reader);
    let contentLength = signedLength;
    // The first bytes of a SignedData's content, for the CMS layers nested in it.
    const start: Buffer[] = [];
    if (head.content)
      for await (const c of head.type === 'signedData'
        ? signedContent(reader, head, { reuse: true })
        : reader.octets(head.content, { reuse: true })) {
        if (head.type === 'signedData' && contentLength - signedLength < NESTING_WINDOW)
          start.push(Buffer.from(c.subarray(0, NESTING_WINDOW - (contentLength - signedLength))));
        contentLength += c.length;
      }
    const tail = await readTail(reader, head);
    const reasons: string[] = [];
    const signed = head.type === 'signedData' || head.type === 'signedAndEnvelopedData';
    const enveloped = head.type !== 'signedData';

    const certs = tail.certificates
      .map((d) => {
        try {
          return parseCertificate(d);
        } catch {
          return null;
        }
      })
      .filter((c): c is ParsedCertificate => c !== null);
    const signers: SignerSummary[] = [];
    const ownKids: string[] = [];
    // Why a signer's own key cannot re-sign: the converter's own problem (ownSigningKey).
    const ownRefused: AppError[] = [];
    for (const s of tail.signers) {
      const d = describeSigner(s);
      const cert = matchCertificate(certs, d.ref);
      const key = resolver ? await resolver.byCmsRef(d.ref) : null;
      if (d.unsupported) reasons.push(`${d.unsupported} is not supported`);
      const verifiedWith = key ? 'tenant-key' : cert ? 'embedded-certificate' : null;
      if (resolver && !verifiedWith)
        reasons.push(
          certs.length
            ? 'no certificate matches the signer identifier (cms-signer-certificate-mismatch)'
            : "the signer's certificate is neither in the file nor imported",
        );
      if (resolver && !d.unsupported) {
        try {
          const own = await ownSigningKey(resolver, d);
          if (!ownKids.includes(own.kid)) ownKids.push(own.kid);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          ownRefused.push(err);
        }
      }
      signers.push({
        identifier: d.identifier,
        digestAlgorithm: { oid: d.digestOid, name: oidName(d.digestOid) },
        signatureAlgorithm: { oid: d.signatureOid, name: oidName(d.signatureOid) },
        signedAttributes: d.signedAttrs !== null,
        certificate: cert ? certificateSummary(cert) : summaryOf(key?.certificate),
        kid: key?.kid ?? null,
        verifiedWith,
      });
    }
    // A certificates-only SignedData (.p7b) converts to a JWK Set of its certificates.
    const certificatesOnly = head.type === 'signedData' && signers.length === 0 && !head.content;
    // Who will sign the JWS without signerKid: the archive key, else each signer's own.
    let signing: Analysis['signing'] = null;
    if (signed && resolver && !certificatesOnly) {
      const archive = (await resolver.archiveSigningKey?.()) ?? null;
      if (archive) signing = { path: 'archive-key', kids: [archive.kid] };
      else {
        signing = { path: 'signer-key', kids: ownKids };
        for (const why of new Set(ownRefused.map((e) => refusal(e))))
          reasons.push(
            why === null
              ? "no key to re-sign with: a signer's private key is not imported and the tenant has no archive signing key"
              : `no key to re-sign with: ${why}`,
          );
      }
    }
    const recipients: RecipientSummary[] = [];
    // Several recipients convert when one of them can: which, the converter says.
    const unusable: string[] = [];
    const usable: boolean[] = [];
    for (const ri of head.recipientInfos) {
      const d = describeRecipient(ri);
      const key = resolver && d.ref ? await resolver.byCmsRef(d.ref) : null;
      if (d.unsupported) unusable.push(`${d.unsupported} is not supported`);
      else usable.push(d.type === 'password' || !!key);
      recipients.push({
        type: d.type,
        identifier: d.identifier,
        keyEncryptionAlgorithm: d.keyEncryptionAlgorithm,
        ...(d.keyWrapAlgorithm ? { keyWrapAlgorithm: d.keyWrapAlgorithm } : {}),
        certificate: summaryOf(key?.certificate),
        kid: key?.kid ?? null,
      });
    }

    if (1 + (await cmsLayersIn(Buffer.concat(start), MAX_CMS_NESTING)) > MAX_CMS_NESTING)
      reasons.push(`the CMS content types nest deeper than ${MAX_CMS_NESTING} levels`);
    if (signed && signers.length === 0 && !certificatesOnly)
      reasons.push('the SignedData has no signer');
    if (enveloped && usable.length === 0) reasons.push(...unusable);
    if (enveloped) {
      const alg = head.contentEncryption!.algorithm;
      const spec = CONTENT_CIPHERS[alg];
      if (!spec || (head.type === 'authEnvelopedData') !== (spec.mode === 'gcm'))
        reasons.push(`content encryption ${oidName(alg)} in ${head.type} is not supported`);
      if (!head.content) reasons.push('detached encrypted content is not supported');
      if (tail.authAttrs) reasons.push('authAttrs are not supported');
    }
    // Which key decrypts, chosen as the converter chooses it (chooseRecipient, without metadata).
    let decryption: Analysis['decryption'];
    if (resolver && enveloped && usable.length > 0) {
      try {
        decryption = { kid: (await chooseRecipient(head.recipientInfos, resolver, {})).key.kid };
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        const kid = err.details?.kid;
        decryption = { kid: typeof kid === 'string' ? kid : null };
        // A password recipient opens with metadata.password instead.
        if (!head.recipientInfos.some((ri) => ri.pwri)) reasons.push(err.message);
      }
    }
    // What follows the CMS object in an archive form is not read; the input is released.
    await container.close().catch(() => {});
    return {
      contentType: head.type,
      encoding: reader.ber ? 'ber' : 'der',
      container: container.form === 'binary' ? (reader.ber ? 'ber' : 'der') : container.form,
      contentLength,
      detached: head.content === null,
      innerContentType: { oid: head.contentType, name: oidName(head.contentType) },
      signers,
      ...(certificatesOnly ? { certificatesOnly: true, certificateCount: certs.length } : {}),
      ...(signed && resolver && !certificatesOnly ? { signing } : {}),
      recipients,
      ...(decryption ? { decryption } : {}),
      contentEncryption: head.contentEncryption
        ? { oid: head.contentEncryption.algorithm, name: oidName(head.contentEncryption.algorithm) }
        : null,
      // No signature is checked here (the content is counted, not digested; an encrypted one is
      // not decrypted): said, so convertible is not read as a valid signature.
      signatureChecked: false,
      convertible: reasons.length === 0,
      ...(reasons.length ? { reason: reasons.join('; ') } : {}),
    };
  } catch (err) {
    await reader.close().catch(() => {});
    await container.close().catch(() => {});
    throw err;
  }
}
