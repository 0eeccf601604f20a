/**
 * One object through the engine, as both queue processors run it (a conversion job, and each
 * object of a durable migration's chunk): the source streams from storage through
 * convertPkcs7ToJose into atomic puts (ObjectStore.put makes an object visible only when its
 * whole stream succeeded). What a chain of custody needs is taken on the way, never by a second
 * read: the input's size and SHA-256, each output's size and SHA-256, the keys the engine
 * resolved and the certificate SHA-256 of each original signer.
 */
import { createHash } from 'node:crypto';
import {
  convertPkcs7ToJose,
  type ConvertMetadata,
  type KeyResolver,
} from '../../shared/pkcs7/index.ts';
import type { ResolvedKey, SignerChecker } from '../../shared/pkcs7/types.ts';
import type { ObjectStore } from '../../shared/storage/index.ts';
import { MixedReader, mixedBoundary } from '../../shared/jose/mixed-reader.ts';
import { counted } from '../../shared/streams.ts';
import {
  CONTENT_EXTENSION,
  resultExtension,
  type WrittenObject,
} from '../../shared/queues/index.ts';

/** An object written, with its digest. */
export interface HashedObject extends WrittenObject {
  sha256: string;
  etag?: string;
}

/** A key the engine used: which kid, which version, for what. */
export interface KeyUse {
  kid: string;
  version: number;
  purpose: string;
}

/** What one conversion read, wrote and used. */
export interface ObjectConversion {
  inputType: string;
  input: { size: number; sha256: string };
  /** The JOSE result first, then a SignedData's content. */
  outputs: HashedObject[];
  keys: KeyUse[];
  /** SHA-256 (hex) of each original signer's certificate, in file order. */
  signers: string[];
}

export interface ConvertObjectOptions {
  /** The tenant's view of the store. */
  objects: ObjectStore;
  sourceKey: string;
  /** The outputs' key without extension (the extension comes from the result's type). */
  outputBase: string;
  metadata: Record<string, unknown>;
  resolver: KeyResolver;
  checkSigners?: SignerChecker;
  signal?: AbortSignal;
  /** Told each input chunk's size as it is read (progress). */
  onRead?: (n: number) => void;
  /** Told each output chunk's size as it is written (progress). */
  onWritten?: (n: number) => void;
  /** Told the input's type once its head is read. */
  onInputType?: (type: string) => void;
}

/** Passes bytes through, hashing them. */
function hashing(source: AsyncIterable<Buffer>, onBytes?: (n: number) => void) {
  const hash = createHash('sha256');
  let size = 0;
  const body = (async function* () {
    for await (const chunk of source) {
      hash.update(chunk);
      size += chunk.length;
      onBytes?.(chunk.length);
      yield chunk;
    }
  })();
  let hex: string | null = null;
  return { body, size: () => size, digest: () => (hex ??= hash.digest('hex')) };
}

/** The resolver, recording every key it hands out (kid, version, purpose). */
function recording(resolver: KeyResolver, used: Map<string, KeyUse>): KeyResolver {
  const note = (key: ResolvedKey | null, purpose: string | undefined) => {
    if (key) {
      const use = { kid: key.kid, version: key.version, purpose: purpose ?? 'verify' };
      used.set(`${use.kid}#${use.version}#${use.purpose}`, use);
    }
    return key;
  };
  const wrapped: KeyResolver = Object.create(resolver);
  wrapped.byKid = async (kid, purpose, version) =>
    note(await resolver.byKid(kid, purpose, version), purpose);
  wrapped.byCmsRef = async (ref, purpose) => note(await resolver.byCmsRef(ref, purpose), purpose);
  if (resolver.archiveSigningKey)
    wrapped.archiveSigningKey = async () => note(await resolver.archiveSigningKey!(), 'sign');
  return wrapped;
}

/** Converts one object; rejects with the engine's or the store's error, leaving nothing half-written. */
export async function convertObject(o: ConvertObjectOptions): Promise<ObjectConversion> {
  const used = new Map<string, KeyUse>();
  const signers: string[] = [];
  // The signers are recorded from the checks' answer; without a checker the engine checks in
  // place (where a SignedAndEnvelopedData's signature can be decrypted) and none is recorded.
  const inner = o.checkSigners;
  const check: SignerChecker | undefined =
    inner &&
    (async (input) => {
      const out = await inner(input);
      for (const path of out.x5c)
        if (path[0]) signers.push(createHash('sha256').update(path[0], 'base64').digest('hex'));
      return out;
    });
  let inputType = 'unknown';
  const source = await o.objects.get(o.sourceKey);
  o.signal?.addEventListener('abort', () => source.destroy(), { once: true });
  const input = hashing(source, o.onRead);
  const result = await convertPkcs7ToJose(input.body, {
    metadata: o.metadata as ConvertMetadata,
    resolver: recording(o.resolver, used),
    onInputType: (type) => {
      inputType = type;
      o.onInputType?.(type);
    },
    // A SignedData's content is stored beside its JWS, so nothing of the input is lost.
    withContent: true,
    ...(check ? { checkSigners: check } : {}),
  });
  const body = counted(result.body, (n) => o.onWritten?.(n));
  const outputs =
    inputType === 'signedData'
      ? await putSignedWithContent(o.objects, o.outputBase, result.contentType, body, o.signal)
      : [
          await putHashed(
            o.objects,
            'result',
            o.outputBase + resultExtension(result.contentType),
            result.contentType,
            body,
            o.signal,
          ),
        ];
  // The engine reads its input to the end (it checks the whole structure); whatever it left is
  // read here, so the digest is of the whole object.
  for await (const chunk of input.body) void chunk;
  return {
    inputType,
    input: { size: input.size(), sha256: input.digest() },
    outputs,
    keys: [...used.values()],
    signers,
  };
}

async function putHashed(
  objects: ObjectStore,
  role: HashedObject['role'],
  key: string,
  contentType: string,
  body: AsyncIterable<Buffer>,
  signal: AbortSignal | undefined,
): Promise<HashedObject> {
  const h = hashing(body);
  const info = await objects.put(key, h.body, { contentType, signal });
  return {
    role,
    key,
    size: info.size,
    contentType,
    sha256: h.digest(),
    ...(info.etag ? { etag: info.etag } : {}),
  };
}

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

/**
 * Splits a SignedData's answer (multipart/mixed: the content, then the JWS) into `<key>.content`
 * and `<key>.jws.json`. The content object's stream ends only after the JWS part was read, i.e.
 * after the CMS signature verified, so a bad signature leaves no content object (the put of an
 * unfinished stream is never made visible); the JWS is written last.
 */
async function putSignedWithContent(
  objects: ObjectStore,
  base: string,
  contentType: string,
  body: AsyncIterable<Buffer>,
  signal: AbortSignal | undefined,
): Promise<HashedObject[]> {
  const boundary = mixedBoundary(contentType);
  if (!boundary) throw new Error(`a SignedData conversion answered ${contentType}`);
  const reader = new MixedReader(body, boundary);
  try {
    const content = await reader.next();
    if (!content || content.contentType !== 'application/octet-stream')
      throw new Error('the SignedData answer does not start with its content');
    let jws: Buffer | null = null;
    const contentThenJws = (async function* () {
      yield* content.body;
      const part = await reader.nextSmall(MAX_JWS_BYTES);
      if (!part || part.contentType !== 'application/jose+json' || (await reader.next()))
        throw new Error('the SignedData answer does not end with its JWS');
      jws = part.data;
    })();
    const octets = 'application/octet-stream';
    const c = await putHashed(
      objects,
      'content',
      base + CONTENT_EXTENSION,
      octets,
      contentThenJws,
      signal,
    );
    const j = await putHashed(
      objects,
      'result',
      base + resultExtension(octets),
      octets,
      once(jws!),
      signal,
    );
    return [j, c];
  } catch (err) {
    await reader.close().catch(() => {});
    throw err;
  }
}

/** A JWS object is a few kilobytes (an EdDSA or RSA-4096 signature and a small header). */
const MAX_JWS_BYTES = 64 * 1024;
