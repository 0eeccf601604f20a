/**
 * `keyward kms-plugin`: the Kubernetes KMS v2 plugin the kube-apiserver talks to over a unix
 * socket, sealing its DEK seeds with a Keyward key through the Core API as a workload
 * (bin/lib/kms-plugin/). Runs until SIGTERM or SIGINT. docs/kubernetes-kms.md.
 */
import { resolve } from 'node:path';
import { createApi } from '../api-client.ts';
import { EXIT, UsageError, int, str, type Command } from '../command.ts';
import { KmsPlugin } from '../kms-plugin/service.ts';
import { servePlugin } from '../kms-plugin/server.ts';
import { WORKLOAD_OPTIONS, workloadClient } from './session.ts';

/** Status's probe of Keyward answers within this, or the timeout when shorter. */
const PROBE_TIMEOUT_MS = 2_000;

export const kmsPluginCommand: Command = {
  name: 'kms-plugin',
  summary: 'Serve the Kubernetes KMS v2 plugin API on a unix socket, sealing with a Keyward key',
  details: [
    'The kube-apiserver calls Status, Encrypt and Decrypt on --socket (made 0600; a stale socket',
    'is replaced, and removed on SIGTERM). Encrypt seals under the key’s current version and',
    'answers key_id <kid>#<version>, so a rotation of the key changes it; every retained version',
    'decrypts. Authenticates as a workload (crypto.encrypt and crypto.decrypt): KEYWARD_URL,',
    'KEYWARD_CLIENT_ID and KEYWARD_CLIENT_SECRET or KEYWARD_CLIENT_SECRET_FILE, or the login of',
    '--profile. See docs/kubernetes-kms.md for the EncryptionConfiguration.',
  ].join('\n'),
  options: {
    ...WORKLOAD_OPTIONS,
    socket: {
      type: 'string',
      value: '<path>',
      help: 'the unix socket to serve (EncryptionConfiguration endpoint unix://<path>); required',
    },
    key: {
      type: 'string',
      value: '<kid>',
      help: 'the Keyward key (aes-256) to seal with; required',
    },
    timeout: {
      type: 'string',
      value: '<ms>',
      help: 'deadline of each call to Keyward, in milliseconds (default 3000; the API server’s own deadline also applies)',
    },
  },
  run: async (inv) => {
    const socket = str(inv.values, 'socket');
    const kid = str(inv.values, 'key');
    if (!socket) throw new UsageError('kms-plugin needs --socket <path>');
    if (!kid) throw new UsageError('kms-plugin needs --key <kid>');
    const timeoutMs = int(inv.values, 'timeout', 100, 60_000) ?? 3_000;
    const log = (line: string) =>
      inv.stderr.write(`${new Date().toISOString()} keyward kms-plugin: ${line}\n`);
    const client = workloadClient(inv, { timeoutMs });
    const plugin = new KmsPlugin({
      api: createApi(client),
      kid,
      probeTimeoutMs: Math.min(PROBE_TIMEOUT_MS, timeoutMs),
      log,
    });
    const path = resolve(socket);
    const stop = new Promise<NodeJS.Signals>((done) => {
      process.once('SIGTERM', done);
      process.once('SIGINT', done);
    });
    const server = await servePlugin(plugin, path);
    log(`serving unix://${path} with key ${kid}`);
    // A first probe, for the log only (a failure logs itself): Keyward may come up after the plugin.
    void plugin.status().then((first) => {
      if (first.healthz === 'ok') log(`status: ok, key id ${first.key_id}`);
    });
    const signal = await stop;
    log(`${signal}: closing`);
    await server.close();
    log('closed');
    return EXIT.ok;
  },
};
