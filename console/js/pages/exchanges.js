/**
 * Cryptographic exchanges: offers of a key's public part (or a wrapped copy) to another tenant.
 * Incoming pending offers can be accepted or rejected, outgoing ones cancelled.
 */
import { json, seg, tenantPath } from '../api.js';
import { button, field, h, select, when } from '../dom.js';
import { pagedList } from '../list.js';

/** @param {import('../main.js').Ui} ui */
export async function renderExchanges(ui) {
  ui.title('Cryptographic exchanges');
  /** @param {() => Promise<unknown>} f */
  const guard = (f) => () => f().catch(ui.fail);
  /** @param {any} x @param {'accept' | 'reject' | 'cancel'} action */
  const decide = async (x, action) => {
    const body = action === 'accept' ? { json: {} } : {};
    await json('POST', `${tenantPath()}/cryptographic-exchanges/${seg(x.id)}/${action}`, body);
    ui.say(`Exchange of ${x.kid}: ${action} done.`);
    await list.refresh();
  };
  const list = pagedList({
    caption: 'Exchanges of this tenant',
    headers: ['Direction', 'Kid', 'Other tenant', 'Mode', 'State', 'Expires', 'Actions'],
    onError: ui.fail,
    empty: 'No exchanges yet.',
    fetchPage: (cursor) =>
      json('GET', `${tenantPath()}/cryptographic-exchanges`, { query: { limit: 20, cursor } }),
    row: (x) => [
      x.direction,
      x.kid,
      h('code', { text: x.direction === 'outgoing' ? x.toTenantId : x.fromTenantId }),
      x.mode,
      x.state,
      when(x.expiresAt),
      x.state !== 'pending'
        ? '—'
        : x.direction === 'incoming'
          ? h(
              'div',
              { class: 'row-actions' },
              button(
                'Accept',
                guard(() => decide(x, 'accept')),
                { 'aria-label': `Accept ${x.kid}` },
              ),
              button(
                'Reject',
                guard(() => decide(x, 'reject')),
                { class: 'danger', 'aria-label': `Reject ${x.kid}` },
              ),
            )
          : button(
              'Cancel',
              guard(() => decide(x, 'cancel')),
              { 'aria-label': `Cancel ${x.kid}` },
            ),
    ],
  });
  const kid = h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: false });
  const to = h('input', {
    type: 'text',
    required: true,
    autocomplete: 'off',
    spellcheck: false,
    // The pattern is compiled with the v flag (HTML spec), where a literal - in a class must be
    // escaped: unescaped, every page logged an invalid-pattern error and the field went unchecked.
    pattern: '[0-9a-fA-F\\-]{36}',
  });
  const mode = select([
    ['public', 'public: the public key only'],
    ['wrapped', 'wrapped: a copy wrapped for the receiver'],
  ]);
  const wrapping = h('input', { type: 'text', autocomplete: 'off', spellcheck: false });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'offer-title' },
    h('h2', { id: 'offer-title', text: 'Offer a key to another tenant' }),
    h(
      'div',
      { class: 'grid' },
      field('Kid to offer', kid),
      field('Receiving tenant id', to),
      field('Mode', mode),
      field('Wrapping kid', wrapping, 'Wrapped mode: the receiver’s key that wraps the copy.'),
    ),
    h('button', { type: 'submit', text: 'Offer key' }),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      /** @type {Record<string, unknown>} */
      const body = {
        kid: /** @type {HTMLInputElement} */ (kid).value.trim(),
        toTenantId: /** @type {HTMLInputElement} */ (to).value.trim().toLowerCase(),
        mode: /** @type {HTMLSelectElement} */ (mode).value,
      };
      const w = /** @type {HTMLInputElement} */ (wrapping).value.trim();
      if (w) body.wrappingKid = w;
      const x = await json('POST', `${tenantPath()}/cryptographic-exchanges`, { json: body });
      ui.say(`Offered ${x.kid}; the receiving tenant can accept it until ${when(x.expiresAt)}.`);
      /** @type {HTMLFormElement} */ (form).reset();
      await list.reload();
    } catch (err) {
      ui.fail(err);
    }
  });
  ui.root.append(list.el, form);
  await list.reload();
}
