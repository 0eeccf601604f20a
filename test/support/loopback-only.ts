/**
 * Preloaded (`node --import`) into a child process that must not talk to anything beyond this
 * machine: every TCP connection to a host other than loopback fails at once and is reported on
 * stderr as `NON-LOOPBACK <host>:<port>`. For clients that ignore HTTPS_PROXY (the AWS SDK for
 * JavaScript's own https agent does), where a refusing proxy cannot see what they send.
 */
import net from 'node:net';

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|::1|\[::1\])$/;
const connect = net.Socket.prototype.connect;

net.Socket.prototype.connect = function guarded(this: net.Socket, ...args: unknown[]) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const o = (
    typeof first === 'object' && first !== null ? first : { port: first, host: args[1] }
  ) as { host?: unknown; port?: unknown; path?: unknown };
  const host = typeof o.host === 'string' ? o.host : 'localhost';
  if (typeof o.path !== 'string' && !LOOPBACK.test(host)) {
    process.stderr.write(`NON-LOOPBACK ${host}:${String(o.port)}\n`);
    process.nextTick(() => this.destroy(new Error(`${host} is not loopback`)));
    return this;
  }
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;
