/**
 * Tenants (platform administrators): a paged list, create, suspend and resume, and "Act in this
 * tenant", which switches the console to that tenant by token exchange.
 */
import { json, seg } from '../api.js';
import { button, field, h, when } from '../dom.js';
import { pagedList } from '../list.js';
import { current, switchTenant } from '../session.js';

const P = '/api/v3/admin/platform/tenants';

/** @param {import('../main.js').Ui} ui */
export async function renderTenants(ui) {
  ui.title('Tenants');
  /** @param {() => Promise<unknown>} f */
  const guard = (f) => () => f().catch(ui.fail);
  /** @param {any} t */
  const actIn = async (t) => {
    await switchTenant({ id: t.id, name: t.name });
    ui.refreshHeader();
    ui.say(`Now acting in tenant ${t.name}.`);
    location.hash = '#/keys';
  };
  /** @param {string} id @param {'suspend' | 'resume'} action */
  const change = async (id, action) => {
    const t = await json('POST', `${P}/${seg(id)}/${action}`, { home: true });
    ui.say(`Tenant ${t.name} is ${t.status}.`);
    await list.refresh();
  };
  const list = pagedList({
    caption: 'Tenants',
    headers: ['Name', 'Id', 'Status', 'Created', 'Actions'],
    onError: ui.fail,
    fetchPage: (cursor) => json('GET', P, { home: true, query: { limit: 20, cursor } }),
    row: (t) => [
      t.name + (t.isPlatform ? ' (platform)' : ''),
      h('code', { text: t.id }),
      t.status,
      when(t.createdAt),
      h(
        'div',
        { class: 'row-actions' },
        t.id === current().tenantId
          ? h('span', { class: 'hint', text: 'current' })
          : button(
              'Act in this tenant',
              guard(() => actIn(t)),
              { 'aria-label': `Act in this tenant ${t.name}` },
            ),
        t.isPlatform
          ? null
          : t.status === 'active'
            ? button(
                'Suspend',
                guard(() => change(t.id, 'suspend')),
                { 'aria-label': `Suspend tenant ${t.name}` },
              )
            : button(
                'Resume',
                guard(() => change(t.id, 'resume')),
                { 'aria-label': `Resume tenant ${t.name}` },
              ),
      ),
    ],
  });

  const name = h('input', { type: 'text', required: true, maxLength: 200, autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'create-tenant' },
    h('h2', { id: 'create-tenant', text: 'Create a tenant' }),
    field('Tenant name', name),
    h('button', { type: 'submit', text: 'Create tenant' }),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const t = await json('POST', P, {
        home: true,
        json: { name: /** @type {HTMLInputElement} */ (name).value.trim() },
      });
      ui.say(`Tenant ${t.name} created.`);
      /** @type {HTMLFormElement} */ (form).reset();
      await list.reload();
    } catch (err) {
      ui.fail(err);
    }
  });
  if (current().tenantId !== current().homeTenantId)
    ui.root.append(
      h(
        'p',
        {},
        button(
          'Back to my own tenant',
          guard(() => actIn({ id: current().homeTenantId, name: 'platform' })),
        ),
      ),
    );
  ui.root.append(list.el, form);
  await list.reload();
}
