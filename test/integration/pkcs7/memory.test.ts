import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { analyzePkcs7, convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  collect,
  makeKey,
  resolverFor,
  syntheticEnveloped,
  syntheticSigned,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';

const MiB = 1024 * 1024;
const SIZE = 200 * MiB;
/**
 * A safety limit, not a figure: the tests assert memory. Alone each takes seconds; with the forced
 * GCs on a loaded 2-core machine beside another test file, one took 63 s (3 MiB/s).
 */
const SAFETY_MS = 300_000;
/**
 * Growth of the JS heap allowed over the run; it stays flat in practice. Buffer memory is checked
 * by reachability instead: freed backing stores are released lazily by V8's sweeper, so a byte
 * count of them after a collection still wobbles by tens of MiB, while a reachable chunk is exact.
 */
const ALLOWED_HEAP_GROWTH = 16 * MiB;

// A collection before each sample measures what is live, not garbage waiting for the collector.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let ssl: OpenSslDir;
let key: TestKey;

beforeAll(() => {
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'rsa', 'rsa-2048');
});

afterAll(() => ssl.cleanup());

const used = () => {
  return process.memoryUsage().heapUsed;
};

/**
 * Wraps the input and, every 20 MiB, collects garbage and measures the growth of the heap and how
 * many earlier input chunks are still reachable (through a slice the engine kept, for instance),
 * via weak references to their backing stores.
 */
function metered(input: AsyncIterable<Buffer>): {
  input: AsyncGenerator<Buffer>;
  peak: () => number;
  retained: () => number;
  bytes: () => number;
} {
  gc();
  const base = used();
  let peak = 0;
  let retained = 0;
  let bytes = 0;
  let n = 0;
  const refs: WeakRef<ArrayBufferLike>[] = [];
  async function* wrap(): AsyncGenerator<Buffer> {
    for await (const c of input) {
      bytes += c.length;
      if (++n % 8 === 0) refs.push(new WeakRef(c.buffer));
      if (n % 320 === 0) {
        // WeakRef targets stay alive until the microtask queue drains; let it.
        await new Promise((resolve) => setImmediate(resolve));
        gc();
        peak = Math.max(peak, used() - base);
        retained = Math.max(retained, refs.filter((r) => r.deref() !== undefined).length);
      }
      yield c;
    }
  }
  return { input: wrap(), peak: () => peak, retained: () => retained, bytes: () => bytes };
}

describe('constant memory', () => {
  it(
    `when ${SIZE / MiB} MiB of BER EnvelopedData stream through convert, then memory does not grow with the input`,
    async () => {
      const m = metered(syntheticEnveloped(key, SIZE));
      const t0 = performance.now();
      const result = await convertPkcs7ToJose(m.input, {
        metadata: {},
        resolver: resolverFor([key]),
      });
      let out = 0;
      let last: Buffer = Buffer.alloc(0);
      for await (const c of result.body) {
        out += c.length;
        last = c;
      }
      const seconds = (performance.now() - t0) / 1000;
      console.log(
        `convert EnvelopedData: ${(m.bytes() / MiB).toFixed(0)} MiB in ${seconds.toFixed(2)} s (${(m.bytes() / MiB / seconds).toFixed(0)} MiB/s, generation included), heap growth ${(m.peak() / MiB).toFixed(1)} MiB, input chunks still reachable ${m.retained()}`,
      );
      expect(last.toString()).toMatch(/--\r\n$/);
      expect(out).toBeGreaterThan(SIZE);
      expect(m.peak()).toBeLessThan(ALLOWED_HEAP_GROWTH);
      expect(m.retained()).toBeLessThanOrEqual(2);
    },
    SAFETY_MS,
  );

  it(
    `when ${SIZE / MiB} MiB of BER SignedData stream through convert, then memory does not grow and the signature checks out`,
    async () => {
      const m = metered(syntheticSigned(key, SIZE));
      const t0 = performance.now();
      const result = await convertPkcs7ToJose(m.input, {
        metadata: { signerKid: 'rsa' },
        resolver: resolverFor([key]),
      });
      const jws = JSON.parse((await collect(result.body)).toString());
      const seconds = (performance.now() - t0) / 1000;
      console.log(
        `convert SignedData: ${(m.bytes() / MiB).toFixed(0)} MiB in ${seconds.toFixed(2)} s, heap growth ${(m.peak() / MiB).toFixed(1)} MiB, input chunks still reachable ${m.retained()}`,
      );
      expect(jws.signature).toMatch(/^[\w-]+$/);
      expect(m.peak()).toBeLessThan(ALLOWED_HEAP_GROWTH);
      expect(m.retained()).toBeLessThanOrEqual(2);
    },
    SAFETY_MS,
  );

  it(
    `when ${SIZE / MiB} MiB are analysed, then memory does not grow and the length is counted`,
    async () => {
      const m = metered(syntheticEnveloped(key, SIZE));
      const a = await analyzePkcs7(m.input);
      expect(a).toMatchObject({
        contentType: 'envelopedData',
        encoding: 'ber',
        contentLength: SIZE + 16,
      });
      expect(m.peak()).toBeLessThan(ALLOWED_HEAP_GROWTH);
      expect(m.retained()).toBeLessThanOrEqual(2);
    },
    SAFETY_MS,
  );
});
