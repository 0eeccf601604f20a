/**
 * Keystore import (contract 4): PKCS#12 or PEM parsed in the worker pool, then every key of it
 * stored in one transaction, so a failure leaves no half-imported key.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { resolveUsage, type KeyType } from '../../../shared/crypto/registry.ts';
import type { ParsedKeystoreEntry } from '../../../workers/tasks/keystore.ts';
import { tenantPolicy } from '../../routes/admin/policies.ts';
import { KID, storeKey, type KeyView } from './store.ts';

const b = (u?: Uint8Array) => (u ? Buffer.from(u.buffer, u.byteOffset, u.byteLength) : undefined);

/** Imports every key of a keystore; answers the keys with their certificate summaries. */
export async function importKeystore(ctx: AppContext, tenantId: string, input: { data: Buffer; password?: string; kid?: string; usage?: string }): Promise<Array<KeyView & { certificate: unknown }>> {
  // The kid rule of generated keys applies to imported ones too; checked before the costly parse.
  if (input.kid !== undefined && !KID.test(input.kid)) throw new AppError('validation_failed', 'kid must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  const entries = await ctx.pool.run<ParsedKeystoreEntry[]>('parseKeystoreTask', { data: input.data, password: input.password });
  if (entries.length === 0) throw new AppError('keystore_empty', 'the keystore holds no private key', { status: 400, slug: 'keystore-empty', title: 'Empty Keystore' });
  if (input.kid && entries.length > 1) throw new AppError('validation_failed', `the keystore holds ${entries.length} keys; a single kid cannot name them all`);
  const { effective } = await tenantPolicy(ctx, tenantId);
  for (const e of entries) {
    if (!effective.allowedKeyTypes.includes(e.type)) throw new AppError('policy_violation', `the effective policy of this tenant does not allow ${e.type} keys`);
  }
  return ctx.db.transaction(async (trx) => {
    const out: Array<KeyView & { certificate: unknown }> = [];
    for (const e of entries) {
      const kid = input.kid ?? `imported-${randomUUID()}`;
      const usage = resolveUsage(e.type as KeyType, input.usage);
      const view = await storeKey(ctx, tenantId, { kid, type: e.type, usage, source: 'imported' },
        { type: e.type as KeyType, privateKeyDer: b(e.privateKeyDer), publicKeyDer: b(e.publicKeyDer) },
        { certificateChain: e.certificates.map((c) => b(c)!), issuerDer: b(e.issuerDer), serialNumber: b(e.serialNumber), subjectKeyIdentifier: b(e.subjectKeyIdentifier) },
        trx);
      out.push({ ...view, certificate: e.certificate ?? null });
    }
    return out;
  });
}
