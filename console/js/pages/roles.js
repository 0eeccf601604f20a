/**
 * Roles of the tenant, and a create form whose permission picker groups the permissions by
 * family (the part before the last dot: admin.keys, crypto, audit, ...).
 */
import { json, tenantPath } from '../api.js';
import { field, h } from '../dom.js';
import { pagedList } from '../list.js';
import { current } from '../session.js';

/**
 * Every permission a role can hold: the platform's catalogue for a platform administrator (the
 * catalogue is a platform operation), else the permissions the person holds, which is what
 * they can see they may hand on.
 * @returns {Promise<string[]>}
 */
async function permissionCatalogue() {
  if (!current().isPlatform) return current().permissions;
  const answer = await json('GET', '/api/v3/admin/platform/scopes', { home: true });
  return answer.items;
}

/**
 * Permissions grouped by family, each family a fieldset of checkboxes.
 * @param {string[]} permissions
 * @param {boolean} withPlatform
 */
export function permissionPicker(permissions, withPlatform) {
  /** @type {Map<string, string[]>} */
  const families = new Map();
  for (const p of permissions) {
    if (!withPlatform && p.startsWith('admin.platform.')) continue;
    const family = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : p;
    families.set(family, [...(families.get(family) ?? []), p]);
  }
  const boxes = /** @type {HTMLInputElement[]} */ ([]);
  const el = h(
    'div',
    { class: 'picker' },
    ...[...families].map(([family, members]) =>
      h(
        'fieldset',
        {},
        h('legend', { text: family }),
        ...members.map((p) => {
          const box = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', value: p }));
          boxes.push(box);
          return field(p.slice(family.length + 1) || p, box);
        }),
      ),
    ),
  );
  for (const f of el.querySelectorAll('.field')) f.classList.add('check');
  return { el, selected: () => boxes.filter((b) => b.checked).map((b) => b.value) };
}

/** @param {import('../main.js').Ui} ui */
export async function renderRoles(ui) {
  ui.title('Roles');
  const list = pagedList({
    caption: 'Roles of this tenant',
    headers: ['Name', 'Id', 'Permissions'],
    onError: ui.fail,
    fetchPage: (cursor) => json('GET', `${tenantPath()}/roles`, { query: { limit: 20, cursor } }),
    row: (r) => [
      r.name,
      h('code', { text: r.id }),
      h('span', { class: 'perms', text: r.permissions.join(', ') || 'none' }),
    ],
  });
  ui.root.append(list.el);
  const formSlot = h('div', {});
  ui.root.append(formSlot);
  const loading = list.reload();
  let catalogue = /** @type {string[]} */ ([]);
  try {
    catalogue = await permissionCatalogue();
  } catch (err) {
    ui.fail(err);
  }
  const picker = permissionPicker(catalogue, false);
  const name = h('input', { type: 'text', required: true, autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'create-role' },
    h('h2', { id: 'create-role', text: 'Create a role' }),
    field('Role name', name),
    h('h3', { text: 'Permissions' }),
    picker.el,
    h('button', { type: 'submit', text: 'Create role' }),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const role = await json('POST', `${tenantPath()}/roles`, {
        json: {
          name: /** @type {HTMLInputElement} */ (name).value.trim(),
          permissions: picker.selected(),
        },
      });
      ui.say(`Role ${role.name} created with ${role.permissions.length} permissions.`);
      /** @type {HTMLFormElement} */ (form).reset();
      await list.reload();
    } catch (err) {
      ui.fail(err);
    }
  });
  formSlot.append(form);
  await loading;
}

/**
 * The tenant's roles as select options (for workloads and users).
 * @returns {Promise<Array<[string, string]>>}
 */
export async function roleOptions() {
  const page = await json('GET', `${tenantPath()}/roles`, { query: { limit: 100 } });
  return page.items.map((/** @type {any} */ r) => /** @type {[string, string]} */ ([r.id, r.name]));
}
