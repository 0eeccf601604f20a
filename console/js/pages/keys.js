/**
 * Keys of the tenant: a paged table (kid, type, usage, state, current version, next rotation)
 * with filters, a create form, and the lifecycle actions. Revoke and archive ask for the kid to
 * be typed first: they cannot be undone.
 */
import { json, seg, tenantPath } from '../api.js';
import { field, h, select, when } from '../dom.js';
import { lifecycleButtons } from '../lifecycle.js';
import { pagedList } from '../list.js';

/** Key types the service generates (shared/crypto/registry.ts). */
export const KEY_TYPES = [
  'aes-256',
  'aes-128',
  'rsa-2048',
  'rsa-3072',
  'rsa-4096',
  'rsa-pss-2048',
  'rsa-pss-3072',
  'rsa-pss-4096',
  'ec-p256',
  'ec-p384',
  'ec-p521',
  'ed25519',
  'ed448',
  'x25519',
  'hmac-sha256',
  'hmac-sha384',
  'hmac-sha512',
  'ml-kem-768',
  'ml-kem-1024',
  'x25519-ml-kem-768',
  'ml-dsa-44',
  'ml-dsa-65',
  'ml-dsa-87',
];

const STATES = ['active', 'suspended', 'revoked', 'archived'];

/**
 * @param {import('../main.js').Ui} ui
 */
export async function renderKeys(ui) {
  ui.title('Keys');
  const state = select([
    ['', 'all but archived'],
    ...STATES.map((s) => /** @type {[string, string]} */ ([s, s])),
  ]);
  const type = select([
    ['', 'any type'],
    ...KEY_TYPES.map((t) => /** @type {[string, string]} */ ([t, t])),
  ]);
  const search = h('input', { type: 'search', autocomplete: 'off' });

  const list = pagedList({
    caption: 'Keys of this tenant',
    headers: ['Kid', 'Type', 'Usage', 'State', 'Current version', 'Next rotation', 'Actions'],
    onError: ui.fail,
    empty: 'No keys match. Create one below.',
    fetchPage: (cursor) =>
      json('GET', `${tenantPath()}/keys`, {
        query: { state: /** @type {HTMLSelectElement} */ (state).value, limit: 20, cursor },
      }),
    filter: (items) => {
      const t = /** @type {HTMLSelectElement} */ (type).value;
      const q = /** @type {HTMLInputElement} */ (search).value.trim().toLowerCase();
      return items.filter(
        (k) => (!t || k.type === t) && (!q || String(k.kid).toLowerCase().includes(q)),
      );
    },
    row: (k) => [
      h('a', { href: `#/keys/${seg(k.kid)}`, text: k.kid }),
      k.type,
      (k.usages ?? [k.usage]).join(', '),
      h('span', { class: `state state-${k.state}`, text: k.state }),
      String(k.currentVersion),
      when(k.nextRotationAt),
      lifecycleButtons(ui, k, () => list.refresh()),
    ],
  });
  state.addEventListener('change', () => list.reload());
  type.addEventListener('change', () => list.redraw());
  search.addEventListener('input', () => list.redraw());

  ui.root.append(
    h(
      'section',
      { 'aria-labelledby': 'keys-filters' },
      h('h2', { id: 'keys-filters', class: 'visually-hidden', text: 'Filters' }),
      h(
        'div',
        { class: 'filters' },
        field('State', state),
        field('Type', type),
        field('Kid contains', search),
      ),
    ),
    list.el,
    createForm(ui, () => list.reload()),
    importForm(ui, () => list.reload()),
  );
  await list.reload();
}

/**
 * @param {import('../main.js').Ui} ui
 * @param {() => Promise<void>} done
 */
function createForm(ui, done) {
  const kid = h('input', {
    type: 'text',
    autocomplete: 'off',
    pattern: '[A-Za-z0-9._:\\-]{1,128}',
    spellcheck: false,
  });
  const type = select(KEY_TYPES.map((t) => /** @type {[string, string]} */ ([t, t])));
  const usage = select([
    ['', 'the type’s default'],
    ['encrypt', 'encrypt'],
    ['sign', 'sign'],
  ]);
  const period = h('input', { type: 'number', min: 1, max: 3650, inputMode: 'numeric' });
  const submit = h('button', { type: 'submit', text: 'Create key' });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'create-key' },
    h('h2', { id: 'create-key', text: 'Create a key' }),
    h(
      'div',
      { class: 'grid' },
      field('Kid', kid, 'Optional: letters, digits, . _ : - (a name is generated otherwise).'),
      field('Key type', type),
      field('Usage', usage),
      field('Rotation period (days)', period, 'Optional: rotate automatically.'),
    ),
    submit,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    submit.setAttribute('aria-busy', 'true');
    try {
      /** @type {Record<string, unknown>} */
      const body = { type: /** @type {HTMLSelectElement} */ (type).value };
      const k = /** @type {HTMLInputElement} */ (kid).value.trim();
      if (k) body.kid = k;
      const u = /** @type {HTMLSelectElement} */ (usage).value;
      if (u) body.usage = u;
      const p = /** @type {HTMLInputElement} */ (period).value;
      if (p) body.rotationPeriodDays = Number(p);
      const key = await json('POST', `${tenantPath()}/keys`, { json: body });
      ui.say(`Key ${key.kid} created.`);
      /** @type {HTMLFormElement} */ (form).reset();
      await done();
    } catch (err) {
      ui.fail(err);
    } finally {
      submit.removeAttribute('aria-busy');
    }
  });
  return form;
}

/**
 * Imports a key with its certificate from a PKCS#12 or PEM keystore (for migration: the keys of
 * existing CMS files).
 * @param {import('../main.js').Ui} ui
 * @param {() => Promise<void>} done
 */
function importForm(ui, done) {
  const file = /** @type {HTMLInputElement} */ (
    h('input', { type: 'file', required: true, accept: '.p12,.pfx,.pem,.key,.crt' })
  );
  const password = h('input', { type: 'password', autocomplete: 'off' });
  const kid = h('input', { type: 'text', autocomplete: 'off', spellcheck: false });
  const usage = select([
    ['', 'the type’s default'],
    ['encrypt', 'encrypt'],
    ['sign', 'sign'],
  ]);
  const submit = h('button', { type: 'submit', text: 'Import key' });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'import-key' },
    h('h2', { id: 'import-key', text: 'Import a keystore' }),
    h(
      'div',
      { class: 'grid' },
      field('Keystore file (PKCS#12 or PEM)', file),
      field('Keystore password', password, 'PKCS#12 only.'),
      field('Kid of the imported key', kid),
      field('Usage of the imported key', usage),
    ),
    submit,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    submit.setAttribute('aria-busy', 'true');
    try {
      const f = file.files?.[0];
      if (!f) throw { title: 'No file', detail: 'choose a keystore file first' };
      const body = new FormData();
      body.append('keystore', f, f.name);
      const pw = /** @type {HTMLInputElement} */ (password).value;
      if (pw) body.append('password', pw);
      const k = /** @type {HTMLInputElement} */ (kid).value.trim();
      if (k) body.append('kid', k);
      const u = /** @type {HTMLSelectElement} */ (usage).value;
      if (u) body.append('usage', u);
      const answer = await json('POST', `${tenantPath()}/keys/import-keystore`, { form: body });
      const names = (answer.keys ?? []).map((/** @type {any} */ x) => x.kid).join(', ');
      ui.say(`Imported: ${names || k}.`);
      /** @type {HTMLFormElement} */ (form).reset();
      await done();
    } catch (err) {
      ui.fail(err);
    } finally {
      submit.removeAttribute('aria-busy');
    }
  });
  return form;
}
