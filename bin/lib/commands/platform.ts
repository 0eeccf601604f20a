/**
 * Platform commands (a platform administrator's login): the master keyring's status and its
 * online rewrap.
 */
import type { MasterKeyStatus, RewrapProgress } from '../api-client.ts';
import { EXIT, print, table, type Command, type Invocation } from '../command.ts';
import { connect } from './session.ts';

function statusText(s: MasterKeyStatus): string {
  const rows = [
    ...s.keyring.map((k) => ({ id: k.id, role: k.newest ? 'newest' : 'older', items: k.items })),
    ...(s.unversioned > 0
      ? [{ id: '(before the keyring)', role: 'older', items: s.unversioned }]
      : []),
    ...s.unknown.map((k) => ({ id: k.id, role: 'not in this keyring', items: k.items })),
  ];
  const r = s.rewrap;
  return [
    table(rows, [
      ['id', (x) => x.id],
      ['role', (x) => x.role],
      ['items', (x) => x.items],
    ]),
    `rewrap: ${r.state}${r.state === 'idle' ? '' : ` (${r.rewrapped} rewrapped, ${r.raced} by another instance, ${r.unopenable} unopenable)`}${r.error ? `: ${r.error}` : ''}`,
    s.complete
      ? 'every item is sealed under the newest id: the older ids may be removed from KEYWARD_MASTER_KEY'
      : 'items are still sealed under older ids: run `keyward admin master-key rewrap`',
  ].join('\n');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rewrap(inv: Invocation): Promise<number> {
  const c = connect(inv);
  let progress: RewrapProgress = await c.api.rewrapMasterKey({});
  while (progress.state === 'running' && !inv.values['no-wait']) {
    await sleep(500);
    progress = (await c.api.getMasterKeyStatus({})).rewrap;
    if (inv.values.output !== 'json')
      inv.stderr.write(`rewrapped ${progress.rewrapped} items under ${progress.targetId}\n`);
  }
  const status = await c.api.getMasterKeyStatus({});
  print(inv, status, () => statusText(status));
  return progress.state === 'failed' || progress.unopenable > 0 ? EXIT.unreachable : EXIT.ok;
}

export const adminCommand: Command = {
  name: 'admin',
  summary: 'Platform administration (a platform administrator login)',
  subcommands: [
    {
      name: 'master-key',
      summary: 'The master keyring: which ids seal what, and re-sealing under the newest key',
      subcommands: [
        {
          name: 'status',
          summary: 'The ids of the keyring, the items each still seals, and a running rewrap',
          async run(inv) {
            const status = await connect(inv).api.getMasterKeyStatus({});
            print(inv, status, () => statusText(status));
            return EXIT.ok;
          },
        },
        {
          name: 'rewrap',
          summary:
            'Re-seal every item under the newest key while the service serves; waits for the end',
          options: {
            'no-wait': { type: 'boolean', help: 'start it and return; follow with `status`' },
          },
          run: rewrap,
        },
      ],
    },
  ],
};
