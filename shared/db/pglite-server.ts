/**
 * The embedded database's own process: PGlite (Postgres in WASM) serving the Postgres wire
 * protocol on a Unix socket in a private directory, so the API talks to it through the same
 * `pg` client as to a Postgres server. Started by shared/db/embedded.ts with an IPC channel:
 * `process.argv` is [dataDir ('' = in memory), socket path]; it sends `{ ready: true }` once
 * it listens, `{ error }` if it cannot start, and ends when told `close` or when its parent
 * goes (the IPC channel closes), so it never outlives the API.
 *
 * PGlite is one backend: it serves one connection at a time (the API's pool holds one), and a
 * second connection waits until the first has gone. A connection that goes inside a
 * transaction has it rolled back before the next is served.
 */
import { createServer, type Socket } from 'node:net';
import { unlinkSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { openPglite } from './pglite.ts';

/** An SSLRequest or CancelRequest: 8 bytes, a length and a code, before any typed message. */
const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
/** Larger than any statement Keyward sends; a frame past it is a broken client. */
const MAX_MESSAGE = 256 * 1024 * 1024;

const [dataDirArg, socketPath] = process.argv.slice(2);
const send = (message: object) => process.send?.(message);

/** A client connection: what it has sent so far, and whether it has gone. */
interface Connection {
  socket: Socket;
  queue: Buffer[];
  ended: boolean;
  wake: (() => void) | null;
}

/** Starts buffering a connection at once, so nothing it sends or its end is missed while it waits. */
function accept(socket: Socket): Connection {
  const conn: Connection = { socket, queue: [], ended: false, wake: null };
  socket.on('data', (chunk: Buffer) => {
    conn.queue.push(chunk);
    conn.wake?.();
  });
  const end = () => {
    conn.ended = true;
    conn.wake?.();
  };
  socket.once('close', end);
  socket.on('error', end);
  return conn;
}

/** Serves one client connection until it ends; resolves when it has. */
async function serve(pg: PGlite, conn: Connection): Promise<void> {
  const { socket, queue } = conn;
  let pending: Buffer = Buffer.alloc(0);
  let started = false;
  // PGlite hands out views of its WASM memory, which its next message overwrites; a socket
  // keeps what it cannot send at once by reference, so each answer is copied before it is
  // queued (without the copy, a 400 KB answer reached the client corrupted and it hung).
  const write = (bytes: Uint8Array) => {
    if (!socket.destroyed) socket.write(Buffer.from(bytes));
  };
  try {
    for (;;) {
      if (queue.length === 0) {
        if (conn.ended) return;
        await new Promise<void>((resolve) => (conn.wake = resolve));
        conn.wake = null;
        continue;
      }
      pending = pending.length === 0 ? queue.shift()! : Buffer.concat([pending, queue.shift()!]);
      for (;;) {
        const size = frameSize(pending, started);
        if (size === null) break;
        if (size < 0 || size > MAX_MESSAGE) {
          socket.destroy();
          return;
        }
        if (pending.length < size) break;
        const message = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (!started) {
          const code = message.readInt32BE(4);
          if (code === SSL_REQUEST) {
            write(Buffer.from('N'));
            continue;
          }
          if (code === CANCEL_REQUEST) continue;
          if (code !== PROTOCOL_3) {
            socket.destroy();
            return;
          }
          started = true;
        }
        // Terminate: the connection ends; PGlite's backend stays for the next one.
        if (started && message[0] === 0x58 && size === 5) {
          socket.end();
          return;
        }
        await pg.execProtocolRawStream(new Uint8Array(message), { onRawData: write });
      }
    }
  } finally {
    if (pg.isInTransaction()) await pg.exec('ROLLBACK').catch(() => undefined);
  }
}

/**
 * The size of the first message in `buf`, null when too few bytes have come to tell. Before the
 * startup message the frame is a length that counts itself; after it, a type byte then that.
 */
function frameSize(buf: Buffer, started: boolean): number | null {
  if (!started) return buf.length < 8 ? null : buf.readInt32BE(0);
  return buf.length < 5 ? null : 1 + buf.readInt32BE(1);
}

async function main(): Promise<void> {
  if (!socketPath) throw new Error('usage: pglite-server.ts <dataDir|""> <socket path>');
  const pg = await openPglite(dataDirArg ? dataDirArg : null);
  // One connection at a time: the next waits for the one before to end.
  let turn = Promise.resolve();
  const server = createServer({ allowHalfOpen: false }, (socket) => {
    const conn = accept(socket);
    turn = turn
      .then(() => serve(pg, conn))
      .catch(() => {
        socket.destroy();
      });
  });
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    server.close();
    await turn;
    await pg.close().catch(() => undefined);
    process.exit(0);
  };
  server.on('error', (err) => {
    send({ error: err.message });
    process.exit(1);
  });
  try {
    unlinkSync(socketPath);
  } catch {
    // No socket left by an earlier run.
  }
  server.listen(socketPath, () => send({ ready: true }));
  process.on('message', (m) => {
    if (m === 'close') void close();
  });
  process.on('disconnect', () => void close());
}

main().catch((err: Error) => {
  send({ error: err.message });
  process.exit(1);
});
