/**
 * The legacy key import of the unversioned API (`POST /api/key-management/keys/import`): a PEM
 * keystore (private key and optional certificates) or a raw AES key in base64.
 */
import type { AppContext } from '../context.ts';
import { problem } from '../../shared/errors/index.ts';
import { checkNewKey, storeKey } from './keys/store.ts';
import { keyTypeSpec } from '../../shared/crypto/registry.ts';
import { importKeystore } from './keys/import.ts';
import type { KeyView, LegacyKeyImportBody } from '../schemas/keys.ts';

/** Imports the key a legacy import body describes into the tenant; returns its view. */
export async function importLegacyKey(
  ctx: AppContext,
  tenantId: string,
  body: LegacyKeyImportBody,
  /** The audit actor, whose budget of expensive work an encrypted PEM's derivation spends. */
  actor: string,
): Promise<KeyView> {
  const { pem, key, type, kid, usage, password } = body;
  if (typeof pem === 'string') {
    const [view] = await importKeystore(
      ctx,
      tenantId,
      {
        data: Buffer.from(pem, 'utf8'),
        password,
        kid,
        usage,
      },
      actor,
    );
    return view;
  }
  if (typeof key !== 'string')
    throw problem(
      'validation_failed',
      'give pem (private key and optional certificates) or key (base64 AES key)',
    );
  // A raw symmetric key, base64: its length must match the AES type (inferred from the length when absent).
  const secret = Buffer.from(key, 'base64');
  const checked = await checkNewKey(ctx, tenantId, {
    type: type ?? (secret.length === 16 ? 'aes-128' : 'aes-256'),
    usage,
    kid,
  });
  const spec = keyTypeSpec(checked.type);
  if (spec.family !== 'aes' || secret.length * 8 !== spec.bits)
    throw problem(
      'validation_failed',
      'key must be base64 of a 16- or 32-byte AES key matching type',
    );
  return storeKey(
    ctx,
    tenantId,
    { kid: checked.kid, type: checked.type, usage: checked.usage, source: 'imported' },
    { type: checked.type, secret },
  );
}
