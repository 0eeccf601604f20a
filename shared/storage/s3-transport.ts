/**
 * An HTTP transport for the minio client with a request timeout, which minio lacks: a request
 * that connects, sends or waits for its response longer than `timeoutMs` without progress fails
 * with ETIMEDOUT instead of hanging. While a download is held back by its consumer (the response
 * buffer is full) the idle time is not held against it.
 */
import http from 'node:http';
import https from 'node:https';

/** The shape minio expects for `ClientOptions.transport`. */
export type S3Transport = Pick<typeof http, 'request'>;

export function timeoutTransport(secure: boolean, timeoutMs: number): S3Transport {
  const base = secure ? https : http;
  function request(
    opts: http.RequestOptions,
    callback?: (res: http.IncomingMessage) => void,
  ): http.ClientRequest {
    const req = base.request({ ...opts, timeout: timeoutMs }, callback);
    let response: http.IncomingMessage | undefined;
    req.on('response', (res: http.IncomingMessage) => (response = res));
    req.on('timeout', () => {
      if (response && response.readableLength >= response.readableHighWaterMark) return;
      const err = Object.assign(
        new Error(`object storage request timed out after ${timeoutMs} ms`),
        { code: 'ETIMEDOUT' },
      );
      req.destroy(err);
    });
    return req;
  }
  return { request } as unknown as S3Transport;
}
