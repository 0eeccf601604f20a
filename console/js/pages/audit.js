/**
 * The tenant's audit log: events with filters and cursor paging, and "Verify chain", which
 * checks the hash chain on the service and shows the result and the first broken link. Through
 * the Admin API's audit routes (the tenant in the path, the person's own token).
 */
import { json, tenantPath } from '../api.js';
import { current } from '../session.js';
import { button, field, h, replace, select, when } from '../dom.js';
import { pagedList } from '../list.js';

/**
 * A datetime-local value as an ISO instant, or undefined.
 * @param {HTMLElement} input
 */
const instant = (input) => {
  const v = /** @type {HTMLInputElement} */ (input).value;
  return v ? new Date(v).toISOString() : undefined;
};

/**
 * Names for the actors of the tenant's events (`user:<id>`, `workload:<id>`, `client:<clientId>`):
 * its users' e-mails and its workloads' names, as far as the person may read them, and the
 * person's own e-mail. A role without those read permissions still sees the raw actors.
 * @returns {Promise<Map<string, string>>}
 */
async function actorNames() {
  /** @type {Map<string, string>} */
  const names = new Map();
  const who = current();
  if (who.userId && who.email) names.set(`user:${who.userId}`, who.email);
  /** @param {string} path */
  const all = async (path) => {
    /** @type {any[]} */
    const items = [];
    let cursor;
    // A few pages at most: names are a help, the events show either way.
    for (let i = 0; i < 5; i++) {
      const page = await json('GET', `${tenantPath()}/${path}`, { query: { limit: 100, cursor } });
      items.push(...(page.items ?? []));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    return items;
  };
  const [users, workloads] = await Promise.all([
    all('users').catch(() => []),
    all('workloads').catch(() => []),
  ]);
  for (const u of users) names.set(`user:${u.id}`, u.email);
  for (const w of workloads) {
    names.set(`workload:${w.id}`, w.name);
    if (w.clientId) names.set(`client:${w.clientId}`, w.name);
  }
  return names;
}

/**
 * An actor as a person reads it: the name when known, the raw actor beside it.
 * @param {string} actor
 * @param {Map<string, string>} names
 */
function actorCell(actor, names) {
  const name = names.get(actor);
  if (!name) return h('code', { text: actor });
  return h('span', { class: 'actor' }, name, ' ', h('code', { class: 'muted', text: actor }));
}

/** @param {import('../main.js').Ui} ui */
export async function renderAudit(ui) {
  const names = await actorNames();
  ui.title('Audit');
  const actor = h('input', { type: 'text', autocomplete: 'off', spellcheck: false });
  const action = h('input', { type: 'text', autocomplete: 'off', spellcheck: false });
  const outcome = select([
    ['', 'any outcome'],
    ['success', 'success'],
    ['failure', 'failure'],
    ['denied', 'denied'],
  ]);
  const from = h('input', { type: 'datetime-local' });
  const to = h('input', { type: 'datetime-local' });
  const verdict = h('div', { id: 'verdict', 'aria-live': 'polite' });

  const list = pagedList({
    caption: 'Audit events, oldest first',
    headers: ['Seq', 'At', 'Actor', 'Action', 'Outcome', 'Target'],
    onError: ui.fail,
    empty: 'No events match these filters.',
    fetchPage: (cursor) =>
      json('GET', `${tenantPath()}/audit/events`, {
        query: {
          actor: /** @type {HTMLInputElement} */ (actor).value.trim(),
          action: /** @type {HTMLInputElement} */ (action).value.trim(),
          outcome: /** @type {HTMLSelectElement} */ (outcome).value,
          from: instant(from),
          to: instant(to),
          limit: 25,
          cursor,
        },
      }),
    row: (e) => [
      String(e.seq),
      when(e.at),
      actorCell(e.actor, names),
      e.action,
      h('span', { class: `outcome outcome-${e.outcome}`, text: e.outcome }),
      e.target ?? '—',
    ],
  });

  const filters = h(
    'form',
    { class: 'filters', 'aria-label': 'Event filters' },
    field('Actor', actor, 'e.g. user:<id> or workload:<id>'),
    field('Action', action, 'e.g. key.rotate'),
    field('Outcome', outcome),
    field('From', from),
    field('To', to),
    h('div', { class: 'field end' }, h('button', { type: 'submit', text: 'Apply filters' })),
  );
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    list.reload();
  });

  const verify = button('Verify chain', async () => {
    replace(verdict, h('p', { class: 'loading', text: 'Verifying…' }));
    try {
      const v = await json('POST', `${tenantPath()}/audit/verify`, { json: {} });
      replace(
        verdict,
        v.valid
          ? h('p', {
              class: 'ok',
              id: 'verdict-text',
              text: `Chain valid: ${v.checked} events checked, head at event ${v.head?.seq ?? '?'}.`,
            })
          : h(
              'div',
              { class: 'bad' },
              h('p', {
                id: 'verdict-text',
                text: `Chain broken: ${v.checked} events checked before the first broken link.`,
              }),
              v.firstBroken
                ? h('p', {
                    text: `First broken link: event ${v.firstBroken.seq}: ${v.firstBroken.reason}`,
                  })
                : null,
              v.truncated
                ? h('p', {
                    text: `Truncated: the recorded head is event ${v.truncated.expectedSeq}, the chain ends at ${v.truncated.foundSeq}.`,
                  })
                : null,
            ),
      );
    } catch (err) {
      replace(verdict);
      ui.fail(err);
    }
  });

  ui.root.append(
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'chain' },
      h('h2', { id: 'chain', text: 'Hash chain' }),
      verify,
      verdict,
    ),
    filters,
    list.el,
  );
  await list.reload();
}
