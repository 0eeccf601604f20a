/**
 * The tenant's key policy: the templates, the effective policy, and the overrides (a template,
 * the allowed key types narrowed further, the rotation period, the Vault Transit mounts). The
 * overrides are replaced whole, so the form sends every one the tenant keeps.
 */
import { json, tenantPath } from '../api.js';
import { field, h, replace, select } from '../dom.js';

/** @param {import('../main.js').Ui} ui */
export async function renderPolicies(ui) {
  ui.title('Policies');
  const [templates, current] = await Promise.all([
    json('GET', `${tenantPath()}/policies/templates`),
    json('GET', `${tenantPath()}/policies/effective`),
  ]);
  const effective = h('section', { class: 'card', 'aria-labelledby': 'effective-title' });
  /** @param {any} answer */
  const showEffective = (answer) =>
    replace(
      effective,
      h('h2', { id: 'effective-title', text: 'Effective policy' }),
      h(
        'dl',
        { class: 'facts' },
        h('dt', { text: 'Template' }),
        h('dd', { text: answer.overrides?.template ?? 'default' }),
        h('dt', { text: 'Rotation period' }),
        h('dd', {
          text: answer.policy?.rotationPeriodDays
            ? `${answer.policy.rotationPeriodDays} days`
            : '—',
        }),
        h('dt', { text: 'Allowed key types' }),
        h('dd', {
          text: (answer.policy?.allowedKeyTypes ?? []).join(', ') || 'every supported type',
        }),
        h('dt', { text: 'Vault Transit mounts' }),
        h(
          'dd',
          {},
          ...(answer.policy?.vaultTransitMounts ?? ['transit']).flatMap(
            (/** @type {string} */ m, /** @type {number} */ i) => [
              i ? ', ' : '',
              h('code', { text: `/v1/${m}/` }),
            ],
          ),
        ),
      ),
    );
  showEffective(current);

  const template = select(
    templates.items.map((/** @type {any} */ t) => [t.name, `${t.name}: ${t.description}`]),
  );
  /** @type {HTMLSelectElement} */ (template).value = current.overrides?.template ?? 'default';
  const types = h('input', {
    type: 'text',
    autocomplete: 'off',
    spellcheck: false,
    value: (current.overrides?.allowedKeyTypes ?? []).join(', '),
  });
  const period = h('input', {
    type: 'number',
    min: 1,
    max: 3650,
    value: current.overrides?.rotationPeriodDays ?? '',
  });
  const mounts = h('input', {
    type: 'text',
    autocomplete: 'off',
    spellcheck: false,
    value: (current.overrides?.vaultTransitMounts ?? []).join(', '),
  });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'overrides-title' },
    h('h2', { id: 'overrides-title', text: 'Overrides' }),
    h(
      'div',
      { class: 'grid' },
      field('Template', template),
      field(
        'Allowed key types',
        types,
        'Comma-separated; may only narrow the template. Empty: the template’s.',
      ),
      field('Rotation period (days)', period, 'Empty: the template’s.'),
      field(
        'Vault Transit mounts',
        mounts,
        'Comma-separated paths below /v1/ where the Vault Transit API answers for this tenant, e.g. sops, transit: 1 to 8, each one path segment (letters, digits, _ and -), not auth, sys, identity, cubbyhole or audit. Empty: transit.',
      ),
    ),
    h('button', { type: 'submit', text: 'Save overrides' }),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      /** @type {Record<string, unknown>} */
      const body = { template: /** @type {HTMLSelectElement} */ (template).value };
      const list = /** @type {HTMLInputElement} */ (types).value
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean);
      if (list.length) body.allowedKeyTypes = list;
      const p = /** @type {HTMLInputElement} */ (period).value;
      if (p) body.rotationPeriodDays = Number(p);
      const named = /** @type {HTMLInputElement} */ (mounts).value
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean);
      if (named.length) body.vaultTransitMounts = named;
      showEffective(await json('PUT', `${tenantPath()}/policies/overrides`, { json: body }));
      ui.say('Overrides saved.');
    } catch (err) {
      ui.fail(err);
    }
  });
  ui.root.append(effective, form);
}
