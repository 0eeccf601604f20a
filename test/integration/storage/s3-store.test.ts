import http from 'node:http';
import net from 'node:net';
import type { ObjectStore, S3ObjectStoreOptions } from '../../../shared/storage/index.ts';
import { createObjectStore, isTransientStorageError } from '../../../shared/storage/index.ts';
import { S3ObjectStore } from '../../../shared/storage/s3-store.ts';
import type { TestS3Server } from '../../support/s3-server.ts';
import { startS3Server } from '../../support/s3-server.ts';
import { partLength } from '../../../shared/storage/s3-upload.ts';
import { behavesAsAnObjectStore } from '../../unit/storage/behaviour.ts';
import { generated, keysOf, problemFrom, readAll, text } from '../../unit/storage/helpers.ts';

/** A logger that keeps warnings for assertions instead of printing them. */
function recordingLogger() {
  const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
  return {
    warnings,
    warn: (obj: Record<string, unknown>, msg: string) => void warnings.push({ obj, msg }),
  };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts a server on 127.0.0.1 and returns its endpoint and a closer. */
async function listen(server: net.Server): Promise<{ endpoint: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const offline = (endpoint: string, extra: Partial<S3ObjectStoreOptions> = {}): S3ObjectStore =>
  new S3ObjectStore({
    endpoint,
    accessKey: 'k',
    secretKey: 's',
    bucket: 'offline',
    requestTimeoutMs: 300,
    maxRetries: 1,
    retryDelayMs: 20,
    ...extra,
  });

/** Every operation of the store, each expected to fail. */
const everyOperation = (store: ObjectStore): [string, () => Promise<unknown>][] => [
  ['get', () => store.get('a/b')],
  ['head', () => store.head('a/b')],
  ['list', () => keysOf(store.list('a/'))],
  ['put', () => store.put('a/b', text('payload'))],
  ['delete', () => store.delete('a/b')],
];

describe('S3ObjectStore against s3rver through the minio client', () => {
  const logger = recordingLogger();
  let server: TestS3Server;

  behavesAsAnObjectStore(async () => {
    server = await startS3Server();
    const s3 = {
      endpoint: server.endpoint,
      accessKey: server.accessKey,
      secretKey: server.secretKey,
      bucket: server.bucket,
    };
    const store = await createObjectStore({ dataDir: '/nonexistent', logger, s3 });
    return {
      store,
      pagedStore: new S3ObjectStore({ ...s3, logger, listPageSize: 3 }),
      close: () => server.close(),
    };
  });

  describe('on its own', () => {
    it('when the store is created, then its bucket exists', async () => {
      const store = new S3ObjectStore({
        endpoint: server.endpoint,
        accessKey: server.accessKey,
        secretKey: server.secretKey,
        bucket: 'created-later',
      });
      expect(await store.client.bucketExists('created-later')).toBe(false);
      await store.ensureBucket();
      await store.ensureBucket();
      expect(await store.client.bucketExists('created-later')).toBe(true);
    });

    it('when an upload that started parts fails, then the abort is attempted and its failure is only a warning', async () => {
      logger.warnings.length = 0;
      const store = new S3ObjectStore({
        endpoint: server.endpoint,
        accessKey: server.accessKey,
        secretKey: server.secretKey,
        bucket: server.bucket,
        logger,
      });
      await expect(
        store.put('warned/obj', generated(12, { failAfterMiB: 10 }).chunks),
      ).rejects.toThrow('source broke');
      expect(logger.warnings).toEqual([
        expect.objectContaining({ obj: expect.objectContaining({ key: 'warned/obj' }) }),
      ]);
      expect(await store.head('warned/obj')).toBeNull();
    });

    it('when an upload passes each 1,000 parts, then its part size doubles, so 10,000 parts hold about 8 TiB instead of 78 GiB', () => {
      const base = 8 * 1024 * 1024;
      expect([1, 1000, 1001, 2001, 9999].map((n) => partLength(base, n) / base)).toEqual([
        1, 1, 2, 4, 512,
      ]);
      let total = 0;
      for (let n = 1; n <= 10_000; n++) total += partLength(base, n);
      expect(total / 1024 ** 4).toBeGreaterThan(7.5);
    });

    it('when the part size is under the S3 minimum of 5 MiB, then the store refuses to start', () => {
      expect(
        () =>
          new S3ObjectStore({
            endpoint: server.endpoint,
            accessKey: 'a',
            secretKey: 'b',
            bucket: 'abc',
            partSize: 1024,
          }),
      ).toThrow(RangeError);
    });
  });
});

describe('S3ObjectStore when storage is unreachable', () => {
  it('when the port is closed, then every operation answers transient storage_unavailable quickly', async () => {
    const store = offline(`http://127.0.0.1:${await closedPort()}`);
    for (const [op, run] of everyOperation(store)) {
      const started = Date.now();
      const err = await problemFrom(run());
      expect({
        op,
        code: err.code,
        status: err.status,
        transient: isTransientStorageError(err),
      }).toEqual({ op, code: 'storage_unavailable', status: 503, transient: true });
      expect(Date.now() - started).toBeLessThan(1000);
    }
  });

  it('when the server accepts connections but never answers, then requests time out as storage_unavailable', async () => {
    const sockets = new Set<net.Socket>();
    const blackHole = await listen(net.createServer((socket) => void sockets.add(socket)));
    try {
      const store = offline(blackHole.endpoint, { maxRetries: 0 });
      const started = Date.now();
      const err = await problemFrom(store.head('a/b'));
      expect(err.code).toBe('storage_unavailable');
      expect(isTransientStorageError(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await blackHole.close();
    }
  });

  it('when the server answers 503, then the store retries and then answers storage_unavailable', async () => {
    let requests = 0;
    const busy = await listen(
      http.createServer((_req, res) => {
        requests++;
        res
          .writeHead(503, { 'content-type': 'application/xml' })
          .end('<Error><Code>SlowDown</Code><Message>busy</Message></Error>');
      }),
    );
    try {
      const err = await problemFrom(offline(busy.endpoint, { maxRetries: 2 }).head('a/b'));
      expect(err.code).toBe('storage_unavailable');
      expect(isTransientStorageError(err)).toBe(true);
      expect(requests).toBe(3);
    } finally {
      await busy.close();
    }
  });

  it('when the connection drops mid-download, then the stream fails with storage_unavailable', async () => {
    const dropping = await listen(
      http.createServer((_req, res) => {
        res.writeHead(200, {
          'content-length': '1000000',
          'content-type': 'application/octet-stream',
        });
        res.write(Buffer.alloc(1000), () => res.socket?.destroy());
      }),
    );
    try {
      const stream = await offline(dropping.endpoint).get('a/b');
      const err = await problemFrom(readAll(stream));
      expect({ code: err.code, transient: isTransientStorageError(err) }).toEqual({
        code: 'storage_unavailable',
        transient: true,
      });
    } finally {
      await dropping.close();
    }
  });

  it('when createObjectStore cannot reach S3, then it fails fast with storage_unavailable', async () => {
    const port = await closedPort();
    const started = Date.now();
    const err = await problemFrom(
      createObjectStore({
        dataDir: '/nonexistent',
        s3: {
          endpoint: `http://127.0.0.1:${port}`,
          accessKey: 'k',
          secretKey: 's',
          bucket: 'abc',
          maxRetries: 0,
        },
      }),
    );
    expect(err.code).toBe('storage_unavailable');
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
