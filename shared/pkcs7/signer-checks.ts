/**
 * The public-key work of a SignedData conversion, as one call on plain data: every signer's
 * signature, and with `verify: "chain"` its path to a trust anchor. Its input is what the key
 * lookups found (done before, on the caller's side), so the call can run on a pool thread
 * (api/threads/tasks/convert.ts) as well as in place. One SignatureBudget bounds it all.
 */
import type { KeyObject } from 'node:crypto';
import { certificatePath, parseCertificate } from './certificates.ts';
import type { ParsedCertificate } from './certificates.ts';
import { issuerFault, signerPurposeFault } from './chain-rules.ts';
import { capturedSigner } from './cms-structure.ts';
import { spkiPublicKey } from './key-cache.ts';
import { describeSigner, signerKey, verifySigner } from './signers.ts';
import type { SignerDescription } from './signers.ts';
import { certificateKeyFault, SignatureBudget } from './signature-budget.ts';
import type { SignerChecker, SignerCheckInput, SignerCheckOutput } from './types.ts';
import { problem } from '../errors/index.ts';

const buf = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/**
 * Verifies every signer (RFC 5652 section 5.6) and, with `chain`, its path to an anchor; throws
 * the first problem, in file order. `decryptSignature` (SignedAndEnvelopedData, RFC 2315 section
 * 11.2) is tried on a signature that does not verify as it is; it only runs in place.
 */
export function checkSigners(
  input: SignerCheckInput,
  decryptSignature?: (sig: Buffer) => Buffer,
): SignerCheckOutput {
  const budget = new SignatureBudget();
  const digests = new Map(input.digests.map(([k, v]) => [k, buf(v)]));
  const pool = input.certificates.map(buf);
  const anchors = input.anchors.map(buf);
  let parsed: ParsedCertificate[] | null = null;
  // Parsed on the first signer the tenant does not hold, as before: a held signer needs none.
  const carried = () =>
    (parsed ??= pool.map(parseCertificate).filter((c): c is ParsedCertificate => c !== null));
  const x5c: string[][] = [];
  input.signers.forEach((raw, i) => {
    const s = capturedSigner(raw);
    const desc = describeSigner(s);
    const held = input.held[i];
    const own = held
      ? {
          pub: spkiPublicKey(buf(held.spki)),
          certificate: held.certificate ? buf(held.certificate) : null,
        }
      : null;
    const { pub, certificate, carried: fromMessage } = signerKey(desc, own ? [] : carried(), own);
    if (fromMessage) {
      const why = certificateKeyFault(pub);
      if (why)
        throw problem(
          'cms_key_unusable',
          `the signer's certificate has a key not accepted: ${why}`,
          {
            details: { identifier: desc.identifier },
          },
        );
    }
    budget.spend();
    verifyOne(desc, Buffer.from(s.info.signature.buffer), digests, input.eContentType, pub, {
      decryptSignature,
      budget,
    });
    // `verify: "signature"` records the signer's certificate alone: no issuer is looked for.
    const path = input.chain
      ? anchoredPath(desc, certificate, pool, anchors, budget)
      : certificate
        ? [certificate]
        : [];
    x5c.push(path.map((c) => c.toString('base64')));
  });
  return { x5c, checks: budget.spent };
}

/**
 * One signer whose key the tenant holds, without a chain: one signature check with a key the
 * tenant chose, not the input, cheaper where it is than a hop to a thread and back.
 */
export function cheapInPlace(input: SignerCheckInput): boolean {
  return !input.chain && input.held.length === 1 && input.held[0] !== null;
}

/**
 * The checker that sends the checks `elsewhere` (a pool thread: how many there are is the
 * input's choice), but for an input cheapInPlace() keeps: the same result and the same problems.
 */
export function offloaded(elsewhere: SignerChecker): SignerChecker {
  return async (input) => (cheapInPlace(input) ? checkSigners(input) : elsewhere(input));
}

function verifyOne(
  desc: SignerDescription,
  sig: Buffer,
  digests: Map<string, Buffer>,
  eContentType: string,
  pub: KeyObject,
  o: { decryptSignature?: (sig: Buffer) => Buffer; budget: SignatureBudget },
): void {
  try {
    verifySigner(desc, sig, digests, eContentType, pub);
  } catch (err) {
    if (!o.decryptSignature || (err as { code?: string }).code !== 'cms_signature_invalid')
      throw err;
    let plain: Buffer;
    try {
      plain = o.decryptSignature(sig);
    } catch {
      throw err;
    }
    o.budget.spend();
    verifySigner(desc, plain, digests, eContentType, pub);
  }
}

/** The signer's path to a trust anchor, each certificate fit for its place; else cms-signer-untrusted. */
function anchoredPath(
  desc: SignerDescription,
  certificate: Buffer | null,
  pool: Buffer[],
  anchors: Buffer[],
  budget: SignatureBudget,
): Buffer[] {
  const untrusted = (why: string) =>
    problem('cms_signer_untrusted', `the signature verifies, but ${why}`, {
      details: { identifier: desc.identifier },
    });
  const noAnchor = "the signer's certificate leads to none of the tenant's trust anchors";
  if (!certificate) throw untrusted(noAnchor);
  const leaf = parseCertificate(certificate);
  const purpose = leaf ? signerPurposeFault(leaf.cert) : null;
  if (purpose) throw untrusted(purpose);
  const found = certificatePath(certificate, pool, anchors, budget);
  if (!found.anchored) throw untrusted(noAnchor);
  const certs = found.path.map((c) => parseCertificate(c)!.cert);
  for (let i = 1; i < certs.length; i++) {
    const why = issuerFault(certs, i);
    if (why) throw untrusted(why);
  }
  return found.path;
}
