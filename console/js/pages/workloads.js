/**
 * Workloads (the applications that call the crypto API): list, create, rotate the secret,
 * disable and enable. A new secret is shown once, with a copy button and a warning, and is
 * removed from the page when the person says they have stored it or leaves the page.
 */
import { json, seg, tenantPath } from '../api.js';
import { button, field, h, replace, select, when } from '../dom.js';
import { pagedList } from '../list.js';
import { roleOptions } from './roles.js';

/** @param {import('../main.js').Ui} ui */
export async function renderWorkloads(ui) {
  ui.title('Workloads');
  const secretSlot = h('div', { id: 'secret-slot' });
  /** @param {() => Promise<unknown>} f */
  const guard = (f) => () => f().catch(ui.fail);

  /**
   * Shows a client secret once.
   * @param {string} name
   * @param {string} clientId
   * @param {string} secret
   */
  function showSecret(name, clientId, secret) {
    const value = h('code', { class: 'secret', id: 'client-secret', text: secret });
    const copied = h('span', { role: 'status', class: 'hint' });
    const panel = h(
      'section',
      { class: 'card secret-panel', 'aria-labelledby': 'secret-title' },
      h('h2', { id: 'secret-title', tabindex: -1, text: `Client secret of ${name}` }),
      h(
        'p',
        { class: 'warning' },
        h('strong', { text: 'Shown once. ' }),
        'Copy it into the workload’s secret store now: Keyward keeps only a hash and cannot show it again.',
      ),
      h(
        'dl',
        { class: 'facts' },
        h('dt', { text: 'Client id' }),
        h('dd', {}, h('code', { text: clientId })),
        h('dt', { text: 'Client secret' }),
        h('dd', {}, value),
      ),
      h(
        'div',
        { class: 'actions' },
        button('Copy secret', async () => {
          try {
            await navigator.clipboard.writeText(secret);
            replace(copied, 'Copied.');
          } catch {
            replace(copied, 'The browser refused to copy: select the secret and copy it by hand.');
          }
        }),
        button('I stored it, hide the secret', () => {
          replace(secretSlot);
          ui.say('The secret is no longer on the page.');
        }),
        copied,
      ),
    );
    replace(secretSlot, panel);
    /** @type {HTMLElement} */ (panel.querySelector('h2')).focus();
  }

  /** @param {any} w */
  const rotate = async (w) => {
    const answer = await json('POST', `${tenantPath()}/workloads/${seg(w.id)}/secret`, {
      json: {},
    });
    showSecret(w.name, w.clientId, answer.clientSecret);
  };
  /** @param {any} w @param {'disable' | 'enable'} action */
  const toggle = async (w, action) => {
    await json('POST', `${tenantPath()}/workloads/${seg(w.id)}/${action}`);
    ui.say(`Workload ${w.name} ${action}d.`);
    await list.refresh();
  };

  const roles = await roleOptions().catch((err) => {
    ui.fail(err);
    return /** @type {Array<[string, string]>} */ ([]);
  });
  const roleName = new Map(roles);
  const list = pagedList({
    caption: 'Workloads of this tenant',
    headers: ['Name', 'Client id', 'Role', 'Status', 'Created', 'Actions'],
    onError: ui.fail,
    fetchPage: (cursor) =>
      json('GET', `${tenantPath()}/workloads`, { query: { limit: 20, cursor } }),
    row: (w) => [
      w.name,
      h('code', { text: w.clientId }),
      roleName.get(w.roleId) ?? w.roleId,
      w.disabled ? 'disabled' : 'enabled',
      when(w.createdAt),
      h(
        'div',
        { class: 'row-actions' },
        button(
          'Rotate secret',
          guard(() => rotate(w)),
          { 'aria-label': `Rotate secret of ${w.name}` },
        ),
        w.disabled
          ? button(
              'Enable',
              guard(() => toggle(w, 'enable')),
              { 'aria-label': `Enable ${w.name}` },
            )
          : button(
              'Disable',
              guard(() => toggle(w, 'disable')),
              { 'aria-label': `Disable ${w.name}` },
            ),
      ),
    ],
  });

  const name = h('input', { type: 'text', required: true, maxLength: 200, autocomplete: 'off' });
  const role = select(roles, { required: true });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'create-workload' },
    h('h2', { id: 'create-workload', text: 'Create a workload' }),
    roles.length === 0
      ? h('p', { class: 'hint', text: 'Create a role first: a workload acts with one role.' })
      : null,
    h('div', { class: 'grid' }, field('Workload name', name), field('Role', role)),
    h('button', { type: 'submit', text: 'Create workload' }),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const w = await json('POST', `${tenantPath()}/workloads`, {
        json: {
          name: /** @type {HTMLInputElement} */ (name).value.trim(),
          roleId: /** @type {HTMLSelectElement} */ (role).value,
        },
      });
      /** @type {HTMLFormElement} */ (form).reset();
      showSecret(w.name, w.clientId, w.clientSecret);
      await list.reload();
    } catch (err) {
      ui.fail(err);
    }
  });
  ui.root.append(secretSlot, list.el, form);
  await list.reload();
}
