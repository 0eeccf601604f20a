/**
 * Post-quantum targets against classical ones, in the conversion engine (no HTTP: the difference
 * is in the key management and the signature, which the engine alone carries):
 *
 * 1. the mailbox mix (bench/lib/mailbox.ts) converted with an X-Wing target (HPKE-9-KE) and an
 *    ML-DSA-65 archive key, against an RSA-2048 target (RSA-OAEP-256) and an RSA-2048 archive key
 *    (RS256): files/s of each, their ratio, and the output bytes added per message;
 * 2. one EnvelopedData of BENCH_PQ_MIB MiB (default 1024, as bench/pkcs7.bench.ts) converted to
 *    HPKE-9-KE against RSA-OAEP-256: the bulk cipher is the same, so the ratio should be near 1.
 *
 * The runs alternate (classical, post-quantum, ...) BENCH_PQ_ROUNDS times (default 3) and the
 * best of each is reported. BENCH_PQ_MESSAGES sets the mailbox size (default 1000). Smoke:
 * BENCH_PQ_MESSAGES=40 BENCH_PQ_MIB=16 BENCH_PQ_ROUNDS=1 node bench/post-quantum.bench.ts
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { generateKeyMaterialSync, loadKeyObjects } from '../shared/crypto/material.ts';
import { convertPkcs7ToJose } from '../shared/pkcs7/index.ts';
import type { KeyResolver, ResolvedKey } from '../shared/pkcs7/types.ts';
import { OpenSslDir, makeKey, resolverFor } from '../support/fixtures/pkcs7.ts';
import type { TestKey } from '../support/fixtures/pkcs7.ts';
import { mailbox } from './lib/mailbox.ts';

const MESSAGES = Number(process.env.BENCH_PQ_MESSAGES ?? 1000);
const MIB = Number(process.env.BENCH_PQ_MIB ?? 1024);
const ROUNDS = Number(process.env.BENCH_PQ_ROUNDS ?? 3);

function generated(kid: string, type: 'x25519-ml-kem-768' | 'ml-dsa-65'): ResolvedKey {
  const l = loadKeyObjects(generateKeyMaterialSync(type));
  return {
    kid,
    version: 1,
    type,
    privateKey: l.privateKey,
    publicKey: l.publicKey,
    components: l.components,
  };
}

/** The tenant: the mailbox's held keys, plus the targets and archive keys by kid. */
function tenant(held: TestKey[], extra: ResolvedKey[], archive: ResolvedKey): KeyResolver {
  const base = resolverFor(held);
  return {
    ...base,
    byKid: async (kid) => extra.find((k) => k.kid === kid) ?? base.byKid(kid),
    archiveSigningKey: async () => archive,
  };
}

async function drain(body: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of body) n += c.length;
  return n;
}

async function convertFile(
  file: AsyncIterable<Uint8Array>,
  resolver: KeyResolver,
  targetKid: string,
  encrypted: boolean,
): Promise<number> {
  const r = await convertPkcs7ToJose(file, {
    metadata: encrypted ? { targetKid } : {},
    resolver,
  });
  return drain(r.body);
}

async function* fileOf(path: string): AsyncGenerator<Buffer> {
  for await (const c of createReadStream(path, { highWaterMark: 1 << 20 })) yield c as Buffer;
}

const fmt = (n: number, d = 2) => n.toFixed(d);

async function main(): Promise<void> {
  const ssl = new OpenSslDir();
  try {
    const box = await mailbox(MESSAGES, 1, (l) => console.log(`  ${l}`));
    const rsaTarget = makeKey(ssl, 'bench-rsa-target', 'rsa-2048');
    const rsaArchive = makeKey(ssl, 'bench-rsa-archive', 'rsa-2048');
    const xwing = generated('bench-xwing', 'x25519-ml-kem-768');
    const mlDsa = generated('bench-ml-dsa', 'ml-dsa-65');
    const held = [box.keys.recipient];
    const asResolved = (k: TestKey): ResolvedKey => ({
      kid: k.kid,
      version: 1,
      type: k.type,
      privateKey: k.privateKey,
      certificate: k.certificate,
    });
    const classical = {
      name: 'classical (RSA-OAEP-256 + RS256)',
      resolver: tenant(held, [asResolved(rsaTarget)], asResolved(rsaArchive)),
      target: rsaTarget.kid,
    };
    const pq = {
      name: 'post-quantum (HPKE-9-KE + ML-DSA-65)',
      resolver: tenant(held, [xwing], mlDsa),
      target: xwing.kid,
    };
    const files = box.messages.map((m) => ({
      data: readFileSync(`${box.mailDir}/${m.name}`),
      encrypted: m.kind !== 'signed',
    }));
    console.log(
      `post-quantum: ${files.length} messages, ${MIB} MiB EnvelopedData, ${ROUNDS} round(s), Node ${process.version}`,
    );
    const best = new Map<string, { seconds: number; bytes: number }>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of [classical, pq]) {
        const t0 = performance.now();
        let bytes = 0;
        for (const f of files)
          bytes += await convertFile(
            (async function* () {
              yield f.data;
            })(),
            side.resolver,
            side.target,
            f.encrypted,
          );
        const seconds = (performance.now() - t0) / 1000;
        const prev = best.get(side.name);
        if (!prev || seconds < prev.seconds) best.set(side.name, { seconds, bytes });
      }
    }
    const c = best.get(classical.name)!;
    const p = best.get(pq.name)!;
    for (const [name, r] of best)
      console.log(
        `  mailbox ${name}: ${fmt(files.length / r.seconds, 1)} files/s, ${r.bytes} bytes out`,
      );
    console.log(
      `  mailbox ratio post-quantum/classical files/s: ${fmt(c.seconds / p.seconds, 3)}; size overhead ${fmt((p.bytes - c.bytes) / files.length, 0)} bytes per message (${fmt((100 * (p.bytes - c.bytes)) / c.bytes, 1)} %)`,
    );

    // The bulk case: one large EnvelopedData, to the RSA recipient the tenant holds.
    writeFileSync(ssl.path('big.bin'), Buffer.alloc(0));
    const chunk = randomBytes(1 << 20);
    for (let i = 0; i < MIB; i++) writeFileSync(ssl.path('big.bin'), chunk, { flag: 'a' });
    ssl.run([
      'cms',
      '-encrypt',
      '-binary',
      '-aes256',
      '-stream',
      '-outform',
      'DER',
      '-in',
      ssl.path('big.bin'),
      '-out',
      ssl.path('big.p7m'),
      box.keys.recipient.certFile,
    ]);
    rmSync(ssl.path('big.bin'));
    const bigBytes = statSync(ssl.path('big.p7m')).size;
    const bulk = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of [classical, pq]) {
        const t0 = performance.now();
        await convertFile(fileOf(ssl.path('big.p7m')), side.resolver, side.target, true);
        const s = (performance.now() - t0) / 1000;
        if (!bulk.has(side.name) || s < bulk.get(side.name)!) bulk.set(side.name, s);
      }
    }
    for (const [name, s] of bulk)
      console.log(
        `  ${MIB} MiB EnvelopedData ${name}: ${fmt(s)} s, ${fmt(bigBytes / 2 ** 20 / s, 0)} MiB/s`,
      );
    console.log(
      `  ${MIB} MiB ratio HPKE-9-KE/RSA-OAEP-256 time: ${fmt(bulk.get(pq.name)! / bulk.get(classical.name)!, 3)}`,
    );
  } finally {
    ssl.cleanup();
  }
}

await main();
