/**
 * HTTP/1.1 over a bare TCP socket, for what fetch and node:http will not send: paths with '..',
 * '.', '//' or NUL kept as they are, bodies cut short of their Content-Length, and clients that
 * go away mid-body. The answer is read as raw bytes and split into status, headers and body.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  /** 0 when no status line came back before the connection ended. */
  status: number;
  headers: Map<string, string>;
  body: string;
  /** The connection was reset (ECONNRESET, EPIPE) rather than closed cleanly. */
  reset: boolean;
  /** No complete answer before the deadline. */
  hung: boolean;
}

export interface RawRequest {
  method: string;
  /** Sent byte for byte as the request target. */
  target: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Content-Length to declare; defaults to the body's length (a larger one makes a truncated body). */
  contentLength?: number;
  /** Destroys the socket this many ms after the body was written, without waiting for an answer. */
  abortAfterMs?: number;
  /** Gives up after this many ms (default 5000). */
  deadlineMs?: number;
}

function parse(raw: Buffer, reset: boolean, hung: boolean): RawAnswer {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const head = end === -1 ? text : text.slice(0, end);
  const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
  const headers = new Map<string, string>();
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0)
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return {
    status: m ? Number(m[1]) : 0,
    headers,
    body: end === -1 ? '' : raw.subarray(Buffer.byteLength(head, 'latin1') + 4).toString('utf8'),
    reset,
    hung,
  };
}

/** Sends one request on a fresh connection and reads until the server closes it or the answer is complete. */
export function rawRequest(baseUrl: string, r: RawRequest): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  const body =
    typeof r.body === 'string' ? Buffer.from(r.body, 'latin1') : (r.body ?? Buffer.alloc(0));
  const lines = [
    `${r.method} ${r.target} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    `Content-Length: ${r.contentLength ?? body.length}`,
  ];
  for (const [k, v] of Object.entries(r.headers ?? {})) lines.push(`${k}: ${v}`);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let reset = false;
    let settled = false;
    const finish = (hung: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parse(Buffer.concat(chunks), reset, hung));
    };
    const timer = setTimeout(() => finish(true), r.deadlineMs ?? 5000);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      // A complete answer with a Content-Length needs no close to be read whole.
      const a = parse(Buffer.concat(chunks), false, false);
      const len = Number(a.headers.get('content-length'));
      if (a.status && Number.isInteger(len) && Buffer.byteLength(a.body) >= len) finish(false);
    });
    socket.on('error', () => {
      reset = true;
      finish(false);
    });
    socket.on('close', () => finish(false));
    socket.write(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    socket.write(body);
    if (r.abortAfterMs !== undefined) {
      const ms = r.abortAfterMs;
      setTimeout(() => finish(false), ms);
    }
  });
}
