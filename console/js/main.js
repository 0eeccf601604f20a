/**
 * The console's entry: the sign-in form, then the shell (header, navigation, the page of the
 * location's hash) for the signed-in person. Every failure is shown in the alert region as the
 * problem's title and detail; nothing leaves the page blank.
 */
import { h, replace, field } from './dom.js';
import { current, nameTenant, onSessionEnd, signIn, signOut } from './session.js';
import { json, tenantPath } from './api.js';
import { renderKeys } from './pages/keys.js';
import { renderKey } from './pages/key.js';
import { renderTenants } from './pages/tenants.js';
import { renderWorkloads } from './pages/workloads.js';
import { renderRoles } from './pages/roles.js';
import { renderUsers } from './pages/users.js';
import { renderAudit } from './pages/audit.js';
import { renderMigration } from './pages/migration.js';
import { renderPolicies } from './pages/policies.js';
import { renderExchanges } from './pages/exchanges.js';
import { renderBulk } from './pages/bulk.js';

/**
 * What a page gets: where to draw, and how to report to the person.
 * @typedef {object} Ui
 * @property {HTMLElement} root
 * @property {(err: unknown) => void} fail shows a failure in the alert region
 * @property {(message: string) => void} say a polite status message
 * @property {(title: string) => HTMLElement} title sets the heading and the document title
 * @property {() => void} refreshHeader
 */

/** @type {Array<{ path: string, label: string, platform?: boolean, render: (ui: Ui, arg: string) => Promise<void> | void }>} */
const PAGES = [
  { path: 'keys', label: 'Keys', render: renderKeys },
  { path: 'tenants', label: 'Tenants', platform: true, render: renderTenants },
  { path: 'workloads', label: 'Workloads', render: renderWorkloads },
  { path: 'roles', label: 'Roles', render: renderRoles },
  { path: 'users', label: 'Users', render: renderUsers },
  { path: 'audit', label: 'Audit', render: renderAudit },
  { path: 'migration', label: 'Migration', render: renderMigration },
  { path: 'policies', label: 'Policies', render: renderPolicies },
  { path: 'exchanges', label: 'Exchanges', render: renderExchanges },
  { path: 'bulk', label: 'Bulk operations', render: renderBulk },
];

const app = /** @type {HTMLElement} */ (document.getElementById('app'));
const alertBox = h('div', { id: 'alert', role: 'alert', class: 'alert', hidden: true });
const statusBox = h('div', { id: 'status', role: 'status', class: 'status' });

/** @param {unknown} err */
function fail(err) {
  const e = /** @type {{ title?: string, detail?: string, message?: string }} */ (err ?? {});
  const title = e.title ?? 'Something went wrong';
  const detail = e.detail ?? e.message ?? String(err);
  replace(
    alertBox,
    h('strong', { class: 'problem-title', text: title }),
    ' ',
    h('span', { class: 'problem-detail', text: detail }),
  );
  alertBox.hidden = false;
  // A success said before this failure is no longer true of the page.
  replace(statusBox);
}

function clearAlert() {
  alertBox.hidden = true;
  replace(alertBox);
}

/** @param {string} message */
function say(message) {
  // A new outcome replaces the last one: an earlier failure does not stay beside a success.
  if (message) clearAlert();
  replace(statusBox, message);
}

// A failure no page caught still reaches the person.
window.addEventListener('unhandledrejection', (event) => fail(event.reason));
window.addEventListener('error', (event) => fail(event.error ?? event.message));

onSessionEnd((reason) => showSignIn(reason));

/** @param {string} [notice] */
function showSignIn(notice) {
  const email = h('input', {
    type: 'email',
    name: 'email',
    autocomplete: 'username',
    required: true,
  });
  const password = h('input', {
    type: 'password',
    name: 'password',
    autocomplete: 'current-password',
    required: true,
  });
  const tenant = h('input', {
    type: 'text',
    name: 'tenant',
    required: true,
    spellcheck: false,
    autocomplete: 'off',
    // The pattern is compiled with the v flag (HTML spec), where a literal - in a class must be
    // escaped: unescaped, every page logged an invalid-pattern error and the field went unchecked.
    pattern: '[0-9a-fA-F\\-]{36}',
  });
  const submit = h('button', { type: 'submit', text: 'Sign in' });
  const form = h(
    'form',
    { class: 'card signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', text: 'Sign in to Keyward' }),
    field('E-mail', email),
    field('Password', password),
    field(
      'Tenant',
      tenant,
      'The id of your tenant (a UUID); administrators use the platform tenant.',
    ),
    submit,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    submit.setAttribute('aria-busy', 'true');
    /** @type {HTMLButtonElement} */ (submit).disabled = true;
    try {
      await signIn(
        /** @type {HTMLInputElement} */ (email).value,
        /** @type {HTMLInputElement} */ (password).value,
        /** @type {HTMLInputElement} */ (tenant).value,
      );
      /** @type {HTMLInputElement} */ (password).value = '';
      // The header names the tenant; a role without admin.tenant.read still signs in.
      await json('GET', tenantPath())
        .then((t) => nameTenant(t.name))
        .catch(() => undefined);
      if (!location.hash || location.hash === '#/') location.hash = '#/keys';
      showShell();
    } catch (err) {
      fail(err);
    } finally {
      submit.removeAttribute('aria-busy');
      /** @type {HTMLButtonElement} */ (submit).disabled = false;
    }
  });
  replace(
    app,
    h(
      'main',
      { id: 'main', tabindex: -1, class: 'signin-page' },
      alertBox,
      notice ? h('p', { class: 'notice', role: 'status', text: notice }) : null,
      form,
    ),
  );
  clearAlert();
  /** @type {HTMLInputElement} */ (email).focus();
}

const header = h('header', { class: 'top' });
const nav = h('nav', { 'aria-label': 'Main' });
const main = h('main', { id: 'main', tabindex: -1 });
const page = h('div', { id: 'page' });

function drawHeader() {
  const who = current();
  replace(
    header,
    h('a', { class: 'brand', href: '#/keys', text: 'Keyward console' }),
    h(
      'p',
      { class: 'tenant' },
      'Tenant: ',
      h('strong', { id: 'current-tenant', text: who.tenantName }),
      ' ',
      h('code', { text: who.tenantId }),
    ),
    h('p', { class: 'who' }, 'Signed in as ', h('strong', { id: 'signed-in-as', text: who.email })),
    h('button', {
      type: 'button',
      class: 'secondary',
      text: 'Sign out',
      onclick: async () => {
        await signOut();
        location.hash = '';
        showSignIn('You signed out.');
      },
    }),
  );
  const here = location.hash.split('/')[1] ?? 'keys';
  replace(
    nav,
    h(
      'ul',
      {},
      ...PAGES.filter((p) => !p.platform || who.isPlatform).map((p) =>
        h(
          'li',
          {},
          h('a', {
            href: `#/${p.path}`,
            text: p.label,
            'aria-current': p.path === here ? 'page' : undefined,
          }),
        ),
      ),
    ),
  );
}

function showShell() {
  replace(main, alertBox, statusBox, page);
  replace(app, header, nav, main);
  route();
}

async function route() {
  if (!current().signedIn) return showSignIn();
  const [, path = 'keys', arg = ''] = location.hash.split('/');
  const target = PAGES.find((p) => p.path === path) ?? PAGES[0];
  clearAlert();
  say('');
  drawHeader();
  replace(page);
  /** @type {Ui} */
  const ui = {
    root: page,
    fail,
    say,
    title(text) {
      document.title = `${text} · Keyward console`;
      const h1 = h('h1', { text });
      page.prepend(h1);
      return h1;
    },
    refreshHeader: drawHeader,
  };
  try {
    if (path === 'keys' && arg) await renderKey(ui, decodeURIComponent(arg));
    else await target.render(ui, arg);
  } catch (err) {
    fail(err);
  }
  main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => {
  if (current().signedIn) route();
});

showSignIn();
