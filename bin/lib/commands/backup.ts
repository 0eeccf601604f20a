/**
 * `keyward backup --out FILE` (a platform administrator's login, the service running) and
 * `keyward restore FILE --database-url URL | --data-dir DIR` (the service stopped). The
 * passphrase comes from KEYWARD_BACKUP_PASSPHRASE or a prompt, never from an argument.
 */
import { statSync } from 'node:fs';
import { EXIT, UsageError, print, readSecret, str, table, type Command } from '../command.ts';
import { downloadBackup, fileSource } from '../backup.ts';
import { restoreBackup } from '../../../shared/backup/restore.ts';
import { parseKeyring } from '../../../shared/crypto/keyring.ts';
import { connect } from './session.ts';

const PASSPHRASE = 'KEYWARD_BACKUP_PASSPHRASE';

export const backupCommand: Command = {
  name: 'backup',
  summary: `Write an encrypted snapshot of all state to a file (passphrase: ${PASSPHRASE} or a prompt)`,
  options: { out: { type: 'string', value: '<file>', help: 'the backup file to create' } },
  async run(inv) {
    const out = str(inv.values, 'out');
    if (!out) throw new UsageError('--out <file> is required');
    const passphrase = await readSecret(undefined, PASSPHRASE, 'backup passphrase');
    if (passphrase.length < 12)
      throw new UsageError('the backup passphrase must be at least 12 characters');
    const c = connect(inv);
    const summary = await downloadBackup(c.client, out, passphrase);
    print(inv, { file: out, ...summary }, () =>
      [
        `wrote ${out}: ${summary.bytes} bytes (${summary.plaintextBytes} of snapshot) in ${summary.seconds.toFixed(1)} s`,
        'Keep the passphrase and the master keyring apart from the file: restoring needs all three.',
      ].join('\n'),
    );
    return EXIT.ok;
  },
};

export const restoreCommand: Command = {
  name: 'restore',
  local: true,
  summary:
    'Restore a backup into an empty database, the service stopped (checks the whole file first)',
  args: ['<file>'],
  options: {
    'database-url': { type: 'string', value: '<url>', help: 'a PostgreSQL database, empty' },
    'data-dir': { type: 'string', value: '<dir>', help: "the embedded database's DATA_DIR, empty" },
  },
  async run(inv) {
    const file = inv.args[0];
    statSync(file);
    const databaseUrl = str(inv.values, 'database-url');
    const dataDir = str(inv.values, 'data-dir');
    if (Boolean(databaseUrl) === Boolean(dataDir))
      throw new UsageError('give exactly one of --database-url and --data-dir');
    const passphrase = await readSecret(undefined, PASSPHRASE, 'backup passphrase');
    // With the keyring at hand, the restore also proves it opens the restored material.
    const keyring = process.env.KEYWARD_MASTER_KEY
      ? parseKeyring(process.env.KEYWARD_MASTER_KEY, 'KEYWARD_MASTER_KEY')
      : undefined;
    const report = await restoreBackup({
      open: fileSource(file),
      passphrase,
      target: databaseUrl ? { databaseUrl } : { dataDir: dataDir! },
      keyring,
    });
    print(inv, report, () =>
      [
        `restored ${report.rows} rows of ${report.tables.length} tables (backup of ${report.createdAt}, schema ${report.migrations.at(-1)})`,
        table(report.tables, [
          ['table', (t) => t.name],
          ['rows', (t) => t.rows],
        ]),
        keyring
          ? 'KEYWARD_MASTER_KEY opens the restored key material.'
          : 'Start the service with the master keyring the backup was made under.',
      ].join('\n'),
    );
    return EXIT.ok;
  },
};
