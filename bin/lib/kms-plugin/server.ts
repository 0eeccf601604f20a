/**
 * The KMS v2 plugin's gRPC server on a unix socket (@grpc/grpc-js, the service loaded from the
 * vendored api.proto): the socket is made 0600 (only the API server's user, root, talks to it), a
 * stale socket left by a plugin that died is replaced, a socket another plugin still serves is
 * not, and close() ends the calls in flight within a grace and removes the socket it made.
 */
import { chmodSync, lstatSync, mkdirSync, rmSync, type Stats } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PluginError, type DecryptInput, type KmsPlugin } from './service.ts';

/** The vendored k8s.io/kms/apis/v2 api.proto (copied beside the compiled code by pack-cli). */
export const PROTO_FILE = fileURLToPath(new URL('./api.proto', import.meta.url));

/** proto-loader's options: field names as the .proto spells them (key_id), bytes as Buffers. */
export const PROTO_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true };

/** Requests carry a DEK seed and a ciphertext under 1 KiB: anything much larger is refused unread. */
const MAX_MESSAGE_BYTES = 64 * 1024;
/** How long close() lets the calls in flight finish before it cuts them. */
const CLOSE_GRACE_MS = 5_000;

export interface PluginServer {
  /** Stops serving (calls in flight get a grace) and removes the socket. Idempotent. */
  close(): Promise<void>;
}

/** True when something accepts connections on the unix socket at `path`. */
function answering(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    const done = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(1_000, () => done(true)); // accepted, though slow: someone is there
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Makes room for the socket: its directory (0700 when made here), and no stale socket in the way. */
async function prepare(path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let stat: Stats;
  try {
    stat = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!stat.isSocket())
    throw new Error(
      `${path} exists and is not a socket: not replaced; remove it or choose another`,
    );
  if (await answering(path))
    throw new Error(`another process serves ${path}: stop it first, or choose another socket`);
  rmSync(path, { force: true }); // left by a plugin that died
}

/** A unary handler over one of the plugin's methods: its deadline and cancellation, its errors as gRPC statuses. */
function unary<Req, Res>(
  work: (request: Req, signal: AbortSignal) => Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const cancel = new AbortController();
    call.once('cancelled', () => cancel.abort());
    // A gRPC deadline is a Date or epoch milliseconds (Infinity: none).
    const deadline = call.getDeadline();
    const ms = (deadline instanceof Date ? deadline.getTime() : deadline) - Date.now();
    const signal = Number.isFinite(ms)
      ? AbortSignal.any([
          cancel.signal,
          AbortSignal.timeout(Math.min(Math.max(1, ms), 2 ** 31 - 1)),
        ])
      : cancel.signal;
    // Inside an async function, a synchronous throw becomes the INTERNAL answer too.
    (async () => work(call.request, signal))().then(
      (answer) => callback(null, answer),
      (err: unknown) =>
        callback(
          err instanceof PluginError
            ? { code: err.code, details: err.message }
            : { code: grpc.status.INTERNAL, details: 'internal error' },
        ),
    );
  };
}

/** Serves the plugin on the unix socket `socket` until close(). */
export async function servePlugin(plugin: KmsPlugin, socket: string): Promise<PluginServer> {
  const definition = loadSync(PROTO_FILE, PROTO_OPTIONS);
  const v2 = grpc.loadPackageDefinition(definition).v2 as unknown as {
    KeyManagementService: { service: grpc.ServiceDefinition };
  };
  await prepare(socket);
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(v2.KeyManagementService.service, {
    Status: unary(() => plugin.status()),
    Encrypt: unary((req: { plaintext: Buffer }, signal) => plugin.encrypt(req.plaintext, signal)),
    Decrypt: unary(async (req: DecryptInput, signal) => ({
      plaintext: await plugin.decrypt(req, signal),
    })),
  });
  // The socket is created 0600: the umask covers the moment bind() makes it, chmod the rest.
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  } finally {
    process.umask(umask);
  }
  chmodSync(socket, 0o600);
  // The socket made here, by inode: close() never removes one a later plugin put in its place.
  const made = lstatSync(socket).ino;

  let closing: Promise<void> | null = null;
  const close = async () => {
    await new Promise<void>((resolve) => {
      const cut = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, CLOSE_GRACE_MS);
      server.tryShutdown(() => {
        clearTimeout(cut);
        resolve();
      });
    });
    try {
      if (lstatSync(socket).ino === made) rmSync(socket, { force: true });
    } catch {
      // already gone
    }
  };
  return {
    close: () => (closing ??= close()),
  };
}
