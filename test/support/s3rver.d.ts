/** The part of s3rver 3.7 the tests use (the package ships no types). */
declare module 's3rver' {
  import type { Server } from 'node:http';
  import type { AddressInfo } from 'node:net';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: (string | Buffer)[] }[];
  }

  export default class S3rver {
    constructor(options?: S3rverOptions);
    /** The listening server once `run()` has resolved. */
    httpServer?: Server;
    run(): Promise<AddressInfo>;
    /** S3 event notifications: one record per object created or removed. */
    on(
      event: 'event',
      listener: (e: { Records: { eventName: string; s3: { object: { key: string } } }[] }) => void,
    ): this;
    close(): Promise<void>;
  }
}
