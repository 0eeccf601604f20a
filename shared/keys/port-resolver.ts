/**
 * The key lookup of a conversion running on another thread: the engine there asks over a
 * MessagePort, and the thread that owns the database, the key cache and the tenant answers with
 * its own resolver (shared/keys/cms-resolver.ts), so there is still one key lookup. KeyObjects
 * cross by postMessage (Node clones them); Buffers arrive as Uint8Arrays and are made Buffers
 * again; failures cross as plain data.
 */
import type { MessagePort } from 'node:worker_threads';
import { pbkdf2 } from 'node:crypto';
import { promisify } from 'node:util';
import type { CmsKeyRef, KeyResolver, PasswordKeyRequest, ResolvedKey } from '../pkcs7/types.ts';
import { errorFromData, errorToData, type ErrorData } from '../errors/index.ts';

type Op =
  | 'byKid'
  | 'byCmsRef'
  | 'keyTypes'
  | 'archiveSigningKey'
  | 'trustAnchors'
  | 'admitDecryption'
  | 'decryptionFailed'
  | 'decryptionSucceeded'
  | 'derivePasswordKey';
/** A lookup request, from the thread converting. */
export interface KeyRequest {
  key: number;
  op: Op;
  args: unknown[];
}
type KeyAnswer = { key: number; value: unknown } | { key: number; error: ErrorData };

const pbkdf2Async = promisify(pbkdf2);

const asBuffer = (u: Uint8Array | undefined): Buffer | undefined =>
  u && Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** True for the messages answerKeyRequest handles. */
export function isKeyRequest(m: unknown): m is KeyRequest {
  return typeof (m as KeyRequest)?.key === 'number' && typeof (m as KeyRequest).op === 'string';
}

/** Answers one lookup from the other thread with `resolver`. */
export async function answerKeyRequest(
  port: MessagePort,
  resolver: KeyResolver,
  { key, op, args }: KeyRequest,
): Promise<void> {
  let answer: KeyAnswer;
  try {
    let value: unknown;
    if (op === 'byKid') value = await resolver.byKid(...(args as Parameters<KeyResolver['byKid']>));
    else if (op === 'byCmsRef') {
      const ref = args[0] as Record<keyof CmsKeyRef, Uint8Array | undefined>;
      const back: CmsKeyRef = {
        issuer: asBuffer(ref.issuer),
        serialNumber: asBuffer(ref.serialNumber),
        subjectKeyIdentifier: asBuffer(ref.subjectKeyIdentifier),
        kekId: asBuffer(ref.kekId),
      };
      value = await resolver.byCmsRef(back, args[1] as Parameters<KeyResolver['byCmsRef']>[1]);
    } else if (op === 'archiveSigningKey') value = (await resolver.archiveSigningKey?.()) ?? null;
    else if (op === 'trustAnchors') value = (await resolver.trustAnchors?.()) ?? [];
    else if (op === 'admitDecryption') {
      // The owning side decides; a resolver without the check refuses (fails closed).
      if (!resolver.admitDecryption) throw new Error('this resolver cannot admit decryptions');
      await resolver.admitDecryption(args[0] as string | undefined);
    } else if (op === 'decryptionFailed') await resolver.decryptionFailed?.(args[0] as string);
    else if (op === 'decryptionSucceeded') await resolver.decryptionSucceeded?.(args[0] as string);
    else if (op === 'derivePasswordKey') {
      // Where the owning side runs the caller's expensive work, on its budget.
      const r = args[0] as PasswordKeyRequest;
      value = resolver.derivePasswordKey
        ? await resolver.derivePasswordKey(r)
        : await pbkdf2Async(r.password, r.salt, r.iterations, r.keyLength, r.digest);
    } else value = await resolver.keyTypes?.();
    answer = { key, value };
  } catch (err) {
    answer = { key, error: errorToData(err) };
  }
  port.postMessage(answer);
}

/**
 * The resolver of the converting thread. Its answers arrive on `port`, whose messages the caller
 * routes here with `receive` (the same port carries the conversion's own messages). `keyTypes`
 * says whether the other side's resolver has keyTypes (the engine hashes for every alg without).
 */
export function portResolver(
  port: MessagePort,
  keyTypes: boolean,
): {
  resolver: KeyResolver;
  receive(m: unknown): boolean;
} {
  let next = 0;
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  const ask = (op: Op, args: unknown[]) =>
    new Promise<unknown>((resolve, reject) => {
      const key = next++;
      pending.set(key, { resolve, reject });
      port.postMessage({ key, op, args } satisfies KeyRequest);
    });
  const key = (v: unknown): ResolvedKey | null => {
    const k = v as ResolvedKey | null;
    return k && { ...k, certificate: asBuffer(k.certificate) };
  };
  return {
    resolver: {
      byKid: async (kid, purpose, version) => key(await ask('byKid', [kid, purpose, version])),
      byCmsRef: async (ref, purpose) => key(await ask('byCmsRef', [ref, purpose])),
      archiveSigningKey: async () => key(await ask('archiveSigningKey', [])),
      trustAnchors: async () =>
        ((await ask('trustAnchors', [])) as Uint8Array[]).map((u) => asBuffer(u)!),
      ...(keyTypes ? { keyTypes: async () => (await ask('keyTypes', [])) as string[] } : {}),
      // Always asked of the owning side: the thread never decides who may decrypt.
      admitDecryption: async (kid) => void (await ask('admitDecryption', [kid])),
      decryptionFailed: async (kid) => void (await ask('decryptionFailed', [kid])),
      decryptionSucceeded: async (kid) => void (await ask('decryptionSucceeded', [kid])),
      // The thread never derives on its own: the owning side places and budgets the work.
      derivePasswordKey: async (r) =>
        asBuffer((await ask('derivePasswordKey', [r])) as Uint8Array)!,
    },
    receive(m) {
      const a = m as KeyAnswer;
      const p = typeof a?.key === 'number' ? pending.get(a.key) : undefined;
      if (!p) return false;
      pending.delete(a.key);
      if ('error' in a) p.reject(errorFromData(a.error));
      else p.resolve(a.value);
      return true;
    },
  };
}
