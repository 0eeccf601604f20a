/**
 * Several recipients (docs/decisions.md, "Several recipients and several signers"): which
 * RecipientInfo decrypts, chosen from identifiers and the tenant's keys alone, and the target keys
 * of the new JWE (`targetKid`, one kid or a list).
 */
import type { KeyObject } from 'node:crypto';
import type { RecipientInfo } from '@peculiar/asn1-cms';
import { describeRecipient, kariKeyFits, recipientKeyOf } from './recipients.ts';
import { PASSWORD_KEY_TYPE } from './password-recipient.ts';
import type { KeyResolver, ResolvedKey } from './types.ts';
import { AppError, problem } from '../errors/index.ts';

/** At most this many targets in a `targetKid` list (one wrapped content key each). */
export const MAX_TARGETS = 16;

/** Checks `targetKid`: one kid, or a non-empty list of unique kids (at most MAX_TARGETS). */
export function checkTargetKids(value: unknown): void {
  const kids = Array.isArray(value) ? (value as unknown[]) : [value];
  if (
    kids.length === 0 ||
    kids.length > MAX_TARGETS ||
    kids.some((k) => typeof k !== 'string' || k === '' || k.length > 256)
  )
    throw problem(
      'cms_bad_metadata',
      `targetKid must be a non-empty string or a list of 1 to ${MAX_TARGETS} of them`,
    );
  if (new Set(kids).size !== kids.length)
    throw problem('cms_bad_metadata', 'targetKid names a key more than once');
}

/**
 * The keys the new JWE is for: each kid of `targetKid`, in its order; without one, every
 * recipient of the input whose key the tenant holds for encryption, in file order (the key that
 * decrypts among them), so the archive keeps who could read the message. A recipient whose key
 * is refused for encryption (a signing-only key) or not held is no target.
 */
export async function targetKeysOf(
  resolver: KeyResolver,
  targetKid: string | string[] | undefined,
  chosen: { ri: RecipientInfo; key: ResolvedKey },
  infos: readonly RecipientInfo[],
): Promise<ResolvedKey[]> {
  if (targetKid === undefined) {
    if (chosen.key.type === PASSWORD_KEY_TYPE)
      throw problem('cms_bad_metadata', 'a password recipient needs targetKid');
    const keys: ResolvedKey[] = [];
    for (const ri of infos) {
      const key = ri === chosen.ri ? chosen.key : await heldKeyOf(ri, resolver);
      if (key && !keys.some((k) => k.kid === key.kid)) keys.push(key);
    }
    return keys;
  }
  const keys: ResolvedKey[] = [];
  for (const kid of Array.isArray(targetKid) ? targetKid : [targetKid]) {
    const key = await resolver.byKid(kid, 'encrypt');
    if (!key) throw problem('cms_key_not_imported', `the target key ${kid} is not imported`);
    keys.push(key);
  }
  return keys;
}

/** The tenant's encryption key of a RecipientInfo, or null when it holds none (or refuses it). */
async function heldKeyOf(ri: RecipientInfo, resolver: KeyResolver): Promise<ResolvedKey | null> {
  const d = describeRecipient(ri);
  if (d.unsupported || !d.ref) return null;
  try {
    return await resolver.byCmsRef(d.ref, 'encrypt');
  } catch (err) {
    // A key refused for its usage is no target; a failure of the lookup itself is told.
    if (err instanceof AppError && err.status < 500) return null;
    throw err;
  }
}

/**
 * Whether a tenant key is of the kind a RecipientInfo needs (RSA for key transport, the
 * originator key's group for key agreement, a symmetric key for KEK): decided from the key and
 * the RecipientInfo's form only.
 */
function keyFits(ri: RecipientInfo, key: ResolvedKey): boolean {
  const type = key.privateKey?.asymmetricKeyType;
  if (ri.ktri) return type === 'rsa';
  if (ri.kari) return kariKeyFits(ri.kari, key.privateKey);
  return !!ri.kekri && !!key.secretKey;
}

/**
 * Chooses the RecipientInfo that decrypts and its key, from the identifiers and the tenant's keys
 * alone: nothing is tried, so which recipient is used never depends on a secret, and a failure of
 * its unwrap is the one decryption-failed whichever recipient it was. A password
 * picks the first password recipient; `recipientKid` the recipient that names that key (or, when
 * none names it, the first of its kind); else the first recipient, in file order, whose key the
 * tenant holds.
 */
export async function chooseRecipient(
  infos: readonly RecipientInfo[],
  resolver: KeyResolver,
  opts: { recipientKid?: string; password?: KeyObject },
): Promise<{ ri: RecipientInfo; key: ResolvedKey }> {
  const descs = infos.map(describeRecipient);
  if (opts.password) {
    const i = infos.findIndex((ri) => ri.pwri);
    if (i < 0) throw problem('cms_bad_metadata', 'a password was given but no recipient takes one');
    if (descs[i].unsupported)
      throw problem('cms_unsupported', `${descs[i].unsupported} is not supported`);
    return {
      ri: infos[i],
      key: {
        // The kid names the caller's budget for password guesses (every failure counts against
        // it); parentheses never occur in a tenant kid (shared/ids.ts), so no key shares it.
        kid: '(password)',
        version: 0,
        type: PASSWORD_KEY_TYPE,
        secretKey: opts.password,
      },
    };
  }
  if (infos.length === 1)
    return { ri: infos[0], key: await recipientKeyOf(infos[0], resolver, opts.recipientKid) };
  const usable = infos.filter((_, i) => !descs[i].unsupported && descs[i].ref);
  if (usable.length === 0) {
    const reasons = [...new Set(descs.map((d) => d.unsupported ?? 'a recipient without a key'))];
    throw problem('cms_unsupported', `${reasons.join('; ')}: not supported`);
  }
  // A key the resolver refuses for one recipient (key-usage-mismatch) is told only if no other is held.
  const refused: { err?: unknown } = {};
  const byRef = async (ri: RecipientInfo): Promise<ResolvedKey | null> => {
    try {
      return await resolver.byCmsRef(describeRecipient(ri).ref!, 'encrypt');
    } catch (err) {
      refused.err ??= err;
      return null;
    }
  };
  if (opts.recipientKid) {
    const key = await resolver.byKid(opts.recipientKid, 'encrypt');
    if (!key) throw problem('cms_key_not_imported', `key ${opts.recipientKid} is not imported`);
    for (const ri of usable) if ((await byRef(ri))?.kid === key.kid) return { ri, key };
    const ri = usable.find((r) => keyFits(r, key));
    if (!ri)
      throw problem(
        'cms_key_not_imported',
        `key ${opts.recipientKid} fits none of the ${infos.length} recipients`,
      );
    return { ri, key };
  }
  for (const ri of usable) {
    const key = await byRef(ri);
    if (key) return { ri, key };
  }
  if (refused.err) throw refused.err;
  throw problem('cms_key_not_imported', 'no recipient key is imported', {
    details: { identifiers: descs.map((d) => d.identifier) },
  });
}
