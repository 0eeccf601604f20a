/**
 * Crypto and audit commands (a workload's login, audience service-core): encrypt, decrypt, sign,
 * verify, data-key, re-encrypt, mac, random from files or stdin; audit events and verify. Data
 * goes to the service in base64 (the JSON API's form); results go to --out or stdout.
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import type { Body, Query } from '../api-client.ts';
import {
  EXIT,
  UsageError,
  allowed,
  contextOf,
  int,
  print,
  readInput,
  record,
  requireNode,
  str,
  wantsJson,
  writeOutput,
  type Command,
  type Invocation,
  type OptionDef,
  localTenantError,
} from '../command.ts';
import { PAGE_OPTIONS, printPage } from './admin.ts';
import { connect } from './session.ts';
import {
  bodyLine,
  keyLine,
  openEnvelope,
  openHeader,
  rewrapEnvelope,
  sealEnvelope,
} from '../envelope.ts';

type KeySpec = Exclude<Body<'generateDataKey'>, { items: unknown }>['keySpec'];

const IN: OptionDef = { type: 'string', value: '<file|->', help: 'input file; - or none: stdin' };
const OUT: OptionDef = {
  type: 'string',
  value: '<file|->',
  help: 'output file; - or none: stdout',
};
const CONTEXT: OptionDef = {
  type: 'string',
  multiple: true,
  value: '<key=value>',
  help: 'encryption context member; decryption needs the same ones',
};
const b64 = (data: Uint8Array) => Buffer.from(data).toString('base64');

/**
 * Largest file `encrypt` sends through the JSON API: its base64 (4/3 larger) and the request's
 * other members must fit the service's JSON_LIMIT_BYTES (64 KiB by default; beyond, 413).
 */
export const JSON_FORM_MAX = 32 * 1024;

/** The first `max` bytes of --in (or stdin), and the rest of the input when there is more (else null). */
async function headOf(
  file: string | undefined,
  max: number,
): Promise<{ head: Buffer; rest: AsyncIterable<Buffer> | null }> {
  if (file !== undefined && file !== '-') {
    if (statSync(file).size <= max) return { head: readFileSync(file), rest: null };
    return { head: Buffer.alloc(0), rest: createReadStream(file) };
  }
  const it = (process.stdin as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let size = 0;
  while (size <= max) {
    const next = await it.next();
    if (next.done) return { head: Buffer.concat(chunks), rest: null };
    chunks.push(next.value);
    size += next.value.length;
  }
  async function* more() {
    for (;;) {
      const next = await it.next();
      if (next.done) return;
      yield next.value;
    }
  }
  return { head: Buffer.concat(chunks), rest: more() };
}

/** All the bytes of a stream. */
async function collect(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of source) chunks.push(c);
  return Buffer.concat(chunks);
}

/** `head` then `rest`, as one stream of bytes. */
async function* concat(head: Buffer, rest: AsyncIterable<Buffer> | null): AsyncGenerator<Buffer> {
  if (head.length) yield head;
  if (rest) yield* rest;
}

/** The bytes of --in, or stdin for `-` or no option, as a stream. */
function inputStream(file: string | undefined): AsyncIterable<Buffer> {
  return file === undefined || file === '-'
    ? (process.stdin as AsyncIterable<Buffer>)
    : createReadStream(file);
}

/** Writes `payload` to --out, or with --output json the whole answer. */
async function emit(
  inv: Invocation,
  answer: unknown,
  payload: string | Uint8Array,
  secret = false,
): Promise<number> {
  const out = str(inv.values, 'out');
  if (wantsJson(inv)) await writeOutput(inv, out, `${JSON.stringify(answer, null, 2)}\n`, secret);
  else await writeOutput(inv, out, payload, secret);
  return EXIT.ok;
}

/** An envelope is binary: with --output json, the JSON goes to stdout and the envelope to --out. */
function envelopeOut(inv: Invocation): string | undefined {
  const out = str(inv.values, 'out');
  if (wantsJson(inv) && (out === undefined || out === '-'))
    throw new UsageError('an envelope is binary: give --out <file> with --output json');
  return out;
}

/** A verdict: printed, and exit 4 when false so a script can branch on it. */
function verdict(inv: Invocation, answer: { valid: boolean }, what: string): number {
  print(inv, answer, () => `${answer.valid ? 'valid' : 'INVALID'} ${what}\n`);
  return answer.valid ? EXIT.ok : EXIT.invalid;
}

export const cryptoCommands: Command[] = [
  {
    name: 'encrypt',
    summary: 'Encrypt a file of any size under the key’s newest version',
    args: ['<kid>'],
    details: [
      `Up to ${JSON_FORM_MAX / 1024} KiB (the JSON form: its base64 must fit the service's JSON_LIMIT_BYTES, 64 KiB`,
      'by default, beyond which the service answers 413) the file goes to /api/v3/crypto/encrypt and',
      'the result is a compact JWE (needs crypto.encrypt). A larger file, of any size, is sealed in a',
      'data-key envelope: a data key from generate-data-key (needs crypto.generate-data-key), wrapped',
      'by the service under the key and bound to the --context, encrypts the file here with AES-256-GCM',
      'in 64 KiB chunks (keyward-envelope/1; the clear data key is never written). `keyward decrypt`',
      'reads both forms; --form picks one.',
    ].join('\n'),
    options: {
      in: IN,
      out: OUT,
      context: CONTEXT,
      form: {
        type: 'string',
        value: 'auto|json|envelope',
        help: `auto (default): json up to ${JSON_FORM_MAX / 1024} KiB, envelope beyond`,
      },
    },
    async run(inv) {
      const form = str(inv.values, 'form') ?? 'auto';
      if (form !== 'auto' && form !== 'json' && form !== 'envelope')
        throw new UsageError(`--form must be auto, json or envelope, got ${form}`);
      const context = contextOf(inv.values, 'context');
      const { head, rest } = await headOf(str(inv.values, 'in'), JSON_FORM_MAX);
      if (form === 'json' || (form === 'auto' && rest === null)) {
        const data = b64(rest ? await collect(rest) : head);
        const answer = await connect(inv).api.encrypt({
          body: { kid: inv.args[0], data, context },
        });
        return emit(inv, answer, `${answer.ciphertext}\n`);
      }
      const out = envelopeOut(inv);
      const dk = await connect(inv).api.generateDataKey({
        body: { kid: inv.args[0], keySpec: 'AES_256', context },
      });
      const key = Buffer.from(dk.plaintext, 'base64');
      try {
        const line = keyLine({ kid: dk.kid, version: dk.version, wrappedKey: dk.ciphertext });
        await writeOutput(inv, out, sealEnvelope(concat(head, rest), key, line, bodyLine()));
      } finally {
        key.fill(0);
      }
      if (wantsJson(inv))
        inv.stdout.write(
          `${JSON.stringify({ kid: dk.kid, version: dk.version, form: 'envelope', out }, null, 2)}\n`,
        );
      return EXIT.ok;
    },
  },
  {
    name: 'decrypt',
    summary: 'Decrypt what `keyward encrypt` wrote (the key and version are in it)',
    details:
      'A compact JWE goes to /api/v3/crypto/decrypt (needs crypto.decrypt); a keyward-envelope/1 file has its data key unwrapped there and is decrypted here, chunk by chunk, in constant memory. The same --context as at encryption is needed. With --out, the file appears only once everything decrypted.',
    options: { in: IN, out: OUT, context: CONTEXT },
    async run(inv) {
      const opened = await openHeader(inputStream(str(inv.values, 'in')));
      const context = contextOf(inv.values, 'context');
      if (opened.header === null) {
        const ciphertext = (await collect(opened.rest)).toString('utf8').trim();
        const answer = await connect(inv).api.decrypt({ body: { ciphertext, context } });
        return emit(inv, answer, Buffer.from(answer.data, 'base64'), true);
      }
      const { header, aad, rest } = opened;
      const unwrapped = await connect(inv).api.decrypt({
        body: { ciphertext: header.wrappedKey, context },
      });
      const key = Buffer.from(unwrapped.data, 'base64');
      try {
        await writeOutput(inv, str(inv.values, 'out'), openEnvelope(rest, key, header, aad), true);
      } finally {
        key.fill(0);
      }
      return EXIT.ok;
    },
  },
  {
    name: 're-encrypt',
    summary:
      'Re-encrypt what `keyward encrypt` wrote under the newest version, or another key, without the plaintext leaving the service',
    details: [
      'A compact JWE goes to /api/v3/crypto/re-encrypt whole. An envelope (a file over 32 KiB) has only',
      'its wrapped data key re-encrypted there, and its chunks are copied as they are, in constant',
      'memory, whatever the size. An envelope written before keyward-envelope/2 binds its chunks to',
      'its whole header: its data key is unwrapped (needs crypto.decrypt) and the chunks sealed again',
      'here, in format 2. With --out, the file appears only once complete.',
    ].join('\n'),
    options: {
      in: IN,
      out: OUT,
      context: CONTEXT,
      'target-kid': {
        type: 'string',
        value: '<kid>',
        help: 'the key to re-encrypt to (default: the same key)',
      },
      'target-context': {
        ...CONTEXT,
        help: 'the context of the new ciphertext (default: the same as --context)',
      },
    },
    async run(inv) {
      const opened = await openHeader(inputStream(str(inv.values, 'in')));
      const context = contextOf(inv.values, 'context');
      const rewrap = (ciphertext: string) =>
        connect(inv).api.reEncrypt({
          body: {
            ciphertext,
            context,
            targetKid: str(inv.values, 'target-kid'),
            targetContext: contextOf(inv.values, 'target-context'),
          },
        });
      if (opened.header === null) {
        const answer = await rewrap((await collect(opened.rest)).toString('utf8').trim());
        return emit(inv, answer, `${answer.ciphertext}\n`);
      }
      // An envelope: the service re-wraps its data key (a small JWE, whatever the file's size).
      const out = envelopeOut(inv);
      const { header, format, aad, rest } = opened;
      const answer = await rewrap(header.wrappedKey);
      const line = keyLine({
        kid: answer.kid,
        version: answer.version,
        wrappedKey: answer.ciphertext,
      });
      if (format === 2) await writeOutput(inv, out, rewrapEnvelope(line, aad, rest));
      else {
        // Format 1 binds every chunk to its whole header, the wrapped key included: the chunks
        // are sealed again, under the same data key with a fresh nonce prefix, in format 2.
        const unwrapped = await connect(inv).api.decrypt({
          body: { ciphertext: header.wrappedKey, context },
        });
        const key = Buffer.from(unwrapped.data, 'base64');
        try {
          const clear = openEnvelope(rest, key, header, aad);
          await writeOutput(inv, out, sealEnvelope(clear, key, line, bodyLine()));
        } finally {
          key.fill(0);
        }
      }
      if (wantsJson(inv))
        inv.stdout.write(
          `${JSON.stringify({ ...answer, ciphertext: undefined, form: 'envelope', out }, null, 2)}\n`,
        );
      return EXIT.ok;
    },
  },
  {
    name: 'sign',
    summary:
      'Sign a file (or a precomputed digest with --digest); the signature is written in base64',
    args: ['<kid>'],
    options: {
      in: IN,
      out: OUT,
      digest: { type: 'boolean', help: 'the input is a digest, not the message' },
      algorithm: { type: 'string', value: '<alg>', help: "JOSE algorithm (default: the key's)" },
    },
    async run(inv) {
      const input = b64(await readInput(str(inv.values, 'in')));
      const answer = await connect(inv).api.sign({
        body: {
          kid: inv.args[0],
          ...(inv.values.digest ? { digest: input } : { data: input }),
          algorithm: str(inv.values, 'algorithm'),
        },
      });
      return emit(inv, answer, `${answer.signature}\n`);
    },
  },
  {
    name: 'verify',
    summary:
      'Verify a signature of a file with any retained version; exit 4 when it does not verify',
    args: ['<kid> | <jws>'],
    details:
      'verify <kid> --signature <file> asks the service. verify <jws> --content <file> --cert <pem> checks a detached JWS (a conversion result) locally with jose, without a login.',
    options: {
      in: IN,
      content: {
        type: 'string',
        value: '<file>',
        help: 'local form: the signed content of the JWS (<name>.content of a migration)',
      },
      cert: {
        type: 'string',
        value: '<pem>',
        help: "local form: the signer's certificate or public key (PEM or JWK)",
      },
      signature: {
        type: 'string',
        value: '<file>',
        help: 'the base64 signature, as sign wrote it (required)',
      },
      digest: { type: 'boolean', help: 'the input is a digest' },
      algorithm: { type: 'string', value: '<alg>', help: 'JOSE algorithm' },
    },
    async run(inv) {
      if (str(inv.values, 'cert') || str(inv.values, 'content')) {
        if (inv.values.tenant !== undefined) throw localTenantError('verify --cert');
        // Loaded only here: jose and the keystore reader are the slowest imports of the CLI.
        requireNode(24, 'keyward verify --cert');
        return (await import('./local-jose.ts')).verifyLocally(inv);
      }
      const sigFile = str(inv.values, 'signature');
      if (!sigFile) throw new UsageError('verify needs --signature <file>');
      const signature = readFileSync(sigFile, 'utf8').trim();
      const input = b64(await readInput(str(inv.values, 'in')));
      const answer = await connect(inv).api.verify({
        body: {
          kid: inv.args[0],
          signature,
          ...(inv.values.digest ? { digest: input } : { data: input }),
          algorithm: str(inv.values, 'algorithm'),
        },
      });
      return verdict(
        inv,
        answer,
        `signature (key ${answer.kid}${answer.version ? ` version ${answer.version}` : ''})`,
      );
    },
  },
  {
    name: 'data-key',
    summary:
      'A fresh data key for envelope encryption: in clear (base64) and wrapped as a JWE under the key',
    args: ['<kid>'],
    details:
      'Encrypt your data locally with the clear key, keep only the wrapped one next to the data, and forget the clear one; `keyward decrypt` of the wrapped key gives it back.',
    options: {
      'key-spec': {
        type: 'string',
        value: 'AES_256|AES_128',
        help: "the data key's size (default AES_256)",
      },
      context: CONTEXT,
      'no-plaintext': {
        type: 'boolean',
        help: 'only the wrapped key (generate-data-key-without-plaintext)',
      },
      out: { ...OUT, help: 'write the wrapped key (JWE) here instead of printing it' },
    },
    async run(inv) {
      const body = {
        kid: inv.args[0],
        keySpec: allowed<KeySpec>(inv.values, 'key-spec') ?? 'AES_256',
        context: contextOf(inv.values, 'context'),
      };
      const c = connect(inv);
      const answer = inv.values['no-plaintext']
        ? await c.api.generateDataKeyWithoutPlaintext({ body })
        : await c.api.generateDataKey({ body });
      const out = str(inv.values, 'out');
      if (out && out !== '-' && !wantsJson(inv)) {
        await writeOutput(inv, out, `${answer.ciphertext}\n`);
        const shown = { ...answer, ciphertext: `(written to ${out})` };
        inv.stdout.write(record(shown));
        return EXIT.ok;
      }
      print(inv, answer, () => record(answer as unknown as Record<string, unknown>));
      return EXIT.ok;
    },
  },
  {
    name: 'mac',
    summary: 'HMAC of a file with an HMAC key',
    subcommands: [
      {
        name: 'generate',
        summary: 'Compute the MAC of a file (written in base64)',
        args: ['<kid>'],
        options: { in: IN, out: OUT },
        async run(inv) {
          const answer = await connect(inv).api.generateMac({
            body: { kid: inv.args[0], data: b64(await readInput(str(inv.values, 'in'))) },
          });
          return emit(inv, answer, `${answer.mac}\n`);
        },
      },
      {
        name: 'verify',
        summary:
          'Verify the MAC of a file with any retained version; exit 4 when it does not verify',
        args: ['<kid>'],
        options: {
          in: IN,
          mac: { type: 'string', value: '<base64>', help: 'the MAC' },
          'mac-file': {
            type: 'string',
            value: '<file>',
            help: 'the MAC, from a file as mac generate wrote it',
          },
        },
        async run(inv) {
          const mac =
            str(inv.values, 'mac') ??
            (str(inv.values, 'mac-file')
              ? readFileSync(str(inv.values, 'mac-file')!, 'utf8').trim()
              : undefined);
          if (!mac) throw new UsageError('mac verify needs --mac or --mac-file');
          const answer = await connect(inv).api.verifyMac({
            body: { kid: inv.args[0], mac, data: b64(await readInput(str(inv.values, 'in'))) },
          });
          return verdict(
            inv,
            answer,
            `MAC (key ${answer.kid}${answer.version ? ` version ${answer.version}` : ''})`,
          );
        },
      },
    ],
  },
  {
    name: 'random',
    summary: "Random bytes from the service's CSPRNG, in base64",
    args: ['<bytes>'],
    options: { out: OUT },
    async run(inv) {
      if (!/^\d{1,4}$/.test(inv.args[0]) || Number(inv.args[0]) < 1 || Number(inv.args[0]) > 1024)
        throw new UsageError(`random takes a number of bytes from 1 to 1024, got ${inv.args[0]}`);
      const bytes = Number(inv.args[0]);
      const answer = await connect(inv).api.random({ body: { bytes } });
      return emit(inv, answer, `${answer.data}\n`);
    },
  },
  {
    name: 'audit',
    summary: "The tenant's hash-chained audit log",
    subcommands: [
      {
        name: 'events',
        summary: 'List audit events in chain order',
        options: {
          from: {
            type: 'string',
            value: '<time>',
            help: 'events at or after (RFC 3339 or a date)',
          },
          to: { type: 'string', value: '<time>', help: 'events before' },
          actor: { type: 'string', value: '<actor>', help: 'exact actor' },
          action: { type: 'string', value: '<action>', help: 'exact action, e.g. crypto.encrypt' },
          outcome: { type: 'string', value: '<outcome>', help: 'success, failure or denied' },
          ...PAGE_OPTIONS,
          limit: { type: 'string', value: '<n>', help: 'page size (1 to 1000)' },
        },
        async run(inv) {
          const v = inv.values;
          const page = await connect(inv).api.listAuditEvents({
            query: {
              limit: int(v, 'limit', 1, 1000),
              cursor: str(v, 'cursor'),
              from: str(v, 'from'),
              to: str(v, 'to'),
              actor: str(v, 'actor'),
              action: str(v, 'action'),
              outcome: allowed<Query<'listAuditEvents'>['outcome'] & string>(v, 'outcome'),
            },
          });
          return printPage(inv, page, [
            ['seq', (e) => e.seq],
            ['at', (e) => e.at],
            ['actor', (e) => e.actor],
            ['action', (e) => e.action],
            ['outcome', (e) => e.outcome],
            ['target', (e) => e.target],
          ]);
        },
      },
      {
        name: 'verify',
        summary: 'Verify the hash chain up to its recorded head; exit 4 when it is broken',
        options: {
          'from-seq': { type: 'string', value: '<n>', help: 'first event (default 1)' },
          'to-seq': { type: 'string', value: '<n>', help: 'last event (default: the head)' },
        },
        async run(inv) {
          const fromSeq = int(inv.values, 'from-seq', 1, Number.MAX_SAFE_INTEGER);
          const toSeq = int(inv.values, 'to-seq', 1, Number.MAX_SAFE_INTEGER);
          const answer = await connect(inv).api.verifyAudit({
            body: { ...(fromSeq ? { fromSeq } : {}), ...(toSeq ? { toSeq } : {}) },
          });
          const detail = answer.valid
            ? `${answer.checked} events checked, head ${answer.head.seq}`
            : `${answer.checked} events checked; broken at ${answer.firstBroken?.seq}: ${answer.firstBroken?.reason}`;
          print(
            inv,
            answer,
            () => `${answer.valid ? 'valid' : 'INVALID'} audit chain: ${detail}\n`,
          );
          return answer.valid ? EXIT.ok : EXIT.invalid;
        },
      },
    ],
  },
];
