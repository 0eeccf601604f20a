/**
 * A key's lifecycle buttons, for the keys table and the key's page: rotate, suspend, resume,
 * and revoke and archive, which cannot be undone and so ask for the kid to be typed first.
 */
import { json, seg, tenantPath } from './api.js';
import { button, confirmTyped, h } from './dom.js';

/** What each action does, as the buttons and messages say it. */
const ACTIONS = new Map([
  ['rotate', { label: 'Rotate', done: 'rotated', states: ['active', 'suspended'] }],
  ['suspend', { label: 'Suspend', done: 'suspended', states: ['active'] }],
  ['resume', { label: 'Resume', done: 'resumed', states: ['suspended'] }],
  [
    'revoke',
    {
      label: 'Revoke',
      done: 'revoked',
      states: ['active', 'suspended'],
      warning: 'A revoked key never encrypts or signs again; it can still decrypt and verify.',
    },
  ],
  [
    'archive',
    {
      label: 'Archive',
      done: 'archived',
      states: ['revoked'],
      warning: 'An archived key cannot be used at all.',
    },
  ],
]);

/**
 * The buttons of the actions a key in its state allows.
 * @param {import('./main.js').Ui} ui
 * @param {{ kid: string, state: string }} key
 * @param {() => Promise<unknown>} after runs after a change (reloads the view)
 */
export function lifecycleButtons(ui, key, after) {
  return h(
    'div',
    { class: 'row-actions' },
    ...[...ACTIONS]
      .filter(([, a]) => a.states.includes(key.state))
      .map(([action, a]) =>
        button(
          a.label,
          async () => {
            try {
              if (a.warning) {
                const ok = await confirmTyped(
                  `${a.label} ${key.kid}?`,
                  a.warning,
                  key.kid,
                  `${a.label} key`,
                );
                if (!ok) return ui.say(`Nothing was done to ${key.kid}.`);
              }
              await json('POST', `${tenantPath()}/keys/${seg(key.kid)}/${action}`);
              ui.say(`Key ${key.kid} ${a.done}.`);
              await after();
            } catch (err) {
              ui.fail(err);
            }
          },
          { class: a.warning ? 'danger' : undefined, 'aria-label': `${a.label} ${key.kid}` },
        ),
      ),
  );
}
