/** Users (people) of the tenant: list, create with a role, disable and enable. */
import { json, seg, tenantPath } from '../api.js';
import { button, field, h, select, when } from '../dom.js';
import { pagedList } from '../list.js';
import { roleOptions } from './roles.js';

/** @param {import('../main.js').Ui} ui */
export async function renderUsers(ui) {
  ui.title('Users');
  /** @param {() => Promise<unknown>} f */
  const guard = (f) => () => f().catch(ui.fail);
  const roles = await roleOptions().catch((err) => {
    ui.fail(err);
    return /** @type {Array<[string, string]>} */ ([]);
  });
  const roleName = new Map(roles);
  /** @param {any} u @param {boolean} disabled */
  const toggle = async (u, disabled) => {
    await json('PATCH', `${tenantPath()}/users/${seg(u.id)}`, { json: { disabled } });
    ui.say(`User ${u.email} ${disabled ? 'disabled' : 'enabled'}.`);
    await list.refresh();
  };
  const list = pagedList({
    caption: 'Users of this tenant',
    headers: ['E-mail', 'Role', 'Status', 'Created', 'Actions'],
    onError: ui.fail,
    fetchPage: (cursor) => json('GET', `${tenantPath()}/users`, { query: { limit: 20, cursor } }),
    row: (u) => {
      const role = /** @type {HTMLSelectElement} */ (
        select(roles, { 'aria-label': `Role of ${u.email}` })
      );
      role.value = u.roleId;
      return [
        u.email,
        h(
          'div',
          { class: 'row-actions' },
          role,
          button(
            'Change role',
            guard(async () => {
              await json('PATCH', `${tenantPath()}/users/${seg(u.id)}`, {
                json: { roleId: role.value },
              });
              ui.say(`${u.email} now has the role ${roleName.get(role.value) ?? role.value}.`);
              await list.refresh();
            }),
            { 'aria-label': `Change role of ${u.email}` },
          ),
        ),
        u.disabled ? 'disabled' : 'enabled',
        when(u.createdAt),
        u.disabled
          ? button(
              'Enable',
              guard(() => toggle(u, false)),
              { 'aria-label': `Enable ${u.email}` },
            )
          : button(
              'Disable',
              guard(() => toggle(u, true)),
              { 'aria-label': `Disable ${u.email}` },
            ),
      ];
    },
  });
  const email = h('input', { type: 'email', required: true, autocomplete: 'off' });
  const password = h('input', {
    type: 'password',
    required: true,
    minLength: 12,
    autocomplete: 'new-password',
  });
  const role = select(roles, { required: true });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'create-user' },
    h('h2', { id: 'create-user', text: 'Create a user' }),
    h(
      'div',
      { class: 'grid' },
      field('User e-mail', email),
      field('Initial password', password, '12 characters or more.'),
      field('Role', role),
    ),
    h('button', { type: 'submit', text: 'Create user' }),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const u = await json('POST', `${tenantPath()}/users`, {
        json: {
          email: /** @type {HTMLInputElement} */ (email).value.trim(),
          password: /** @type {HTMLInputElement} */ (password).value,
          roleId: /** @type {HTMLSelectElement} */ (role).value,
        },
      });
      /** @type {HTMLFormElement} */ (form).reset();
      ui.say(`User ${u.email} created.`);
      await list.reload();
    } catch (err) {
      ui.fail(err);
    }
  });
  ui.root.append(list.el, form);
  await list.reload();
}
