/**
 * Bulk key operations: choose keys by kid list or selector, preview with a dry run (the kids
 * that would change and their count), then run with that count as `expectedCount`, so the
 * service refuses if the selection changed in between. Long runs report progress.
 */
import { json, seg, tenantPath } from '../api.js';
import { button, field, h, replace, select, table } from '../dom.js';
import { KEY_TYPES } from './keys.js';

/** @param {import('../main.js').Ui} ui */
export async function renderBulk(ui) {
  ui.title('Bulk key operations');
  const operation = select([
    ['rotate', 'rotate'],
    ['suspend', 'suspend'],
    ['resume', 'resume'],
    ['revoke', 'revoke'],
  ]);
  const kids = h('input', { type: 'text', autocomplete: 'off', spellcheck: false });
  const type = select([
    ['', 'any type'],
    ...KEY_TYPES.map((t) => /** @type {[string, string]} */ ([t, t])),
  ]);
  const usage = select([
    ['', 'any usage'],
    ['encrypt', 'encrypt'],
    ['sign', 'sign'],
  ]);
  const state = select([
    ['', 'any state'],
    ['active', 'active'],
    ['suspended', 'suspended'],
  ]);
  const prefix = h('input', { type: 'text', autocomplete: 'off', spellcheck: false });
  const all = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox' }));
  const preview = h('div', { id: 'preview', 'aria-live': 'polite' });
  const outcome = h('div', { id: 'outcome', 'aria-live': 'polite' });
  /** @type {{ body: Record<string, unknown>, total: number } | null} */
  let planned = null;

  /** The request body of the form's choice. */
  function choice() {
    /** @type {Record<string, unknown>} */
    const body = { operation: /** @type {HTMLSelectElement} */ (operation).value };
    const list = /** @type {HTMLInputElement} */ (kids).value
      .split(/[\s,]+/)
      .map((k) => k.trim())
      .filter(Boolean);
    if (list.length) return { ...body, kids: list };
    if (all.checked) return { ...body, selector: { all: true } };
    /** @type {Record<string, string>} */
    const selector = {};
    for (const [name, el] of /** @type {Array<[string, HTMLElement]>} */ ([
      ['type', type],
      ['usage', usage],
      ['state', state],
      ['kidPrefix', prefix],
    ])) {
      const v = /** @type {HTMLInputElement} */ (el).value.trim();
      if (v) selector[name] = v;
    }
    if (Object.keys(selector).length === 0)
      throw {
        title: 'Nothing chosen',
        detail: 'name kids, set a filter, or tick "every key of the tenant"',
      };
    return { ...body, selector };
  }

  const run = button('Run', async () => {
    if (!planned) return;
    try {
      const answer = await json('POST', `${tenantPath()}/keys/orchestrate`, {
        json: { ...planned.body, expectedCount: planned.total },
      });
      if (answer.operationId) await follow(answer.operationId, answer.total);
      else showResults(answer.results ?? [], answer.total, answer.succeeded);
      planned = null;
      /** @type {HTMLButtonElement} */ (run).hidden = true;
    } catch (err) {
      ui.fail(err);
    }
  });
  /** @type {HTMLButtonElement} */ (run).hidden = true;

  const dry = button('Preview (dry run)', async () => {
    try {
      const body = choice();
      const answer = await json('POST', `${tenantPath()}/keys/orchestrate`, {
        json: { ...body, dryRun: true },
      });
      planned = { body, total: answer.total };
      replace(
        preview,
        h('p', {
          id: 'preview-count',
          text: `${answer.operation} would touch ${answer.total} key(s).`,
        }),
        answer.total ? h('p', { class: 'perms', text: answer.kids.join(', ') }) : null,
      );
      replace(run, `Run ${answer.operation} on ${answer.total} key(s)`);
      /** @type {HTMLButtonElement} */ (run).hidden = answer.total === 0;
      replace(outcome);
    } catch (err) {
      ui.fail(err);
    }
  });

  /**
   * @param {any[]} results
   * @param {number} total
   * @param {number} succeeded
   */
  function showResults(results, total, succeeded) {
    replace(
      outcome,
      h('p', { id: 'outcome-text', text: `${succeeded} of ${total} key(s) done.` }),
      table(
        'Results per key',
        ['Kid', 'Status', 'State', 'Problem'],
        results.map((r) => [
          r.kid,
          String(r.status),
          r.state ?? '—',
          r.error ? `${r.error.title}: ${r.error.detail ?? ''}` : '—',
        ]),
      ),
    );
  }

  /**
   * Polls a background operation until it ends, showing its progress.
   * @param {string} id
   * @param {number} total
   */
  async function follow(id, total) {
    const bar = h('progress', { max: total, value: 0, 'aria-label': 'Operation progress' });
    replace(outcome, bar);
    for (;;) {
      const op = await json('GET', `${tenantPath()}/keys/orchestrate/${seg(id)}`);
      /** @type {HTMLProgressElement} */ (bar).value = op.done;
      if (op.state !== 'running')
        return showResults(op.results ?? [], op.total, op.done - op.failed);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  ui.root.append(
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'choose-title' },
      h('h2', { id: 'choose-title', text: 'Choose the keys' }),
      h(
        'div',
        { class: 'grid' },
        field('Operation', operation),
        field('Kids', kids, 'Separated by spaces or commas; leave empty to use the filters.'),
        field('Type', type),
        field('Usage', usage),
        field('State', state),
        field('Kid prefix', prefix),
      ),
      h(
        'div',
        { class: 'field check' },
        h('label', { for: 'bulk-all', text: 'Every key of the tenant' }),
        Object.assign(all, { id: 'bulk-all' }),
      ),
      h('div', { class: 'actions' }, dry, run),
      preview,
    ),
    outcome,
  );
}
