/**
 * `keyward verify-manifest` and the two independent checks of docs/manifest.md (Python jwcrypto
 * and hashlib; jose and node:crypto) over a manifest of 200 generated ledger rows and their
 * output files, signed through the archive signing key's signer: all three pass the untouched
 * tree and name each tampering (an output's byte flipped, an output deleted, a file added, a
 * row edited; the CLI also a row removed and a row added).
 */
import { spawn } from 'node:child_process';
import { createHash, generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import {
  archiveManifestSigner,
  buildManifest,
  withProofs,
} from '../../../shared/manifest/manifest.ts';
import { MANIFEST_TYP } from '../../../shared/manifest/payload.ts';
import { compareKeys, type LedgerRow } from '../../../shared/manifest/row.ts';
import { prng } from '../../../support/prng.ts';

const root = new URL('../../../', import.meta.url).pathname;
const PYTHON = '/usr/bin/python3';
const PY_CHECK = join(root, 'test/fixtures/manifest-check.py');
const JS_CHECK = join(root, 'test/fixtures/manifest-check.mjs');
const PREFIX = 'converted/';

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
const cli = (args: string[]) => run(process.execPath, [join(root, 'bin/keyward.js'), ...args]);
/** The independent checks' findings, as `kind\tname` lines. */
const findingsOf = (r: Ran) => r.stdout.split('\n').filter(Boolean);

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
async function* stream<T>(items: T[]): AsyncGenerator<T> {
  for (const x of items) yield x;
}

let dir: string;
let rows: LedgerRow[];
let jws: string;
let jwksFile: string;
let jwks: { keys: JsonWebKey[] };

/** 200 rows: converted ones with one or two outputs, refused ones, keys in several scripts. */
function makeRows(outDir: string): LedgerRow[] {
  const rand = prng(38);
  const hex = () => sha256(Buffer.from(String(rand())));
  const made: LedgerRow[] = [];
  for (let i = 0; i < 200; i++) {
    // Keys whose UTF-8 and UTF-16 orders differ, and strings JSON escapes, in the leaves.
    const odd = ['ü', '\u{1F600}', '\uFF5E', '"q"', 'tab\there', '\u0001ctl', 'é\u2028'][i % 7];
    const sourceKey = `archive/${String(i).padStart(4, '0')}${i % 5 === 0 ? `-${odd}` : ''}.p7m`;
    if (i % 10 === 3) {
      made.push({
        sourceKey,
        inputSize: 1000 + i,
        inputSha256: hex(),
        form: 'enveloped-data',
        outcome: 'refused',
        problem: 'cms-key-not-imported',
        detail: `no key of the tenant opens «${odd}» (${i})`,
        outputs: [],
        keys: [],
        signers: [],
        attempts: 3,
      });
      continue;
    }
    const names = i % 4 === 0 ? [`objects/${i}.jwe`, `objects/${i}.jws`] : [`objects/${i}.jwe`];
    const outputs = names.map((name) => {
      const body = Buffer.from(
        Array.from({ length: 64 + (i % 50) }, () => Math.floor(rand() * 256)),
      );
      mkdirSync(dirname(join(outDir, name)), { recursive: true });
      writeFileSync(join(outDir, name), body);
      return { key: PREFIX + name, size: body.length, sha256: sha256(body) };
    });
    made.push({
      sourceKey,
      inputSize: 2048 + i,
      inputSha256: hex(),
      form: i % 4 === 0 ? 'signed-then-enveloped' : i % 2 ? 'enveloped-data' : 'signed-data',
      outcome: 'converted',
      outputs,
      keys: [{ kid: 'target-key', version: 1 + (i % 3) }],
      signers: i % 2 ? [] : [hex()],
      attempts: 1 + (i % 2),
    });
  }
  return made.sort((a, b) => compareKeys(a.sourceKey, b.sourceKey));
}

async function writeReport(file: string, lines: object[]) {
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keyward-manifest-'));
  rows = makeRows(join(dir, 'out'));
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  // The archive key as the tenant's key resolver hands it out.
  const signer = await archiveManifestSigner({
    archiveSigningKey: async () => ({
      kid: 'archive-key',
      version: 2,
      type: 'ec-p256',
      privateKey,
      publicKey,
    }),
  });
  const built = await buildManifest(
    stream(rows),
    {
      migration: '7b1c2a4e-0000-4000-8000-000000000038',
      tenant: 'acme',
      parameters: {
        source: 'incoming/',
        outputPrefix: PREFIX,
        targets: ['target-key'],
        signer: null,
      },
    },
    signer,
  );
  jws = built.jws;
  writeFileSync(join(dir, 'manifest.jws'), jws);
  // As `keyward keys public archive-key --format jwks` writes it.
  jwks = {
    keys: [
      { ...publicKey.export({ format: 'jwk' }), kid: 'archive-key#2', alg: 'ES256', use: 'sig' },
    ],
  };
  jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify(jwks));
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
    format: 'jwk',
  });
  writeFileSync(
    join(dir, 'other.json'),
    JSON.stringify({ keys: [{ ...other, kid: 'archive-key#2' }] }),
  );
  const lines: object[] = [];
  for await (const line of withProofs(() => stream(rows))) lines.push(line);
  await writeReport(join(dir, 'report.jsonl'), lines);
  await writeReport(join(dir, 'bare.jsonl'), rows);

  // The tampered copy: one output's byte flipped, one deleted, one file added, one row edited.
  cpSync(join(dir, 'out'), join(dir, 'tampered'), { recursive: true });
  const flipped = join(dir, 'tampered/objects/5.jwe');
  const bytes = readFileSync(flipped);
  bytes[10] ^= 1;
  writeFileSync(flipped, bytes);
  unlinkSync(join(dir, 'tampered/objects/8.jws'));
  writeFileSync(join(dir, 'tampered/objects/extra.jwe'), 'not from the migration');
  const edited = lines.map((l) => ({ ...l })) as Array<LedgerRow & { proof: object }>;
  const i = edited.findIndex((l) => l.sourceKey === 'archive/0042.p7m');
  edited[i] = { ...edited[i], attempts: 1, keys: [{ kid: 'other-key', version: 1 }] };
  await writeReport(join(dir, 'tampered.jsonl'), edited);
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const args = (report: string, outputs: string) => [
  'verify-manifest',
  join(dir, 'manifest.jws'),
  '--jwks',
  jwksFile,
  '--report',
  join(dir, report),
  '--outputs',
  join(dir, outputs),
  '--output',
  'json',
];

describe('the manifest as jose reads it', () => {
  it('when jose verifies the manifest with the JWK Set, then it is an explicitly typed JWT of the signed root and counts', async () => {
    expect(decodeProtectedHeader(jws)).toEqual({
      alg: 'ES256',
      kid: 'archive-key#2',
      typ: MANIFEST_TYP,
    });
    const { payload } = await jwtVerify(jws, createLocalJWKSet(jwks as never), {
      typ: MANIFEST_TYP,
    });
    expect(payload).toMatchObject({
      v: 1,
      tenant: 'acme',
      kid: 'archive-key#2',
      counts: { total: 200, converted: 180, refused: 20 },
      tree: { alg: 'rfc6962-sha256', size: 200 },
      parameters: { outputPrefix: PREFIX, targets: ['target-key'], signer: null },
    });
  });
});

describe('keyward verify-manifest', () => {
  it('when the report and outputs are untouched, then it exits 0 having checked every row and output', async () => {
    const r = await cli(args('report.jsonl', 'out'));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ ok: true, findings: [], rows: 200, outputs: 230 });
    const human = await cli(args('report.jsonl', 'out').slice(0, -2));
    expect(human.stdout).toMatch(/ok: the signature, every row and every output match/);
  }, 60_000);

  it('when an output is flipped, one deleted, one added and a row edited, then it exits 4 naming each', async () => {
    const r = await cli(args('tampered.jsonl', 'tampered'));
    expect(r.code).toBe(4);
    const { ok, findings } = JSON.parse(r.stdout) as {
      ok: boolean;
      findings: Array<{ kind: string; name?: string }>;
    };
    expect(ok).toBe(false);
    expect(findings.map((f) => `${f.kind} ${f.name ?? ''}`).sort()).toEqual([
      'output-added objects/extra.jwe',
      'output-changed converted/objects/5.jwe',
      'output-missing converted/objects/8.jws',
      'root ',
      'row-edited archive/0042.p7m',
    ]);
    const human = await cli(args('tampered.jsonl', 'tampered').slice(0, -2));
    expect(human.code).toBe(4);
    for (const name of [
      'archive/0042.p7m',
      'converted/objects/5.jwe',
      'converted/objects/8.jws',
      'objects/extra.jwe',
    ])
      expect(human.stdout).toContain(name);
  }, 60_000);

  it('when a row is removed and another added, then it names the gap and the added row', async () => {
    const lines = readFileSync(join(dir, 'report.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const removed = lines.splice(17, 1)[0];
    const base = lines[30];
    lines.splice(31, 0, { ...base, sourceKey: `${base.sourceKey}.copy`, proof: undefined });
    await writeReport(join(dir, 'moved.jsonl'), lines);
    const r = await cli(args('moved.jsonl', 'out'));
    expect(r.code).toBe(4);
    const kinds = (
      JSON.parse(r.stdout).findings as Array<{ kind: string; name?: string; detail: string }>
    ).map((f) => [f.kind, f.name]);
    expect(kinds).toContainEqual(['rows-removed', lines[17].sourceKey]);
    expect(kinds).toContainEqual(['row-added', `${base.sourceKey}.copy`]);
    // The removed row's output is now claimed by no row.
    expect(kinds).toContainEqual(['output-added', removed.outputs[0].key.slice(PREFIX.length)]);
    expect(kinds.filter(([k]) => k !== 'root')).toHaveLength(3);
    expect(removed.proof.index).toBe(17);
    // A signed row given twice is named too, though its proof holds.
    lines.splice(50, 0, lines[49]);
    // And a line that is no ledger row is named by its key.
    lines[60] = { ...lines[60], attempts: 'many' };
    await writeReport(join(dir, 'twice.jsonl'), lines);
    const twice = JSON.parse((await cli(args('twice.jsonl', 'out'))).stdout).findings as Array<{
      kind: string;
      name?: string;
    }>;
    expect(
      twice
        .filter((f) => f.name === lines[49].sourceKey)
        .map((f) => f.kind)
        .sort(),
    ).toEqual(['report', 'row-added']);
    expect(twice.find((f) => f.name === lines[60].sourceKey)).toMatchObject({
      kind: 'report',
      detail: expect.stringMatching(/^line 61: \/attempts /),
    });
  }, 60_000);

  it('when the JWK Set is served over HTTP, or holds another key, then the signature decides', async () => {
    const server: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/jwk-set+json');
      res.end(JSON.stringify(jwks));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const a = args('bare.jsonl', 'out');
      a[3] = `http://127.0.0.1:${port}/.well-known/jwks.json`;
      const r = await cli(a);
      expect(r.code).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    const a = args('report.jsonl', 'out');
    a[3] = join(dir, 'other.json');
    const r = await cli(a);
    expect(r.code).toBe(4);
    expect(JSON.parse(r.stdout).findings).toEqual([
      { kind: 'signature', detail: 'the signature does not verify with key archive-key#2' },
    ]);
  }, 60_000);
});

describe('the independent checks of docs/manifest.md', () => {
  const checks: Array<[string, string, string[]]> = [
    ['Python jwcrypto and hashlib', PYTHON, [PY_CHECK]],
    ['jose and node:crypto', process.execPath, [JS_CHECK]],
  ];

  it.each(checks)(
    'when %s check the untouched tree, then they find nothing',
    async (_name, cmd, script) => {
      const r = await run(cmd, [
        ...script,
        join(dir, 'manifest.jws'),
        jwksFile,
        join(dir, 'report.jsonl'),
        join(dir, 'out'),
      ]);
      expect(r.stderr).toBe('');
      expect(findingsOf(r)).toEqual([]);
      expect(r.code).toBe(0);
    },
    60_000,
  );

  it.each(checks)(
    'when %s check the tampered tree, then they name each change',
    async (_name, cmd, script) => {
      const r = await run(cmd, [
        ...script,
        join(dir, 'manifest.jws'),
        jwksFile,
        join(dir, 'tampered.jsonl'),
        join(dir, 'tampered'),
      ]);
      expect(r.code).toBe(1);
      const found = findingsOf(r);
      expect(found).toEqual(
        expect.arrayContaining([
          'row\tarchive/0042.p7m',
          'output-changed\tconverted/objects/5.jwe',
          'output-missing\tconverted/objects/8.jws',
          'output-added\tobjects/extra.jwe',
        ]),
      );
      expect(found).toHaveLength(5);
      expect(found.filter((f) => f.startsWith('root\t'))).toHaveLength(1);
    },
    60_000,
  );

  it.each(checks)(
    'when %s are given a manifest signed with another key, then they refuse it',
    async (_name, cmd, script) => {
      const r = await run(cmd, [
        ...script,
        join(dir, 'manifest.jws'),
        join(dir, 'other.json'),
        join(dir, 'report.jsonl'),
      ]);
      expect(r.code).not.toBe(0);
      expect(findingsOf(r)).toEqual([]);
    },
    60_000,
  );

  it('when docs/manifest.md shows the checks, then they are these scripts, verbatim', () => {
    const doc = readFileSync(join(root, 'docs/manifest.md'), 'utf8');
    expect(doc).toContain(readFileSync(PY_CHECK, 'utf8'));
    expect(doc).toContain(readFileSync(JS_CHECK, 'utf8'));
  });
});
