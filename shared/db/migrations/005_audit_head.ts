/**
 * The audit chain head becomes something a tenant can read and anchor elsewhere, and a retried
 * batch can recognise as already written: `at` is the time of the tenant's last event, and
 * `last_event` the writer's id of that event (not hashed, not an event column), so a batch whose
 * commit was acknowledged to no one is not appended a second time.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_heads', (t) => {
    t.timestamp('at', { useTz: true });
    t.uuid('last_event');
  });
  await knex.raw(
    'update audit_heads h set at = e.at from audit_events e where e.tenant_id = h.tenant_id and e.seq = h.seq',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_heads', (t) => {
    t.dropColumn('at');
    t.dropColumn('last_event');
  });
}
