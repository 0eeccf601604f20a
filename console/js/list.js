/**
 * A long list read a page at a time with the API's cursors: "Previous page" goes back through
 * the cursors already seen, "Next page" follows `nextCursor`. Shows a loading and an empty state.
 */
import { button, h, replace, table } from './dom.js';

/**
 * @template T
 * @typedef {object} ListSpec
 * @property {string} caption
 * @property {string[]} headers
 * @property {(item: T) => Array<Node | string | number | null>} row
 * @property {(cursor: string | undefined) => Promise<{ items: T[], nextCursor: string | null }>} fetchPage
 * @property {(err: unknown) => void} onError
 * @property {string} [empty]
 * @property {(items: T[]) => T[]} [filter] a filter on the loaded page (client side)
 */

/**
 * @template T
 * @param {ListSpec<T>} spec
 */
export function pagedList(spec) {
  const body = h('div', { class: 'list-body', 'aria-live': 'polite' });
  /** @type {Array<string | undefined>} cursors of the pages before the current one */
  const back = [];
  /** @type {string | undefined} */
  let cursor;
  /** @type {string | null} */
  let next = null;
  /** @type {T[]} */
  let items = [];
  const prev = button('Previous page', () => load(back.pop(), false));
  const more = button('Next page', () => next && load(next, true));
  const pager = h('div', { class: 'pager' }, prev, more);

  function draw() {
    const shown = spec.filter ? spec.filter(items) : items;
    replace(body, table(spec.caption, spec.headers, shown.map(spec.row), spec.empty));
    /** @type {HTMLButtonElement} */ (prev).hidden = back.length === 0;
    /** @type {HTMLButtonElement} */ (more).hidden = !next;
  }

  /**
   * @param {string | undefined} at
   * @param {boolean} forward
   */
  async function load(at, forward) {
    body.setAttribute('aria-busy', 'true');
    replace(body, h('p', { class: 'loading', text: 'Loading…' }));
    try {
      const page = await spec.fetchPage(at);
      if (forward) back.push(cursor);
      cursor = at;
      items = page.items;
      next = page.nextCursor;
      draw();
    } catch (err) {
      replace(body, h('p', { class: 'empty', text: 'Could not load this list.' }));
      spec.onError(err);
    } finally {
      body.removeAttribute('aria-busy');
    }
  }

  return {
    el: h('div', { class: 'list' }, body, pager),
    /** Reloads the first page. */
    reload: () => {
      back.length = 0;
      return load(undefined, false);
    },
    /** Reloads the page shown. */
    refresh: () => load(cursor, false),
    /** Draws the loaded page again (after a filter changed). */
    redraw: draw,
  };
}
