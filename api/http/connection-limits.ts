/**
 * Caps on open connections: per client address and in all. A connection over a cap
 * is still read for one request: a GET or HEAD of a health path is served (then the connection
 * closes), anything else answers 503 too-many-connections with Retry-After and closes. So an
 * orchestrator's probe is answered while the caps are full, as long as the reserve
 * (`server.maxConnections` = cap + reserve; Node closes connections past it unanswered) holds.
 * Refusals are counted in a metric and logged at most once per LOG_EVERY_MS, with the address
 * holding the most connections, so a flood writes a few lines an operator can act on.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { OAuthError, problem } from '../../shared/errors/index.ts';
import type { Logger } from '../../shared/logger.ts';
import type { ConnectionRefusal, Metrics } from '../metrics.ts';
import { oauthResponse, problemResponse } from '../access/problems.ts';

/** Served on a connection over the caps, so that health stays answerable under a flood. */
const HEALTH_PATHS = new Set(['/healthz', '/readyz']);

/** Seconds a refused client should wait: a held body frees its slot within the body deadlines. */
const RETRY_AFTER = '5';

const LOG_EVERY_MS = 10_000;

const OVER = Symbol('over the connection caps');
type Tagged = Socket & { [OVER]?: ConnectionRefusal };

export interface ConnectionLimitOptions {
  /** Connections one address may hold; 0 for no cap. */
  perAddress: number;
  total: number;
  /** Connections beyond the caps still read for a health probe. */
  reserve: number;
  publicBaseUrl: string;
  /** Whether a URL answers in the OAuth error shape (the route table's OAuth areas). */
  oauthShaped: (url: string) => boolean;
}

/** The caps of one server: attach(server), then refused(req, res) first thing on each request. */
export class ConnectionLimits {
  readonly #opts: ConnectionLimitOptions;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #byAddress = new Map<string, number>();
  #open = 0;
  readonly #refused: Record<ConnectionRefusal, number> = { address: 0, total: 0, dropped: 0 };
  #window: NodeJS.Timeout | null = null;

  constructor(opts: ConnectionLimitOptions, logger: Logger, metrics: Metrics) {
    this.#opts = opts;
    this.#logger = logger;
    this.#metrics = metrics;
  }

  attach(server: Server): void {
    server.maxConnections = this.#opts.total + this.#opts.reserve;
    server.on('connection', (socket: Socket) => this.#admit(socket));
    server.on('drop', () => this.#note('dropped'));
    server.on('close', () => {
      if (this.#window) clearTimeout(this.#window);
    });
  }

  #admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const held = (this.#byAddress.get(address) ?? 0) + 1;
    this.#byAddress.set(address, held);
    this.#open += 1;
    const { perAddress, total } = this.#opts;
    if (perAddress > 0 && held > perAddress) (socket as Tagged)[OVER] = 'address';
    else if (this.#open > total) (socket as Tagged)[OVER] = 'total';
    socket.once('close', () => {
      this.#open -= 1;
      const left = (this.#byAddress.get(address) ?? 1) - 1;
      if (left === 0) this.#byAddress.delete(address);
      else this.#byAddress.set(address, left);
    });
  }

  /** Answers a request on a connection over a cap (true), or leaves it to the app (false). */
  refused(req: IncomingMessage, res: ServerResponse): boolean {
    const over = (req.socket as Tagged)[OVER];
    if (over === undefined) return false;
    // One request per connection over the cap: the slot is given back as soon as it is answered.
    res.setHeader('Connection', 'close');
    if ((req.method === 'GET' || req.method === 'HEAD') && HEALTH_PATHS.has(req.url ?? ''))
      return false;
    this.#note(over);
    const detail =
      over === 'address'
        ? 'this client address holds as many connections as the service accepts from one address'
        : 'the service holds as many connections as it accepts';
    const headers = { 'Retry-After': RETRY_AFTER };
    const answer = this.#opts.oauthShaped(req.url ?? '')
      ? oauthResponse(new OAuthError('temporarily_unavailable', detail, 503, headers))
      : problemResponse(
          problem('too_many_connections', detail, { headers }),
          this.#opts.publicBaseUrl,
          (req.url ?? '').split('?')[0].slice(0, 256),
        );
    res.writeHead(answer.status, {
      ...answer.headers,
      'Content-Length': Buffer.byteLength(answer.body),
    });
    res.end(answer.body);
    return true;
  }

  #note(reason: ConnectionRefusal): void {
    this.#refused[reason] += 1;
    this.#metrics.refuseConnection(reason);
    if (!this.#window) this.#report();
  }

  /** One line for the refusals since the last, then again in LOG_EVERY_MS if more come. */
  #report(): void {
    const { address, total, dropped } = this.#refused;
    if (address + total + dropped === 0) {
      this.#window = null;
      return;
    }
    let busiest = { address: '', connections: 0 };
    for (const [a, n] of this.#byAddress)
      if (n > busiest.connections) busiest = { address: a, connections: n };
    this.#logger.warn(
      {
        refused: { address, total, dropped },
        open: this.#open,
        busiest,
        caps: { perAddress: this.#opts.perAddress, total: this.#opts.total },
      },
      'connections refused over the caps (MAX_CONNECTIONS_PER_ADDRESS, MAX_CONNECTIONS): block the busiest address upstream, or raise the caps if the load is real',
    );
    this.#refused.address = this.#refused.total = this.#refused.dropped = 0;
    this.#window = setTimeout(() => this.#report(), LOG_EVERY_MS).unref();
  }
}
