/**
 * The keystore import form of contract 4 (a `keystore` part, PKCS#12 file or PEM, with
 * optional password, kid and usage fields), read and imported; the v3 admin route and the
 * unversioned alias both answer with it.
 */
import type { Request } from 'express';
import type { AppContext } from '../context.ts';
import { problem } from '../../shared/errors/index.ts';
import { readSmallMultipart } from './multipart.ts';
import { tenantParam } from './params.ts';
import { actorOf } from '../access/checks.ts';
import { importKeystore } from '../services/keys/import.ts';

/** Reads the keystore form and imports it; shared by the v3 route and the unversioned alias. */
export async function importFromRequest(
  ctx: AppContext,
  req: Request,
  tenantId = tenantParam(req),
) {
  const form = await readSmallMultipart(req, 1024 * 1024);
  const keystore =
    form.files.keystore ??
    (form.fields.keystore ? { data: Buffer.from(form.fields.keystore, 'utf8') } : undefined);
  if (!keystore)
    throw problem('validation_failed', 'the keystore part is required (PKCS#12 file or PEM)');
  const anchor = form.fields.trustAnchor;
  if (anchor !== undefined && anchor !== 'true' && anchor !== 'false')
    throw problem('validation_failed', 'trustAnchor must be true or false', {
      details: { field: 'trustAnchor' },
    });
  const keys = await importKeystore(ctx, tenantId, {
    data: keystore.data,
    password: form.fields.password,
    kid: form.fields.kid,
    usage: form.fields.usage,
    trustAnchor: anchor === 'true',
  });
  for (const k of keys)
    ctx.audit.record({
      tenantId,
      actor: actorOf(req),
      action: 'key.import',
      outcome: 'success',
      target: k.kid,
      details: { type: k.type, usages: k.usages },
    });
  return keys.map((k) => ({
    kid: k.kid,
    type: k.type,
    usage: k.usage,
    usages: k.usages,
    allowedUsages: k.allowedUsages,
    state: k.state,
    certificate: k.certificate,
  }));
}
