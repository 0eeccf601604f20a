/**
 * Key usage from certificates (docs/decisions.md): a key records the usages its certificate allows
 * (`allowed_usages`) and the usages enabled now (`usages`); the `usage` column stays the key's
 * one usage for what names only one. Null columns mean that one usage (keys made before, rows of
 * an older backup restored, which take no default), so nothing is widened by accident. An imported
 * key pair's allowed usages are read again from its certificate, so a key that a certificate
 * without keyUsage imported for its type's default usage alone can be given the other by a
 * settings PATCH instead of a new import.
 */
import type { Knex } from 'knex';
import { summarizeCertificate } from '../../keystore/certificate.ts';
import { isKeyType } from '../../crypto/registry.ts';
import { allowedUsages } from '../../keys/usages.ts';

const PAGE = 500;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    t.jsonb('usages');
    t.jsonb('allowed_usages');
  });
  let after: string | null = null;
  for (;;) {
    const rows = await knex('keys as k')
      .join('key_versions as v', function () {
        this.on('v.key_id', 'k.id').andOn('v.version', 'k.current_version');
      })
      .where('k.source', 'imported')
      .whereIn('k.usage', ['encrypt', 'sign'])
      .modify((q) => {
        if (after !== null) q.where('k.id', '>', after);
      })
      .orderBy('k.id')
      .limit(PAGE)
      .select('k.id', 'k.type', 'k.usage', 'v.certificate_chain');
    if (rows.length === 0) break;
    for (const r of rows) {
      if (!isKeyType(r.type)) continue;
      const chain = (
        typeof r.certificate_chain === 'string'
          ? JSON.parse(r.certificate_chain)
          : r.certificate_chain
      ) as string[] | null;
      let certificate: ('sign' | 'encrypt')[] | undefined;
      try {
        certificate = chain?.[0]
          ? summarizeCertificate(Buffer.from(chain[0], 'base64')).usages
          : undefined;
      } catch {
        continue; // a certificate that no longer parses keeps the one usage it was imported for
      }
      const allowed = allowedUsages(r.type, certificate, true);
      if (!allowed.includes(r.usage)) continue;
      await knex('keys')
        .where({ id: r.id })
        .update({ usages: JSON.stringify([r.usage]), allowed_usages: JSON.stringify(allowed) });
    }
    after = rows[rows.length - 1].id as string;
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    t.dropColumn('usages');
    t.dropColumn('allowed_usages');
  });
}
