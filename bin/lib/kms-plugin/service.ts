/**
 * The Kubernetes KMS v2 plugin's three methods (Status, Encrypt, Decrypt of k8s.io/kms/apis/v2),
 * transport-free: the gRPC server (server.ts) calls them, a test can too. Each one is a call to
 * the Keyward Core API with the workload's token (`/api/v3/crypto/encrypt` and `/decrypt`): the
 * DEK seed the API server sends is sealed as a compact JWE under the key's current version, and
 * `key_id` is `<kid>#<version>`, so a rotation changes it and the API server re-encrypts.
 * docs/kubernetes-kms.md explains the choices.
 */
import { status as Code } from '@grpc/grpc-js';
import type { Api } from '../api-client.ts';

/** The plugin API version Status reports; EncryptionConfiguration names it as `apiVersion: v2`. */
export const API_VERSION = 'v2';

/**
 * The one annotation the plugin writes: the format of its ciphertext, so a later format can be
 * told apart. The API server wants fully qualified domain names as keys (no `/`) and stores the
 * annotations with every object, so it is short.
 */
export const FORMAT_ANNOTATION = 'format.kms.keyward.io';
export const FORMAT = 'jwe/1';

/**
 * The encryption context every seal is bound to: a JWE the same key made for something else
 * (`keyward encrypt`, another application) does not open as a DEK seed, nor the reverse.
 */
const CONTEXT = { purpose: 'kubernetes-kms-v2' };

/** The API server sends a 32-byte seed (or a 32-byte AES key); more than this is not a DEK. */
export const MAX_PLAINTEXT = 128;
/** The API server refuses to store an encrypted DEK source larger than 1 KiB. */
export const MAX_CIPHERTEXT = 1024;

/** How long Status answers from its last probe of Keyward: a success, and a failure. */
const STATUS_OK_TTL_MS = 5_000;
const STATUS_FAILED_TTL_MS = 1_000;

/** A failure as the plugin answers it over gRPC: a status code and a message that tells nothing more. */
export class PluginError extends Error {
  readonly code: Code;
  constructor(code: Code, message: string) {
    super(message);
    this.name = 'PluginError';
    this.code = code;
  }
}

const DECRYPTION_FAILED = () => new PluginError(Code.INVALID_ARGUMENT, 'decryption failed');

export interface StatusAnswer {
  version: string;
  healthz: string;
  key_id: string;
}

export interface EncryptAnswer {
  ciphertext: Buffer;
  key_id: string;
  annotations: Record<string, Buffer>;
}

export interface DecryptInput {
  ciphertext: Buffer;
  key_id: string;
  annotations: Record<string, Buffer>;
}

export interface PluginOptions {
  /** The Core API operations the plugin calls, over the workload's token. */
  api: Pick<Api, 'encrypt' | 'decrypt'>;
  /** The Keyward key every Encrypt seals under. */
  kid: string;
  /** The deadline of Status's call to Keyward. */
  probeTimeoutMs: number;
  /** Where failures are written (never a plaintext, a token or a ciphertext). */
  log: (line: string) => void;
  now?: () => number;
}

/** `<kid>#<version>`: the key id the API server keeps with each object, as JWKs name a version. */
export const keyIdOf = (kid: string, version: number) => `${kid}#${version}`;

/** A failure as it is named in healthz and in the gRPC message: a problem slug at most. */
function reasonOf(err: unknown): { code: Code; reason: string } {
  const e = err as {
    name?: string;
    status?: number;
    slug?: string;
    cause?: { name?: string };
  };
  if (e?.name === 'TimeoutError' || e?.cause?.name === 'TimeoutError')
    return { code: Code.DEADLINE_EXCEEDED, reason: 'keyward did not answer in time' };
  if (e?.name === 'AbortError') return { code: Code.CANCELLED, reason: 'cancelled' };
  if (err instanceof TypeError && err.message === 'fetch failed')
    return { code: Code.UNAVAILABLE, reason: 'keyward is unreachable' };
  if (e?.name === 'SessionError')
    return { code: Code.UNAUTHENTICATED, reason: 'the login can no longer be renewed' };
  if (e?.name === 'ApiError' && typeof e.status === 'number') {
    const slug = `keyward answered ${e.status} ${e.slug ?? ''}`.trim();
    if (e.status >= 500) return { code: Code.UNAVAILABLE, reason: slug };
    if (e.status === 401) return { code: Code.UNAUTHENTICATED, reason: slug };
    if (e.status === 403) return { code: Code.PERMISSION_DENIED, reason: slug };
    if (e.status === 429) return { code: Code.RESOURCE_EXHAUSTED, reason: slug };
    if (e.status === 404 || e.status === 409)
      return { code: Code.FAILED_PRECONDITION, reason: slug };
    return { code: Code.INVALID_ARGUMENT, reason: slug };
  }
  return { code: Code.INTERNAL, reason: 'internal error' };
}

/** The plugin: Status probes Keyward (cached briefly), Encrypt and Decrypt call it. */
export class KmsPlugin {
  readonly #api: PluginOptions['api'];
  readonly #kid: string;
  readonly #probeTimeoutMs: number;
  readonly #log: (line: string) => void;
  readonly #now: () => number;
  /** The key id of the newest seal seen (Status's probe or an Encrypt); '' before the first. */
  #current = '';
  #status: { answer: StatusAnswer; until: number } | null = null;
  #probing: Promise<StatusAnswer> | null = null;

  constructor(opts: PluginOptions) {
    this.#api = opts.api;
    this.#kid = opts.kid;
    this.#probeTimeoutMs = opts.probeTimeoutMs;
    this.#log = opts.log;
    this.#now = opts.now ?? Date.now;
  }

  /** A seal under the key's current version: the answer, and its key id noted as the current one. */
  async #seal(plaintext: Buffer, signal: AbortSignal) {
    const sealed = await this.#api.encrypt({
      body: { kid: this.#kid, data: plaintext.toString('base64'), context: CONTEXT },
      signal,
    });
    const keyId = keyIdOf(sealed.kid, sealed.version);
    if (keyId !== this.#current) {
      if (this.#current) this.#log(`key id is now ${keyId} (was ${this.#current})`);
      this.#current = keyId;
      if (this.#status?.answer.healthz === 'ok') this.#status.answer.key_id = keyId;
    }
    return { sealed, keyId };
  }

  /**
   * Healthz `ok` and the current key id while Keyward seals under the key (a one-byte seal within
   * the probe deadline: it proves the service, the token, the permission and the key state at
   * once, and answers the current version); else the reason, and the last key id known.
   * One probe at a time; its answer is reused for a few seconds.
   */
  async status(): Promise<StatusAnswer> {
    if (this.#status && this.#now() < this.#status.until) return { ...this.#status.answer };
    this.#probing ??= this.#probe().finally(() => {
      this.#probing = null;
    });
    return { ...(await this.#probing) };
  }

  async #probe(): Promise<StatusAnswer> {
    let answer: StatusAnswer;
    try {
      const { keyId } = await this.#seal(Buffer.of(0), AbortSignal.timeout(this.#probeTimeoutMs));
      answer = { version: API_VERSION, healthz: 'ok', key_id: keyId };
    } catch (err) {
      const { reason } = reasonOf(err);
      this.#log(`status: ${reason}`);
      answer = { version: API_VERSION, healthz: reason, key_id: this.#current };
    }
    const ttl = answer.healthz === 'ok' ? STATUS_OK_TTL_MS : STATUS_FAILED_TTL_MS;
    this.#status = { answer, until: this.#now() + ttl };
    return answer;
  }

  /** Seals a DEK seed under the key's current version; `key_id` names that version. */
  async encrypt(plaintext: Buffer, signal: AbortSignal): Promise<EncryptAnswer> {
    if (plaintext.length === 0 || plaintext.length > MAX_PLAINTEXT)
      throw new PluginError(
        Code.INVALID_ARGUMENT,
        `plaintext must be 1 to ${MAX_PLAINTEXT} bytes (a DEK seed)`,
      );
    let result;
    try {
      result = await this.#seal(plaintext, signal);
    } catch (err) {
      throw this.#failure('encrypt', err);
    }
    const ciphertext = Buffer.from(result.sealed.ciphertext, 'utf8');
    if (ciphertext.length > MAX_CIPHERTEXT) {
      this.#log(`encrypt: the ciphertext is ${ciphertext.length} bytes, over ${MAX_CIPHERTEXT}`);
      throw new PluginError(
        Code.FAILED_PRECONDITION,
        `the ciphertext exceeds the ${MAX_CIPHERTEXT} bytes the API server stores (use a shorter kid)`,
      );
    }
    return {
      ciphertext,
      key_id: result.keyId,
      annotations: { [FORMAT_ANNOTATION]: Buffer.from(FORMAT) },
    };
  }

  /**
   * Opens what Encrypt sealed, under whichever retained version sealed it (an object written
   * before a rotation still opens). The key id the API server kept must be the one the
   * ciphertext names; any refusal of the ciphertext answers the same `decryption failed`.
   */
  async decrypt(input: DecryptInput, signal: AbortSignal): Promise<Buffer> {
    const format = Object.hasOwn(input.annotations, FORMAT_ANNOTATION)
      ? input.annotations[FORMAT_ANNOTATION].toString('latin1')
      : FORMAT;
    const ciphertext = input.ciphertext.toString('latin1');
    if (
      format !== FORMAT ||
      ciphertext.length === 0 ||
      ciphertext.length > MAX_CIPHERTEXT ||
      !/^[A-Za-z0-9_.-]+$/.test(ciphertext) ||
      !/^[A-Za-z0-9._:-]{1,128}#[1-9][0-9]{0,9}$/.test(input.key_id)
    )
      throw DECRYPTION_FAILED();
    let opened;
    try {
      opened = await this.#api.decrypt({ body: { ciphertext, context: CONTEXT }, signal });
    } catch (err) {
      throw this.#failure('decrypt', err);
    }
    if (keyIdOf(opened.kid, opened.version) !== input.key_id) {
      this.#log('decrypt: the key id kept with the object is not the one its ciphertext names');
      throw DECRYPTION_FAILED();
    }
    return Buffer.from(opened.data, 'base64');
  }

  /** A failed call to Keyward as the gRPC answer: decryption failures all alike. */
  #failure(op: 'encrypt' | 'decrypt', err: unknown): PluginError {
    const { code, reason } = reasonOf(err);
    // The cause of an unexpected failure goes to the log only, never into the answer.
    this.#log(`${op}: ${code === Code.INTERNAL ? `${reason}: ${String(err)}` : reason}`);
    // A ciphertext Keyward refuses, or whose header names no key of the tenant, is one failure.
    const refused = code === Code.INVALID_ARGUMENT || (err as { status?: number }).status === 404;
    if (op === 'decrypt' && refused) return DECRYPTION_FAILED();
    return new PluginError(code, reason);
  }
}
