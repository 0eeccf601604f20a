/**
 * The access-token signing thread (api/services/auth/token-signer.ts): ES256 over each signing
 * input of a batch with the key last sent, answered as r || s, 64 bytes per input, in one buffer
 * for the batch (transferred). DER from the bare key, then r || s: the dsaEncoding option costs
 * more than the signature itself (shared/crypto/ecdsa-signature.ts).
 *
 * Messages in: `{key}` (a KeyObject, sent when it changes), `{id, inputs}`. Out: `{id, signatures}`
 * or `{id, error}` (the message only: the caller signs that batch another way).
 */
import { sign, type KeyObject } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { derToP1363 } from '../../shared/crypto/ecdsa-signature.ts';

export type SignRequest = { key: KeyObject } | { id: number; inputs: string[] };
export type SignAnswer = { id: number; signatures: Uint8Array } | { id: number; error: string };

let key: KeyObject | null = null;
// A message that cannot be read (a key among them) must not leave batches signed with the key
// before it: the thread ends, and the signer signs what it owed on libuv.
parentPort!.on('messageerror', () => process.exit(1));
parentPort!.on('message', (m: SignRequest) => {
  if ('key' in m) {
    key = m.key;
    return;
  }
  try {
    if (!key) throw new Error('no signing key was sent');
    const signatures = new Uint8Array(64 * m.inputs.length);
    for (let i = 0; i < m.inputs.length; i += 1)
      signatures.set(derToP1363(sign('sha256', Buffer.from(m.inputs[i]), key), 32), 64 * i);
    parentPort!.postMessage({ id: m.id, signatures } satisfies SignAnswer, [signatures.buffer]);
  } catch (err) {
    parentPort!.postMessage({ id: m.id, error: (err as Error).message } satisfies SignAnswer);
  }
});
