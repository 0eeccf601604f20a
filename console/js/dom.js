/**
 * DOM helpers: elements are built with createElement and text nodes, never from HTML strings,
 * so nothing the API returns can become markup.
 */

/**
 * Makes an element. `props`: `class`, `for`, `aria-*`, `data-*` and other attributes by name;
 * `on*` functions as listeners; `text` as its text; anything else as a property.
 * @param {string} tag
 * @param {Record<string, unknown>} [props]
 * @param {...(Node | string | number | null | undefined | false | Array<Node | string | number | null | undefined | false>)} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2).toLowerCase(), /** @type {EventListener} */ (value));
    } else if (name === 'text') {
      el.textContent = String(value);
    } else if (
      name === 'class' ||
      name === 'for' ||
      name === 'role' ||
      name === 'tabindex' ||
      name.includes('-')
    ) {
      el.setAttribute(name, value === true ? '' : String(value));
    } else {
      /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (el))[name] = value;
    }
  }
  append(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {Array<unknown>} children
 */
function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/**
 * Replaces an element's children.
 * @param {Element} el
 * @param {...unknown} children
 */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

let fieldSeq = 0;

/**
 * A labelled control: the label's `for` names the control's id.
 * @param {string} label
 * @param {HTMLElement} control
 * @param {string} [hint]
 */
export function field(label, control, hint) {
  fieldSeq += 1;
  control.id ||= `f${fieldSeq}`;
  const hintEl = hint ? h('small', { id: `${control.id}-hint`, class: 'hint', text: hint }) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: control.id, text: label }),
    control,
    hintEl,
  );
}

/**
 * A select with options given as [value, label] pairs.
 * @param {Array<[string, string]>} options
 * @param {Record<string, unknown>} [props]
 */
export function select(options, props = {}) {
  return h(
    'select',
    props,
    ...options.map(([value, label]) => h('option', { value, text: label })),
  );
}

/**
 * A table in a focusable, scrollable region (narrow screens scroll it sideways, by keyboard too).
 * @param {string} caption
 * @param {string[]} headers
 * @param {Array<Array<Node | string | number | null>>} rows
 * @param {string} [empty] what to say when there are no rows
 */
export function table(caption, headers, rows, empty = 'Nothing here yet.') {
  if (rows.length === 0) return h('p', { class: 'empty', text: empty });
  return h(
    'div',
    { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption },
    h(
      'table',
      {},
      h('caption', { text: caption }),
      h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { scope: 'col', text: t })))),
      h(
        'tbody',
        {},
        // data-label names each cell's column where narrow screens show rows as cards.
        ...rows.map((cells) =>
          h('tr', {}, ...cells.map((c, i) => h('td', { 'data-label': headers[i] }, c ?? '—'))),
        ),
      ),
    ),
  );
}

/**
 * A button that disables itself and shows it is busy while its action runs; a failure is shown
 * by the page's error handler.
 * @param {string} label
 * @param {() => Promise<unknown> | unknown} action
 * @param {Record<string, unknown>} [props]
 */
export function button(label, action, props = {}) {
  const b = h('button', { type: 'button', ...props, text: label });
  b.addEventListener('click', () => busy(b, action));
  return b;
}

/**
 * Runs an action with the control marked busy.
 * @param {HTMLButtonElement | HTMLElement} control
 * @param {() => Promise<unknown> | unknown} action
 */
export async function busy(control, action) {
  control.setAttribute('aria-busy', 'true');
  /** @type {HTMLButtonElement} */ (control).disabled = true;
  try {
    await action();
  } finally {
    control.removeAttribute('aria-busy');
    /** @type {HTMLButtonElement} */ (control).disabled = false;
  }
}

/**
 * Offers bytes to the browser as a download.
 * @param {Blob} blob
 * @param {string} name
 */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, class: 'hidden' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * A date as the reader's local date and time, or a dash.
 * @param {string | null | undefined} iso
 */
export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/**
 * Asks for a confirmation by typing a word (the kid of the key): resolves true only when the
 * typed text matches and the person confirmed. A native modal dialog keeps the focus inside.
 * @param {string} title
 * @param {string} message
 * @param {string} expected
 * @param {string} action the confirm button's label
 * @returns {Promise<boolean>}
 */
export function confirmTyped(title, message, expected, action) {
  return new Promise((resolve) => {
    const input = h('input', { type: 'text', autocomplete: 'off', spellcheck: false });
    const ok = h('button', {
      type: 'submit',
      value: 'ok',
      class: 'danger',
      disabled: true,
      text: action,
    });
    const dialog = /** @type {HTMLDialogElement} */ (
      h(
        'dialog',
        { 'aria-labelledby': 'confirm-title' },
        h(
          'form',
          { method: 'dialog' },
          h('h2', { id: 'confirm-title', text: title }),
          h('p', { text: message }),
          field(`Type ${expected} to confirm`, input),
          h(
            'div',
            { class: 'actions' },
            ok,
            h('button', {
              type: 'button',
              value: 'cancel',
              text: 'Cancel',
              onclick: () => dialog.close('cancel'),
            }),
          ),
        ),
      )
    );
    input.addEventListener('input', () => {
      /** @type {HTMLButtonElement} */ (ok).disabled =
        /** @type {HTMLInputElement} */ (input).value !== expected;
    });
    dialog.addEventListener('close', () => {
      // Escape closes with an empty returnValue: only the confirm button (value "ok") confirms.
      const confirmed =
        dialog.returnValue === 'ok' && /** @type {HTMLInputElement} */ (input).value === expected;
      dialog.remove();
      resolve(confirmed);
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
