/**
 * The tenant's audit log: events with filters and cursor paging, and "Verify chain", which
 * checks the hash chain on the service and shows the result and the first broken link. Through
 * the Admin API's audit routes (the tenant in the path, the person's own token).
 */
import { json, tenantPath } from '../api.js';
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

/** @param {import('../main.js').Ui} ui */
export async function renderAudit(ui) {
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
      h('code', { text: e.actor }),
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
