/**
 * Crypto and audit commands (a workload's login, audience service-core): encrypt, decrypt, sign,
 * verify, data-key, re-encrypt, mac, random from files or stdin; audit events and verify. Data
 * goes to the service in base64 (the JSON API's form); results go to --out or stdout.
 */
import { readFileSync } from 'node:fs';
import {
  EXIT,
  UsageError,
  contextOf,
  int,
  print,
  readInput,
  record,
  str,
  wantsJson,
  writeOutput,
  type Command,
  type Invocation,
  type OptionDef,
} from '../command.ts';
import { PAGE_OPTIONS, printPage } from './admin.ts';
import { connect } from './session.ts';
import { verifyLocally } from './local-jose.ts';

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
/** Text input (a JWE, a base64 signature) without the line ending an editor or echo adds. */
const text = async (file: string | undefined) => (await readInput(file)).toString('utf8').trim();

/** Writes `payload` to --out, or with --output json the whole answer. */
function emit(
  inv: Invocation,
  answer: unknown,
  payload: string | Uint8Array,
  secret = false,
): number {
  const out = str(inv.values, 'out');
  if (wantsJson(inv)) writeOutput(inv, out, `${JSON.stringify(answer, null, 2)}\n`, secret);
  else writeOutput(inv, out, payload, secret);
  return EXIT.ok;
}

/** A verdict: printed, and exit 4 when false so a script can branch on it. */
function verdict(inv: Invocation, answer: { valid: boolean }, what: string): number {
  print(inv, answer, () => `${answer.valid ? 'valid' : 'INVALID'} ${what}\n`);
  return answer.valid ? EXIT.ok : EXIT.invalid;
}

export const cryptoCommands: Command[] = [
  {
    name: 'encrypt',
    summary: "Encrypt a file to a compact JWE under the key's newest version",
    args: ['<kid>'],
    options: { in: IN, out: OUT, context: CONTEXT },
    async run(inv) {
      const data = b64(await readInput(str(inv.values, 'in')));
      const answer = await connect(inv).api.encrypt({
        body: { kid: inv.args[0], data, context: contextOf(inv.values, 'context') },
      });
      return emit(inv, answer, `${answer.ciphertext}\n`);
    },
  },
  {
    name: 'decrypt',
    summary: 'Decrypt a compact JWE (the key and version are in its header)',
    options: { in: IN, out: OUT, context: CONTEXT },
    async run(inv) {
      const ciphertext = await text(str(inv.values, 'in'));
      const answer = await connect(inv).api.decrypt({
        body: { ciphertext, context: contextOf(inv.values, 'context') },
      });
      return emit(inv, answer, Buffer.from(answer.data, 'base64'), true);
    },
  },
  {
    name: 're-encrypt',
    summary:
      'Re-encrypt a JWE under the newest version, or another key, without the plaintext leaving the service',
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
      const ciphertext = await text(str(inv.values, 'in'));
      const body = {
        ciphertext,
        context: contextOf(inv.values, 'context'),
        targetKid: str(inv.values, 'target-kid'),
        targetContext: contextOf(inv.values, 'target-context'),
      };
      const answer = await connect(inv).api.reEncrypt({ body });
      return emit(inv, answer, `${answer.ciphertext}\n`);
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
      if (str(inv.values, 'cert') || str(inv.values, 'content')) return verifyLocally(inv);
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
        keySpec: str(inv.values, 'key-spec') ?? 'AES_256',
        context: contextOf(inv.values, 'context'),
      };
      const c = connect(inv);
      const answer = inv.values['no-plaintext']
        ? await c.api.generateDataKeyWithoutPlaintext({ body })
        : await c.api.generateDataKey({ body });
      const out = str(inv.values, 'out');
      if (out && out !== '-' && !wantsJson(inv)) {
        writeOutput(inv, out, `${answer.ciphertext}\n`);
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
              outcome: str(v, 'outcome'),
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
