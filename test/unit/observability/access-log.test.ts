/**
 * The access line is written without pino's serializer, so it is checked here against
 * what pino writes, and ACCESS_LOG=off, ACCESS_LOG_SAMPLE and ACCESS_LOG_SLOW_MS do what the
 * README says: off writes none, sampling thins out only successful fast requests.
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../../shared/logger.ts';
import {
  createAccessLog,
  type AccessLine,
  type AccessLogOptions,
} from '../../../api/http/access-log.ts';

function captured(level = 'info') {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const logger = createLogger(level, sink);
  return {
    logger,
    records: () =>
      lines
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

const ok: AccessLine = {
  reqId: 'r-1',
  method: 'POST',
  route: '/api/v3/crypto/encrypt',
  status: 200,
  ms: 2,
  bytesIn: 1500,
  bytesOut: 900,
  aborted: false,
  cut: false,
};
const ON: AccessLogOptions = { enabled: true, sample: 1, slowMs: 1000 };

describe('the access line', () => {
  it('when a request is written, then the line is pino JSON with its level, time, bindings, fields and message', () => {
    const { logger, records } = captured();
    logger.info({ reqId: 'r-0' }, 'pino itself');
    createAccessLog(logger, ON).write({
      ...ok,
      reqId: 'quote"and\\backslash',
      claims: { tenantId: 't-1', sub: 'w-1', kind: 'workload' } as never,
    });
    const [pinoLine, line] = records();
    expect(Object.keys(line).slice(0, 3)).toEqual(Object.keys(pinoLine).slice(0, 3));
    expect(line).toMatchObject({
      level: 30,
      pid: process.pid,
      reqId: 'quote"and\\backslash',
      method: 'POST',
      route: '/api/v3/crypto/encrypt',
      status: 200,
      ms: 2,
      bytesIn: 1500,
      bytesOut: 900,
      tenantId: 't-1',
      msg: 'request',
    });
    expect(line.actor).toBe('workload:w-1');
    expect(Math.abs(line.time - Date.now())).toBeLessThan(5000);
    expect(line).not.toHaveProperty('aborted');
  });

  it('when the client left, then the line says aborted with its own message', () => {
    const { logger, records } = captured();
    createAccessLog(logger, ON).write({ ...ok, status: 499, aborted: true });
    expect(records()[0]).toMatchObject({ aborted: true, msg: 'request aborted by the client' });
  });

  it('when ACCESS_LOG is off or LOG_LEVEL is above info, then no line is written', () => {
    const off = captured();
    createAccessLog(off.logger, { ...ON, enabled: false }).write({ ...ok, status: 500 });
    expect(off.records()).toEqual([]);
    const warn = captured('warn');
    createAccessLog(warn.logger, ON).write(ok);
    expect(warn.records()).toEqual([]);
  });

  it('when sampling, then only that share of successful fast requests is written, and every failed, aborted, cut or slow one', () => {
    const { logger, records } = captured();
    let draw = 0;
    // Draws 0, 0.1, ... 0.9 in turn: a sample of 0.3 keeps exactly 3 in 10.
    const access = createAccessLog(logger, { enabled: true, sample: 0.3, slowMs: 500 }, () => {
      const d = (draw % 10) / 10;
      draw += 1;
      return d;
    });
    for (let i = 0; i < 100; i += 1) access.write({ ...ok, reqId: `ok-${i}` });
    access.write({ ...ok, reqId: 'client-error', status: 404 });
    access.write({ ...ok, reqId: 'server-error', status: 500 });
    access.write({ ...ok, reqId: 'aborted', status: 499, aborted: true });
    access.write({ ...ok, reqId: 'cut', cut: true });
    access.write({ ...ok, reqId: 'slow', ms: 500 });
    const ids = records().map((l) => l.reqId as string);
    expect(ids.filter((id) => id.startsWith('ok-'))).toHaveLength(30);
    expect(ids.slice(-5)).toEqual(['client-error', 'server-error', 'aborted', 'cut', 'slow']);
  });

  it('when the sample is 0, then successful fast requests are not written at all', () => {
    const { logger, records } = captured();
    const access = createAccessLog(logger, { enabled: true, sample: 0, slowMs: 1000 });
    for (let i = 0; i < 50; i += 1) access.write(ok);
    expect(records()).toEqual([]);
  });
});
