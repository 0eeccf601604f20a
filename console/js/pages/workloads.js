/**
 * Workloads (the applications that call the crypto API): list, create, rotate the secret,
 * disable and enable. A new secret is shown once, with a copy button and a warning, and is
 * removed from the page when the person says they have stored it or leaves the page. The
 * Connect card of a workload (a new one, or the one chosen in the list) says where and with
 * what it calls each API: the Core API's token endpoint, the AWS KMS API and the Vault Transit
 * API at the tenant's mounts. It names the secret, never shows it.
 */
import { json, seg, tenantPath } from '../api.js';
import { button, field, h, replace, select, when } from '../dom.js';
import { pagedList } from '../list.js';
import { roleOptions } from './roles.js';

/**
 * A term and its value in a facts list, the value as code when it is something to type.
 * @param {string} term
 * @param {string | Node} value
 */
const fact = (term, value) => [
  h('dt', { text: term }),
  h('dd', {}, typeof value === 'string' ? h('code', { text: value }) : value),
];

/**
 * How a workload connects to each API, with its own names filled in.
 * @param {{ id: string, name: string, clientId: string }} w
 * @param {string[] | null} mounts the tenant's Transit mounts (null: not readable with this login)
 */
function connectCard(w, mounts) {
  const origin = location.origin;
  const shown = mounts ?? ['transit'];
  const login = JSON.stringify({ role_id: w.clientId, secret_id: '<client secret>' });
  return h(
    'section',
    { class: 'card', id: 'connect', 'aria-labelledby': 'connect-title' },
    h('h2', { id: 'connect-title', tabindex: -1, text: `Connect ${w.name}` }),
    h('p', {
      class: 'hint',
      text: 'The client secret is the one shown once when the workload was created or its secret rotated; Keyward cannot show it again.',
    }),
    h('h3', { text: 'Core API' }),
    h(
      'dl',
      { class: 'facts' },
      ...fact('Token endpoint', `POST ${origin}/api/v3/auth/token`),
      ...fact(
        'Form',
        `grant_type=client_credentials&client_id=${w.clientId}&client_secret=<client secret>`,
      ),
      ...fact('Then', `Authorization: Bearer <access_token> on ${origin}/api/v3/crypto/…`),
    ),
    h('h3', { text: 'AWS KMS API' }),
    h(
      'dl',
      { class: 'facts' },
      ...fact('Endpoint', `${origin}/`),
      ...fact('AWS CLI', `aws --endpoint-url ${origin} kms …`),
      ...fact(
        'Access keys',
        h(
          'span',
          {},
          'An access key of this workload, its secret shown once: ',
          h('code', { text: `keyward workloads access-keys create ${w.id}` }),
          ', or ',
          h('code', { text: `POST ${tenantPath()}/workloads/${w.id}/access-keys` }),
          '. Any region, unless the service lists them (AWS_KMS_REGIONS).',
        ),
      ),
    ),
    h('h3', { text: 'Vault Transit API' }),
    h(
      'dl',
      { class: 'facts' },
      ...fact('VAULT_ADDR', origin),
      ...fact(
        mounts && mounts.length !== 1 ? 'Mounts' : 'Mount',
        h(
          'span',
          {},
          ...shown.flatMap((m, i) => [i ? ', ' : '', h('code', { text: `/v1/${m}/` })]),
          mounts
            ? ''
            : ' (the default; this login cannot read the tenant’s policy, where other mounts are set)',
        ),
      ),
      ...fact('AppRole login', `POST ${origin}/v1/auth/approle/login`),
      ...fact(
        'Body',
        h(
          'span',
          {},
          h('code', { text: login }),
          ': role_id is the workload’s client id, secret_id its client secret. The answer’s auth.client_token goes in X-Vault-Token; it is not renewable, so log in again before lease_duration ends.',
        ),
      ),
      ...fact('SOPS key URL', `${origin}/v1/${shown[0]}/keys/<key name>`),
    ),
  );
}

/** @param {import('../main.js').Ui} ui */
export async function renderWorkloads(ui) {
  ui.title('Workloads');
  const secretSlot = h('div', { id: 'secret-slot' });
  const connectSlot = h('div', { id: 'connect-slot' });
  // The tenant's Transit mounts, when this login may read its policy.
  /** @type {string[] | null} */
  const mounts = await json('GET', `${tenantPath()}/policies/effective`).then(
    (answer) => answer.policy?.vaultTransitMounts ?? null,
    () => null,
  );
  /**
   * Shows how a workload connects.
   * @param {any} w
   * @param {boolean} [focus]
   */
  const showConnect = (w, focus = true) => {
    const card = connectCard(w, mounts);
    replace(connectSlot, card);
    if (focus) /** @type {HTMLElement} */ (card.querySelector('h2')).focus();
  };
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
        button('Connect', () => showConnect(w), { 'aria-label': `Connect ${w.name}` }),
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
      showConnect(w, false);
      showSecret(w.name, w.clientId, w.clientSecret);
      await list.reload();
    } catch (err) {
      ui.fail(err);
    }
  });
  ui.root.append(secretSlot, connectSlot, list.el, form);
  await list.reload();
}
