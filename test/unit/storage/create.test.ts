import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  FsObjectStore,
  createObjectStore,
  objectStoreConfig,
} from '../../../shared/storage/index.ts';
import { S3ObjectStore } from '../../../shared/storage/s3-store.ts';
import { loadConfig } from '../../../shared/config/index.ts';
import type { TestS3Server } from '../../support/s3-server.ts';
import { startS3Server } from '../../support/s3-server.ts';
import { text } from './helpers.ts';

describe('createObjectStore', () => {
  let dataDir: string;
  let server: TestS3Server;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'keyward-create-'));
    server = await startS3Server({ bucket: 'made-by-create' });
  });
  afterAll(async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('when no S3 settings are given, then objects live in <dataDir>/objects', async () => {
    const store = await createObjectStore({ dataDir });
    expect(store).toBeInstanceOf(FsObjectStore);
    await store.put('jobs/1/out.json', text('{}'));
    expect((await stat(path.join(dataDir, 'objects', 'jobs', '1', 'out.json'))).size).toBe(2);
  });

  it('when S3 settings are given, then objects live in the bucket, which is created if missing', async () => {
    const store = await createObjectStore({
      dataDir,
      s3: {
        endpoint: server.endpoint,
        accessKey: server.accessKey,
        secretKey: server.secretKey,
        bucket: server.bucket,
      },
    });
    expect(store).toBeInstanceOf(S3ObjectStore);
    expect(await (store as S3ObjectStore).client.bucketExists('made-by-create')).toBe(true);
    await store.put('jobs/1/out.json', text('{}'));
    expect(await store.head('jobs/1/out.json')).toMatchObject({ size: 2 });
  });
});

describe('objectStoreConfig', () => {
  it('when S3_ENDPOINT is unset, then the filesystem under DATA_DIR is chosen', () => {
    expect(objectStoreConfig(loadConfig({ DATA_DIR: '/var/lib/keyward' }))).toEqual({
      dataDir: '/var/lib/keyward',
    });
  });

  it('when S3_ENDPOINT is set, then the S3 settings come from the one config schema, S3_BUCKET and S3_REGION with their defaults', () => {
    const env = { S3_ENDPOINT: 'http://minio:9000', S3_ACCESS_KEY: 'ak', S3_SECRET_KEY: 'sk' };
    expect(objectStoreConfig(loadConfig(env)).s3).toEqual({
      endpoint: 'http://minio:9000',
      accessKey: 'ak',
      secretKey: 'sk',
      bucket: 'keyward',
      region: 'us-east-1',
    });
  });

  it('when S3_ENDPOINT is set without credentials, then the configuration is refused at start', () => {
    expect(() => loadConfig({ S3_ENDPOINT: 'http://minio:9000' })).toThrow('S3_ACCESS_KEY');
  });

  it('when the endpoint carries a path, then the S3 store refuses it', () => {
    expect(
      () =>
        new S3ObjectStore({
          endpoint: 'http://minio:9000/bucket',
          accessKey: 'a',
          secretKey: 'b',
          bucket: 'abc',
        }),
    ).toThrow(TypeError);
  });
});
