/**
 * The embedded database's own process: PGlite (Postgres in WASM) serving the Postgres wire
 * protocol on a Unix socket in a private directory, so the API talks to it through the same
 * `pg` client as to a Postgres server. Started by shared/db/embedded.ts with an IPC channel:
 * `process.argv` is [dataDir ('' = in memory), socket path]; it sends `{ ready: true }` once
 * it listens, `{ error }` if it cannot start, and ends when told `close` or when its parent
 * goes (the IPC channel closes), so it never outlives the API.
 *
 * PGlite is one backend, shared by every connection in turn: a connection holds it from its
 * first message until PGlite is ready for a query outside a transaction again (after a Sync or
 * a simple Query), then the next waiting connection has its turn. So the API's connection and a
 * worker's (`npm run worker` beside `npm start`, shared/db/knex.ts) interleave between
 * transactions, never inside one; Keyward keeps no session state (no SET, no session locks, no
 * named statements) that one connection could see of another's. A connection that goes inside
 * a transaction has it rolled back before the next is served, and whatever session state it
 * left (a search_path set to '' by a pg_dump, a role, prepared statements, temporary tables,
 * advisory locks) is dropped by DISCARD ALL once it has gone, so one client of the socket cannot
 * leave the backend broken for the others until a restart.
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

/**
 * The backend's turn: the connection holding it, and the ones waiting, first come first served.
 * A connection waits only with a message in hand; its turn ends at an idle ReadyForQuery.
 */
let holder: Connection | null = null;
const waiting: Array<{ conn: Connection; resolve: () => void }> = [];

function take(conn: Connection): Promise<void> | undefined {
  if (holder === conn) return undefined;
  if (holder === null) {
    holder = conn;
    return undefined;
  }
  return new Promise((resolve) => waiting.push({ conn, resolve }));
}

function release(conn: Connection): void {
  if (holder !== conn) return;
  const next = waiting.shift();
  holder = next?.conn ?? null;
  next?.resolve();
}

const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]);
/** Sync ('S') and simple Query ('Q') end with a ReadyForQuery; the startup message too. */
const ENDS_WITH_READY = new Set([0x53, 0x51]);

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
  /** True once the startup message has been answered. */
  let ready = false;
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
        const startup = started && !ready;
        await take(conn);
        await pg.execProtocolRawStream(new Uint8Array(message), { onRawData: write });
        ready = true;
        if ((startup || ENDS_WITH_READY.has(message[0])) && !pg.isInTransaction()) release(conn);
      }
    }
  } finally {
    await leave(pg, conn, started);
  }
}

/**
 * After a connection has gone. Gone during its turn: a Sync ends an extended query it left half
 * sent (its answer is nobody's), then its transaction is rolled back. A connection that got as
 * far as its startup then has the backend once more, for DISCARD ALL (RESET ALL, DEALLOCATE ALL,
 * CLOSE ALL, UNLISTEN *, pg_advisory_unlock_all, DISCARD TEMP and PLANS): what it SET is its
 * own session's, but here every connection shares the one backend.
 */
async function leave(pg: PGlite, conn: Connection, started: boolean): Promise<void> {
  if (holder !== conn) {
    if (!started) return;
    await take(conn);
  }
  try {
    await pg.execProtocolRaw(SYNC).catch(() => undefined);
    if (pg.isInTransaction()) await pg.exec('ROLLBACK').catch(() => undefined);
    if (started) await pg.exec('DISCARD ALL').catch(() => undefined);
  } finally {
    release(conn);
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
  // Every connection is served at once; they take turns on the backend (take/release).
  const serving = new Set<Promise<void>>();
  const server = createServer({ allowHalfOpen: false }, (socket) => {
    const done = serve(pg, accept(socket))
      .catch(() => {
        socket.destroy();
      })
      .finally(() => serving.delete(done));
    serving.add(done);
  });
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    server.close();
    await Promise.all(serving);
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
