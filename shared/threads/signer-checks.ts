/**
 * checkSigners (shared/pkcs7/signer-checks.ts) as a piscina task, for the API's pool
 * (api/threads/tasks) and the worker's (workers/signer-pool.ts): the checks an input chooses the
 * number and keys of run on a thread, never on an event loop that serves anything else.
 */
import { checkSigners } from '../pkcs7/signer-checks.ts';
import type { SignerCheckInput, SignerCheckOutput } from '../pkcs7/types.ts';
import { errorToData } from '../errors/index.ts';

/** Runs checkSigners; a problem crosses back as plain data (rebuilt by code on the other side). */
export function checkSignersTask(input: SignerCheckInput): SignerCheckOutput {
  try {
    return checkSigners(input);
  } catch (err) {
    throw errorToData(err);
  }
}
