/**
 * One key: its record, its versions, the public key of each version to download (PEM or JWK),
 * and its settings (description, rotation period, minimum decryption version).
 */
import { ProblemError, json, seg, tenantPath } from '../api.js';
import { button, download, field, h, replace, table, when } from '../dom.js';
import { lifecycleButtons } from '../lifecycle.js';

/**
 * @param {import('../main.js').Ui} ui
 * @param {string} kid
 */
export async function renderKey(ui, kid) {
  ui.title(`Key ${kid}`);
  ui.root.append(h('p', {}, h('a', { href: '#/keys', text: '← All keys' })));
  const loading = h('p', { class: 'loading', text: 'Loading…' });
  ui.root.append(loading);
  const key = await json('GET', `${tenantPath()}/keys/${seg(kid)}`);
  /** @type {any} */
  let pub = null;
  try {
    pub = await json('GET', `${tenantPath()}/keys/${seg(kid)}/public`);
  } catch (err) {
    // A symmetric key has no public part: the API says so with a 4xx problem.
    if (!(err instanceof ProblemError) || err.status >= 500) throw err;
  }
  loading.remove();

  const facts = [
    ['Type', key.type],
    ['Usage', (key.usages ?? [key.usage]).join(', ')],
    ['Allowed usages', (key.allowedUsages ?? [key.usage]).join(', ')],
    [
      'State',
      key.deletionDate
        ? `${key.state}, pending deletion on ${when(key.deletionDate)} (resume cancels it)`
        : key.state,
    ],
    ['Source', key.source],
    ['Current version', String(key.currentVersion)],
    ['Minimum decryption version', String(key.minDecryptionVersion ?? 1)],
    [
      'Rotation period',
      key.rotationPeriodDays
        ? `${key.rotationPeriodDays} days (${key.rotationPeriodFrom ?? 'key'})`
        : 'none',
    ],
    ['Next rotation', when(key.nextRotationAt)],
    ['Last rotated', when(key.lastRotatedAt)],
    ['Created', when(key.createdAt)],
    ['Description', key.description || '—'],
  ];
  ui.root.append(
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'key-facts' },
      h('h2', { id: 'key-facts', text: 'Record' }),
      lifecycleButtons(ui, key, () => renderAgain(ui, kid)),
      h(
        'dl',
        { class: 'facts' },
        ...facts.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]),
      ),
    ),
  );

  /** @type {Map<number, any>} */
  const pubOf = new Map((pub?.versions ?? []).map((/** @type {any} */ v) => [v.version, v]));
  ui.root.append(
    h(
      'section',
      { 'aria-labelledby': 'key-versions' },
      h('h2', { id: 'key-versions', text: 'Versions' }),
      pub
        ? null
        : h('p', { class: 'hint', text: 'A symmetric key has no public key to download.' }),
      table(
        `Versions of ${kid}`,
        ['Version', 'Created', 'Certificate', 'Public key'],
        (key.versions ?? []).map((/** @type {any} */ v) => {
          const p = pubOf.get(v.version);
          return [
            String(v.version),
            when(v.createdAt),
            certificateCell(v),
            p
              ? h(
                  'div',
                  { class: 'row-actions' },
                  button(
                    'PEM',
                    () =>
                      download(
                        new Blob([p.pem], { type: 'application/x-pem-file' }),
                        `${kid}-v${v.version}.pem`,
                      ),
                    {
                      'aria-label': `Download version ${v.version} as PEM`,
                    },
                  ),
                  button(
                    'JWK',
                    () =>
                      download(
                        new Blob([JSON.stringify(p.jwk, null, 2)], {
                          type: 'application/jwk+json',
                        }),
                        `${kid}-v${v.version}.jwk.json`,
                      ),
                    { 'aria-label': `Download version ${v.version} as JWK` },
                  ),
                )
              : '—',
          ];
        }),
        'This key has no retained versions.',
      ),
    ),
    settingsForm(ui, key),
  );
}

/**
 * @param {import('../main.js').Ui} ui
 * @param {any} key
 */
function settingsForm(ui, key) {
  const description = h('input', { type: 'text', maxLength: 500, value: key.description ?? '' });
  const period = h('input', {
    type: 'number',
    min: 1,
    max: 3650,
    value: key.rotationPeriodDays ?? '',
  });
  const minVersion = h('input', {
    type: 'number',
    min: 1,
    max: key.currentVersion,
    value: key.minDecryptionVersion ?? 1,
  });
  const submit = h('button', { type: 'submit', text: 'Save settings' });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'key-settings' },
    h('h2', { id: 'key-settings', text: 'Settings' }),
    h(
      'div',
      { class: 'grid' },
      field('Description', description),
      field('Rotation period (days)', period, 'Empty: the policy decides.'),
      field('Minimum decryption version', minVersion),
    ),
    submit,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      // Only what changed is sent: an imported key refuses a rotation period (409).
      /** @type {Record<string, unknown>} */
      const body = {};
      const d = /** @type {HTMLInputElement} */ (description).value;
      if (d !== (key.description ?? '')) body.description = d || null;
      const p = /** @type {HTMLInputElement} */ (period).value;
      if (p !== String(key.rotationPeriodDays ?? ''))
        body.rotationPeriodDays = p ? Number(p) : null;
      const m = Number(/** @type {HTMLInputElement} */ (minVersion).value);
      if (m !== (key.minDecryptionVersion ?? 1)) body.minDecryptionVersion = m;
      if (Object.keys(body).length === 0) return ui.say('Nothing changed.');
      await json('PATCH', `${tenantPath()}/keys/${seg(key.kid)}`, { json: body });
      ui.say('Settings saved.');
      // The record above shows the saved values (and a rescheduled next rotation).
      await renderAgain(ui, key.kid);
    } catch (err) {
      ui.fail(err);
    }
  });
  return form;
}

/**
 * Draws the key's page again after a change of state.
 * @param {import('../main.js').Ui} ui
 * @param {string} kid
 */
async function renderAgain(ui, kid) {
  replace(ui.root);
  await renderKey(ui, kid);
}

/**
 * A version's certificate as the key view gives it: who it names, who issued it, its serial and
 * validity (an imported key); 'no' for a generated one.
 * @param {any} v
 */
function certificateCell(v) {
  const c = v.certificate;
  if (!c) return v.hasCertificate ? 'yes' : 'no';
  return h(
    'div',
    {},
    h('div', { text: c.subject }),
    h('div', { class: 'hint', text: `issuer ${c.issuer}, serial ${c.serialNumber}` }),
    h('div', { class: 'hint', text: `valid ${when(c.notBefore)} to ${when(c.notAfter)}` }),
  );
}
