/**
 * Roles of the tenant, and a create form whose permission picker groups the permissions by
 * family (the part before the last dot: admin.keys, crypto, audit, ...).
 */
import { json, seg, tenantPath } from '../api.js';
import { button, field, h, replace } from '../dom.js';
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
  return {
    el,
    selected: () => boxes.filter((b) => b.checked).map((b) => b.value),
    /** @param {string[]} chosen ticks exactly these */
    choose: (chosen) => {
      for (const b of boxes) b.checked = chosen.includes(b.value);
    },
  };
}

/** @param {import('../main.js').Ui} ui */
export async function renderRoles(ui) {
  ui.title('Roles');
  /** @type {any} the role being edited, or null when the form creates one */
  let editing = null;
  const list = pagedList({
    caption: 'Roles of this tenant',
    headers: ['Name', 'Id', 'Permissions', 'Actions'],
    onError: ui.fail,
    fetchPage: (cursor) => json('GET', `${tenantPath()}/roles`, { query: { limit: 20, cursor } }),
    row: (r) => [
      r.name,
      h('code', { text: r.id }),
      h('span', { class: 'perms', text: r.permissions.join(', ') || 'none' }),
      button('Edit', () => edit(r), { 'aria-label': `Edit ${r.name}` }),
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
  const name = /** @type {HTMLInputElement} */ (
    h('input', { type: 'text', required: true, autocomplete: 'off' })
  );
  const heading = h('h2', { id: 'role-form', tabindex: -1, text: 'Create a role' });
  const submit = h('button', { type: 'submit', text: 'Create role' });
  const cancel = button('Cancel editing', () => edit(null), { class: 'secondary', hidden: true });
  const form = /** @type {HTMLFormElement} */ (
    h(
      'form',
      { class: 'card', 'aria-labelledby': 'role-form' },
      heading,
      field('Role name', name),
      h('h3', { text: 'Permissions' }),
      picker.el,
      h('div', { class: 'actions' }, submit, cancel),
    )
  );

  /**
   * Fills the form with a role to edit, or empties it to create one.
   * @param {any} role
   */
  function edit(role) {
    editing = role;
    form.reset();
    name.value = role?.name ?? '';
    picker.choose(role?.permissions ?? []);
    replace(heading, role ? `Edit role ${role.name}` : 'Create a role');
    replace(submit, role ? 'Save role' : 'Create role');
    /** @type {HTMLButtonElement} */ (cancel).hidden = !role;
    if (role) heading.focus();
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const body = { name: name.value.trim(), permissions: picker.selected() };
      const role = editing
        ? await json('PATCH', `${tenantPath()}/roles/${seg(editing.id)}`, { json: body })
        : await json('POST', `${tenantPath()}/roles`, { json: body });
      ui.say(
        `Role ${role.name} ${editing ? 'saved' : 'created'} with ${role.permissions.length} permissions.`,
      );
      edit(null);
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
