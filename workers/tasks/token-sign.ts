/**
 * Access-token signatures in batches (api/services/auth/token-signer.ts): the event loop hands
 * over every signing input of one turn in one task instead of one libuv job per token.
 */
import { sign, type KeyObject } from 'node:crypto';
import { errorToData } from '../../shared/errors/index.ts';
import { derToP1363 } from '../../shared/crypto/ecdsa-signature.ts';

/**
 * ES256 over each signing input with the one key: r || s, 64 bytes per input, in one buffer for
 * the batch. DER from the bare key, then r || s: the dsaEncoding option costs more than the
 * signature itself (shared/crypto/ecdsa-signature.ts).
 */
export async function signEs256Batch(arg: {
  key: KeyObject;
  inputs: string[];
}): Promise<Uint8Array> {
  try {
    const out = new Uint8Array(64 * arg.inputs.length);
    arg.inputs.forEach((input, i) =>
      out.set(derToP1363(sign('sha256', Buffer.from(input), arg.key), 32), 64 * i),
    );
    return out;
  } catch (err) {
    throw errorToData(err);
  }
}
