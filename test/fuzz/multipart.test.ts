/**
 * Mutation fuzzing of the one multipart scanner (shared/mime/multipart.ts) through each layer on
 * it, called as functions (no HTTP, no database): the multipart/form-data reader
 * (api/http/streaming-multipart.ts), the small-form reader on it (api/http/multipart.ts) and the
 * multipart/mixed reader of the stream endpoints (shared/jose/mixed-reader.ts) get real bodies,
 * mutated, truncated and cut into random chunks, and requests that abort mid-body, for a bounded
 * time each (FUZZ_SECONDS, default 2; FUZZ_SEED replays a run). Every outcome must be a parsed form or an AppError below 500, within a
 * deadline, with no unhandled 'error' event (jest fails the test on one). Unmutated forms must
 * come back byte for byte, whatever the chunking.
 */
import { Readable } from 'node:stream';
import type { Request } from 'express';
import { AppError } from '../../shared/errors/index.ts';
import { streamMultipart } from '../../api/http/streaming-multipart.ts';
import { readSmallMultipart } from '../../api/http/multipart.ts';
import { MixedReader, mixedBoundary } from '../../shared/jose/mixed-reader.ts';
import { prng } from '../../support/prng.ts';
import { mutateBytes, type Mutant } from '../support/mutate.ts';

const SECONDS = Number(process.env.FUZZ_SECONDS ?? 2);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const DEADLINE_MS = 2000;
const rand = prng(SEED);
const int = (n: number) => Math.floor(rand() * n);

interface Part {
  name: string;
  filename?: string;
  data: Buffer;
}
interface Form {
  boundary: string;
  parts: Part[];
  body: Buffer;
}

/** Bytes that look like the start of a delimiter, so split and near-miss boundaries are common. */
function trickyBytes(boundary: string, n: number): Buffer {
  const pieces: Buffer[] = [];
  let size = 0;
  while (size < n) {
    const k = int(5);
    const p =
      k === 0
        ? Buffer.from(`\r\n--${boundary.slice(0, int(boundary.length))}`)
        : k === 1
          ? Buffer.from('\r\n')
          : k === 2
            ? Buffer.from('--')
            : Buffer.from(Array.from({ length: 1 + int(64) }, () => int(256)));
    pieces.push(p);
    size += p.length;
  }
  return Buffer.concat(pieces).subarray(0, n);
}

/** A well-formed form of 1..4 parts (fields and files). */
function makeForm(): Form {
  const boundary = `b${int(1e9).toString(36)}${['', '-x', "'()+_,-./:=?"][int(3)]}`;
  const parts: Part[] = Array.from({ length: 1 + int(4) }, (_, i) => {
    const file = int(2) === 0;
    const data = file
      ? trickyBytes(boundary, int(3000))
      : Buffer.from(`value ${i} ${'v'.repeat(int(200))}`);
    return {
      name: ['keystore', 'file', 'password', 'kid', 'metadata', `p${i}`][int(6)],
      filename: file ? `f${i}.bin` : undefined,
      data,
    };
  });
  const chunks: Buffer[] = [Buffer.from(int(4) === 0 ? 'a preamble\r\n' : '')];
  for (const p of parts) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}\r\n` +
          `${p.filename ? 'Content-Type: application/octet-stream\r\n' : ''}\r\n`,
      ),
      p.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { boundary, parts, body: Buffer.concat(chunks) };
}

/** One mutation of a form's bytes, with multipart delimiters among the inserts. */
const mutate = (b: Buffer): Mutant =>
  mutateBytes(rand, b, {
    inserts: [
      Buffer.from('\r\n'),
      Buffer.from('\r\n\r\n'),
      Buffer.from(':'),
      Buffer.alloc(1),
      Buffer.alloc(20_000, 0x41),
      Buffer.from('Content-Disposition: form-data; name="x"\r\n'),
    ],
  });

/**
 * A stand-in for the Express request: the bytes pushed in random chunks on later ticks, then
 * either the end or, when `abort`, what Node does to a request whose client went away.
 */
function fakeRequest(body: Buffer, contentType: string, abort: boolean): Request {
  const r = new Readable({ read() {} }) as Readable & Record<string, unknown>;
  r.headers = { 'content-type': contentType, 'content-length': String(body.length) };
  r.complete = false;
  r.is = (type: string | string[]) =>
    contentType.toLowerCase().startsWith('multipart/form-data') ? type : false;
  r.res = { headersSent: false, setHeader() {} };
  const stopAt = abort ? int(body.length + 1) : body.length;
  let at = 0;
  const feed = () => {
    if (r.destroyed) return;
    if (at >= stopAt) {
      if (abort) {
        // node:http: destroy(connResetException('aborted')), an 'error' only for a listener.
        const err = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
        r.destroy(r.listenerCount('error') > 0 ? err : undefined);
      } else {
        r.complete = true;
        r.push(null);
      }
      return;
    }
    const n = 1 + int(int(2) ? 16 : 4096);
    r.push(body.subarray(at, Math.min(stopAt, at + n)));
    at += n;
    setImmediate(feed);
  };
  setImmediate(feed);
  return r as unknown as Request;
}

type Outcome = { parts: Part[] } | { error: unknown } | { hung: true };

async function withDeadline(p: Promise<{ parts: Part[] }>): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<Outcome>(
    (resolve) => (timer = setTimeout(() => resolve({ hung: true }), DEADLINE_MS)),
  );
  try {
    return await Promise.race([p.catch((error: unknown) => ({ error })), hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads every part with the streaming reader, consuming, skipping or text()-ing file parts at random. */
async function readStreaming(req: Request): Promise<{ parts: Part[] }> {
  const form = streamMultipart(req, { maxParts: 8, maxFieldBytes: 64 * 1024 });
  const parts: Part[] = [];
  for (let p = await form.next(); p; p = await form.next()) {
    const how = p.filename === undefined ? 0 : int(3);
    if (how === 0) {
      const text = await p.text(1024 * 1024);
      // A file read as text is lossy UTF-8: only fields are compared.
      parts.push({
        name: p.name,
        filename: p.filename,
        data: p.filename === undefined ? Buffer.from(text, 'utf8') : Buffer.alloc(0),
      });
    } else if (how === 1) {
      const chunks: Buffer[] = [];
      for await (const c of p.body) chunks.push(Buffer.from(c));
      parts.push({ name: p.name, filename: p.filename, data: Buffer.concat(chunks) });
    } else parts.push({ name: p.name, filename: p.filename, data: Buffer.alloc(0) }); // skipped: drained by next()
  }
  return { parts };
}

/** A multipart/mixed body as convert writes it: no preamble, typed parts, a closing delimiter. */
function makeMixed(): Form {
  const boundary = `----service-${int(1e9).toString(36)}`;
  const types = ['application/jose+json', 'application/octet-stream'];
  const parts: Part[] = Array.from({ length: 1 + int(3) }, (_, i) => ({
    name: types[i % 2],
    data: trickyBytes(boundary, int(3000)),
  }));
  const chunks: Buffer[] = [];
  for (const p of parts)
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Type: ${p.name}\r\n\r\n`),
      p.data,
      Buffer.from('\r\n'),
    );
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { boundary, parts, body: Buffer.concat(chunks) };
}

/** The bytes as an input stream in random chunks, on later ticks, maybe failing part way. */
async function* chunked(body: Buffer, abort: boolean): AsyncGenerator<Buffer> {
  const stopAt = abort ? int(body.length + 1) : body.length;
  for (let at = 0; at < stopAt;) {
    await new Promise((r) => setImmediate(r));
    const n = 1 + int(int(2) ? 16 : 4096);
    yield body.subarray(at, Math.min(stopAt, at + n));
    at += n;
  }
  if (abort) throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
}

/** Reads every part with the multipart/mixed reader, consuming, skipping or reading whole at random. */
async function readMixed(
  body: AsyncIterable<Buffer>,
  boundary: string,
): Promise<{ parts: Part[] }> {
  const reader = new MixedReader(body, boundary);
  const parts: Part[] = [];
  try {
    for (;;) {
      const how = int(3);
      if (how === 0) {
        const p = await reader.nextSmall(64 * 1024);
        if (!p) break;
        parts.push({ name: p.contentType, data: p.data });
        continue;
      }
      const p = await reader.next();
      if (!p) break;
      const chunks: Buffer[] = [];
      if (how === 1) for await (const c of p.body) chunks.push(Buffer.from(c));
      parts.push({ name: p.contentType, data: Buffer.concat(chunks) });
    }
  } catch (err) {
    await reader.close();
    throw err;
  }
  return { parts };
}

async function readSmall(req: Request): Promise<{ parts: Part[] }> {
  const form = await readSmallMultipart(req, 8 * 1024);
  const parts: Part[] = [];
  for (const name of Object.keys(form.fields))
    parts.push({ name, data: Buffer.from(form.fields[name], 'utf8') });
  for (const name of Object.keys(form.files))
    parts.push({ name, filename: form.files[name].filename, data: form.files[name].data });
  return { parts };
}

/** Runs a reader for SECONDS over mutated forms and returns what went wrong. */
async function fuzz(
  reader: (req: Request) => Promise<{ parts: Part[] }>,
  exact: (f: Form, got: Part[]) => string | null,
): Promise<{ failures: string[]; tally: Record<string, number> }> {
  const failures: string[] = [];
  const tally: Record<string, number> = {};
  const stopAt = Date.now() + SECONDS * 1000;
  while (Date.now() < stopAt && failures.length < 5) {
    const form = makeForm();
    const { data, how } = mutate(form.body);
    const abort = int(8) === 0;
    const type =
      int(10) === 0
        ? [
            'multipart/form-data',
            'multipart/form-data; boundary=',
            `multipart/form-data; boundary="${form.boundary}x"`,
          ][int(3)]
        : `multipart/form-data; boundary=${form.boundary}`;
    const outcome = await withDeadline((async () => reader(fakeRequest(data, type, abort)))());
    let key: string;
    if ('hung' in outcome) key = 'hung';
    else if ('error' in outcome)
      key =
        outcome.error instanceof AppError
          ? String(outcome.error.status)
          : `thrown ${(outcome.error as Error)?.message}`;
    else key = 'parsed';
    tally[key] = (tally[key] ?? 0) + 1;
    const label = `${how}${abort ? ', aborted' : ''}, type ${type}`;
    if (key === 'hung' || key.startsWith('thrown') || Number(key) >= 500)
      failures.push(`${label} → ${key}`);
    if (how === 'unmutated' && !abort && type.endsWith(form.boundary) && 'parts' in outcome) {
      const wrong = exact(form, outcome.parts);
      if (wrong) failures.push(`${label} → ${wrong}`);
    }
  }
  return { failures, tally };
}

describe(`fuzzing the multipart readers as functions for ${SECONDS} s each (FUZZ_SEED=${SEED})`, () => {
  it(
    'when the streaming reader gets mutated, truncated, rechunked and aborted forms, then a form or a 4xx AppError, never a crash or a hang, and unmutated forms come back exactly',
    async () => {
      const { failures, tally } = await fuzz(readStreaming, (form, got) => {
        for (let i = 0; i < form.parts.length; i++) {
          const want = form.parts[i];
          const have = got[i];
          if (!have || have.name !== want.name)
            return `part ${i}: name ${have?.name} instead of ${want.name}`;
          // An empty one was skipped or read as text, not compared.
          if (have.data.length > 0 && !have.data.equals(want.data)) {
            return `part ${i} (${want.name}): ${have.data.length} bytes differ from the ${want.data.length} sent`;
          }
        }
        return got.length === form.parts.length
          ? null
          : `${got.length} parts instead of ${form.parts.length}`;
      });
      console.log(`streaming multipart fuzz, seed ${SEED}: ${JSON.stringify(tally)}`);
      expect(failures).toEqual([]);
      expect(tally.parsed).toBeGreaterThan(0);
    },
    (SECONDS + 30) * 1000,
  );

  it(
    'when the small-form reader gets mutated, truncated, rechunked and aborted forms, then a form or a 4xx AppError, never a crash or a hang',
    async () => {
      const { failures, tally } = await fuzz(readSmall, (form, got) => {
        // Files over the 8 KiB cap are a 413; the others come back whole, the last of a repeated name winning.
        const byName = new Map(form.parts.map((p) => [p.name, p]));
        for (const [name, want] of byName) {
          const have = got.find(
            (p) => p.name === name && (p.filename === undefined) === (want.filename === undefined),
          );
          if (
            !have ||
            !have.data.equals(
              want.filename === undefined ? Buffer.from(want.data.toString('utf8')) : want.data,
            )
          )
            return `part ${name} differs`;
        }
        return null;
      });
      console.log(`small multipart fuzz, seed ${SEED}: ${JSON.stringify(tally)}`);
      expect(failures).toEqual([]);
      expect(tally.parsed).toBeGreaterThan(0);
    },
    (SECONDS + 30) * 1000,
  );

  it(
    'when the multipart/mixed reader gets mutated, truncated, rechunked and failing bodies, then the parts or a 4xx AppError, never a crash or a hang, and unmutated bodies come back exactly',
    async () => {
      const tally: Record<string, number> = {};
      const failures: string[] = [];
      const stopAt = Date.now() + SECONDS * 1000;
      while (Date.now() < stopAt && failures.length < 5) {
        const form = makeMixed();
        const { data, how } = mutate(form.body);
        const abort = int(8) === 0;
        const outcome = await withDeadline(readMixed(chunked(data, abort), form.boundary));
        const key =
          'hung' in outcome
            ? 'hung'
            : 'error' in outcome
              ? outcome.error instanceof AppError
                ? String(outcome.error.status)
                : `thrown ${(outcome.error as Error)?.message}`
              : 'parsed';
        tally[key] = (tally[key] ?? 0) + 1;
        const label = `${how}${abort ? ', aborted' : ''}`;
        // A failing input is the input's own error (the route answers it as an aborted request).
        if (key === 'hung' || (key.startsWith('thrown') && !(abort && key === 'thrown aborted')))
          failures.push(`${label} → ${key}`);
        if (Number(key) >= 500) failures.push(`${label} → ${key}`);
        if (how === 'unmutated' && !abort && 'parts' in outcome) {
          const got = outcome.parts;
          if (got.length !== form.parts.length)
            failures.push(`${label} → ${got.length} parts instead of ${form.parts.length}`);
          got.forEach((p, i) => {
            if (p.name !== form.parts[i].name) failures.push(`${label} → part ${i} type ${p.name}`);
            else if (p.data.length > 0 && !p.data.equals(form.parts[i].data))
              failures.push(`${label} → part ${i} bytes differ`);
          });
        }
      }
      console.log(`multipart/mixed fuzz, seed ${SEED}: ${JSON.stringify(tally)}`);
      expect(failures).toEqual([]);
      expect(tally.parsed).toBeGreaterThan(0);
    },
    (SECONDS + 30) * 1000,
  );

  it('when a convert output reaches both layers, then the mixed one returns its typed parts and the form-data one skips them (no form-data disposition) to the same closing delimiter', async () => {
    const form = makeMixed();
    const type = `multipart/mixed; boundary="${form.boundary}"`;
    expect(mixedBoundary(type)).toBe(form.boundary);
    const mixed = await readMixed(chunked(form.body, false), form.boundary);
    // The same bytes as a form-data request: no part has a form-data disposition, so none is a field.
    const req = fakeRequest(form.body, `multipart/form-data; boundary=${form.boundary}`, false);
    const stream = streamMultipart(req);
    expect(await stream.next()).toBeNull();
    expect(mixed.parts.map((p) => p.name)).toEqual(form.parts.map((p) => p.name));
  });

  it('when a multipart/mixed body has a preamble or a long epilogue, then 400 jose-malformed (convert writes neither)', async () => {
    const form = makeMixed();
    for (const body of [
      Buffer.concat([Buffer.from('a preamble\r\n'), form.body]),
      Buffer.concat([form.body, Buffer.alloc(2048, 0x41)]),
    ]) {
      const outcome = await withDeadline(readMixed(chunked(body, false), form.boundary));
      expect('error' in outcome && outcome.error instanceof AppError && outcome.error.slug).toBe(
        'jose-malformed',
      );
    }
  });

  it('when the client is gone before the small-form reader starts, then it rejects with 400 instead of waiting forever', async () => {
    const req = fakeRequest(Buffer.from('--XB\r\n'), 'multipart/form-data; boundary=XB', false);
    (req as unknown as Readable).destroy();
    const outcome = await withDeadline(readSmall(req));
    expect('error' in outcome && outcome.error instanceof AppError && outcome.error.status).toBe(
      400,
    );
  });
});
