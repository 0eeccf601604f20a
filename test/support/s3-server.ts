/**
 * Starts an s3rver (S3 protocol server) on 127.0.0.1 with a free port and a temp directory, for
 * tests that run the real minio client against it. `close()` stops it and removes the directory;
 * the file's end closes it too, if the test never did.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { withDeadline } from '../../support/deadline.ts';
import { closeWhenFileEnds } from '../../support/file-teardown.ts';

export interface TestS3Server {
  endpoint: string;
  port: number;
  /** s3rver's fixed credentials. */
  accessKey: string;
  secretKey: string;
  /** A bucket name for the test; not created (stores create their bucket). */
  bucket: string;
  directory: string;
  /** Calls `listener` for every object written (`ObjectCreated:Put`, `:Post`...) with its key. */
  onObjectCreated(listener: (key: string) => void): void;
  close(): Promise<void>;
}

export function startS3Server(opts: { bucket?: string } = {}): Promise<TestS3Server> {
  const started = closeWhenFileEnds('s3rver', startServer(opts), (s3) => s3.close());
  return withDeadline('s3rver (object storage)', started);
}

async function startServer(opts: { bucket?: string }): Promise<TestS3Server> {
  const directory = await mkdtemp(path.join(tmpdir(), 'keyward-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const { port } = await server.run();
  // Node closes an idle keep-alive socket after 5 s; a client that picks it from its pool at that
  // moment gets ECONNRESET (seen once in CI, a 100 MiB put on a loaded machine). A test server
  // keeps idle sockets for the whole test instead; close() ends them.
  if (server.httpServer) server.httpServer.keepAliveTimeout = 120_000;
  let closed = false;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    bucket: opts.bucket ?? 'keyward-test',
    directory,
    onObjectCreated(listener) {
      server.on('event', (e) => {
        for (const r of e.Records)
          if (r.eventName.startsWith('ObjectCreated:')) listener(r.s3.object.key);
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      const closing = server.close();
      // Keep-alive sockets from the clients would hold close() open until they idle out.
      server.httpServer?.closeAllConnections();
      await closing;
      await rm(directory, { recursive: true, force: true });
    },
  };
}
