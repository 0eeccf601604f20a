/**
 * `keyward keys`: a tenant's keys through the Admin API (a person's login), and their public keys
 * (also through the Core API with a workload's login).
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Body, Key, PublicKeys, Query } from '../api-client.ts';
import {
  EXIT,
  UsageError,
  allowed,
  int,
  keystorePasswordFromEnv,
  print,
  readSecret,
  record,
  str,
  table,
  type Command,
  type Invocation,
  type Values,
} from '../command.ts';
import { PAGE_OPTIONS, pageOf, printPage } from './admin.ts';
import { connect } from './session.ts';

type KeyUsage = NonNullable<Body<'updateKey'>['usages']>[number];

const KEY_FIELDS = [
  'kid',
  'type',
  'usage',
  'usages',
  'allowedUsages',
  'state',
  'deletionDate',
  'currentVersion',
  'source',
  'description',
  'rotationPeriodDays',
  'nextRotationAt',
  'minDecryptionVersion',
  'archiveSigning',
  'trustAnchor',
  'createdAt',
  'updatedAt',
];
/** Each version's certificate (an imported key): who it names, who issued it, and when it is valid. */
const certificates = (versions: NonNullable<Key['versions']>): string =>
  versions
    .filter((v) => v.certificate)
    .map(
      (v) =>
        `\ncertificate of version ${v.version}:\n${record(v.certificate as Record<string, unknown>)
          .replace(/^/gm, '  ')
          .trimEnd()}\n`,
    )
    .join('');

const showKey = (inv: Invocation, key: Key) => {
  print(
    inv,
    key,
    () =>
      record(key as unknown as Record<string, unknown>, KEY_FIELDS) +
      (key.versions
        ? `\n${table(key.versions, [
            ['version', (v) => v.version],
            ['created', (v) => v.createdAt],
            ['certificate', (v) => v.certificate?.subject ?? v.hasCertificate],
          ])}${certificates(key.versions)}`
        : ''),
  );
  return EXIT.ok;
};

type Action = 'rotate' | 'suspend' | 'resume' | 'revoke' | 'archive';
const ACTIONS: Array<
  [Action, 'rotateKey' | 'suspendKey' | 'resumeKey' | 'revokeKey' | 'archiveKey', string]
> = [
  ['rotate', 'rotateKey', 'Add a new version: encryption and signing use it from now on'],
  ['suspend', 'suspendKey', 'Suspend an active key (temporarily unusable)'],
  ['resume', 'resumeKey', 'Resume a suspended key'],
  ['revoke', 'revokeKey', 'Revoke a key: every operation with it is refused'],
  ['archive', 'archiveKey', 'Archive a revoked key'],
];

export const keysCommand: Command = {
  name: 'keys',
  summary: 'Keys of a tenant: create, list, rotate, change state, import, settings, public keys',
  subcommands: [
    {
      name: 'create',
      summary: 'Create a key',
      options: {
        type: {
          type: 'string',
          value: '<type>',
          help: 'aes-128, aes-256, hmac-sha256/384/512, rsa-2048/3072/4096, rsa-pss-2048/3072/4096, ec-p256/p384/p521, ed25519, ed448, x25519, x448, ml-kem-*, ml-dsa-*, slh-dsa-* (required)',
        },
        usage: {
          type: 'string',
          value: '<usage>',
          help: "encrypt, sign or mac (default: the type's)",
        },
        kid: { type: 'string', value: '<kid>', help: 'the key id (default: generated)' },
      },
      async run(inv) {
        const type = str(inv.values, 'type');
        if (!type) throw new UsageError('keys create needs --type');
        const c = connect(inv);
        const body = {
          type,
          ...(str(inv.values, 'usage')
            ? { usage: allowed<Body<'createKey'>['usage'] & string>(inv.values, 'usage') }
            : {}),
          ...(str(inv.values, 'kid') ? { kid: str(inv.values, 'kid') } : {}),
        };
        return showKey(inv, await c.api.createKey({ tenantId: c.tenantId, body }));
      },
    },
    {
      name: 'list',
      summary: 'List keys (archived ones only with --state archived)',
      options: {
        state: { type: 'string', value: '<state>', help: 'active, suspended, revoked or archived' },
        ...PAGE_OPTIONS,
      },
      async run(inv) {
        const c = connect(inv);
        const page = await c.api.listKeys({
          tenantId: c.tenantId,
          query: {
            ...pageOf(inv),
            state: allowed<Query<'listKeys'>['state'] & string>(inv.values, 'state'),
          },
        });
        return printPage(inv, page, [
          ['kid', (k) => k.kid],
          ['type', (k) => k.type],
          // Every usage enabled: a key pair imported from a certificate may do several.
          ['usages', (k) => (k.usages ?? [k.usage]).join(',')],
          ['state', (k) => k.state],
          ['version', (k) => k.currentVersion],
          ['nextRotation', (k) => k.nextRotationAt],
        ]);
      },
    },
    {
      name: 'show',
      summary: 'Show a key with its versions',
      args: ['<kid>'],
      run: async (inv) => {
        const c = connect(inv);
        return showKey(inv, await c.api.getKey({ tenantId: c.tenantId, kid: inv.args[0] }));
      },
    },
    ...ACTIONS.map(([name, fn, summary]): Command => ({
      name,
      summary,
      args: ['<kid>'],
      run: async (inv) => {
        const c = connect(inv);
        return showKey(inv, await c.api[fn]({ tenantId: c.tenantId, kid: inv.args[0] }));
      },
    })),
    {
      name: 'import',
      summary: 'Import a PKCS#12 file, or a PEM key with its certificate chain',
      args: ['<file>'],
      details:
        "The keystore password comes from KEYWARD_KEYSTORE_PASSWORD (or KEYWARD_KEY_PASSWORD, as `keyward open` reads it), or stdin with --password-stdin; a PEM key that is not encrypted needs none. Certificates without a private key (an outside signer's, a CA's) import as verify-only keys; --trust-anchor makes them trust anchors for verify: chain.",
      options: {
        kid: {
          type: 'string',
          value: '<kid>',
          help: "the key id (default: the certificate's subject CN, else its e-mail, made kid-safe and unique)",
        },
        usage: {
          type: 'string',
          value: '<usage>',
          help: "encrypt or sign: enable only this one (default: every usage the certificate's keyUsage allows, or all the key type has when it has no keyUsage)",
        },
        'password-stdin': { type: 'boolean', help: 'read the keystore password from stdin' },
        'trust-anchor': {
          type: 'boolean',
          help: 'certificates without a private key: trust anchors for verify: chain',
        },
      },
      async run(inv) {
        const file = inv.args[0];
        const data = readFileSync(file);
        const password =
          keystorePasswordFromEnv() ||
          (inv.values['password-stdin']
            ? await readSecret(undefined, 'KEYWARD_KEYSTORE_PASSWORD', 'keystore password')
            : undefined);
        const form = new FormData();
        form.append('keystore', new Blob([data]), basename(file));
        if (password) form.append('password', password);
        for (const field of ['kid', 'usage'])
          if (str(inv.values, field)) form.append(field, str(inv.values, field)!);
        if (inv.values['trust-anchor']) form.append('trustAnchor', 'true');
        const c = connect(inv);
        const answer = await c.api.importKeystore({ tenantId: c.tenantId, body: form });
        print(inv, answer, () =>
          table(answer.keys, [
            ['kid', (k) => k.kid],
            ['type', (k) => k.type],
            ['usages', (k) => (k.usages ?? [k.usage]).join(',')],
            ['allowed', (k) => (k.allowedUsages ?? [k.usage]).join(',')],
            ['state', (k) => k.state],
          ]),
        );
        return EXIT.ok;
      },
    },
    {
      name: 'settings',
      summary:
        "Change a key's description, rotation period, minimum decryption version or enabled usages",
      args: ['<kid>'],
      options: {
        description: { type: 'string', value: '<text>', help: 'a description' },
        'rotation-period-days': {
          type: 'string',
          value: '<days|none>',
          help: 'rotate automatically every so many days; none: follow the policy',
        },
        'min-decryption-version': {
          type: 'string',
          value: '<n>',
          help: 'older versions no longer decrypt or verify (kept until lowered again)',
        },
        'archive-signing': {
          type: 'string',
          value: 'true|false',
          help: "the tenant's archive signing key: it signs converted SignedData whatever its signers",
        },
        'trust-anchor': {
          type: 'string',
          value: 'true|false',
          help: 'a verify-only certificate that verify: chain validates to',
        },
        usages: {
          type: 'string',
          value: '<usage,...>',
          help: 'the usages to enable (encrypt,sign): narrows the key, or widens it back within what its certificate allows (allowedUsages), never past it',
        },
      },
      async run(inv) {
        const period = str(inv.values, 'rotation-period-days');
        const min = int(inv.values, 'min-decryption-version', 1, Number.MAX_SAFE_INTEGER);
        const body = {
          ...(str(inv.values, 'description') !== undefined
            ? { description: str(inv.values, 'description') }
            : {}),
          ...(period === undefined
            ? {}
            : {
                rotationPeriodDays:
                  period === 'none'
                    ? null
                    : int(inv.values, 'rotation-period-days', 1, Number.MAX_SAFE_INTEGER),
              }),
          ...(min === undefined ? {} : { minDecryptionVersion: min }),
          ...flag(inv.values, 'archive-signing', 'archiveSigning'),
          ...flag(inv.values, 'trust-anchor', 'trustAnchor'),
          ...(str(inv.values, 'usages') === undefined
            ? {}
            : {
                usages: str(inv.values, 'usages')!
                  .split(',')
                  .map((u) => u.trim() as KeyUsage),
              }),
        };
        if (Object.keys(body).length === 0)
          throw new UsageError(
            'keys settings needs --description, --rotation-period-days, --min-decryption-version, --archive-signing, --trust-anchor or --usages',
          );
        const c = connect(inv);
        return showKey(
          inv,
          await c.api.updateKey({ tenantId: c.tenantId, kid: inv.args[0], body }),
        );
      },
    },
    {
      name: 'public',
      summary: "Every retained version's public key (JWK kid <kid>#<version>, and PEM)",
      args: ['<kid>'],
      details:
        "With a person's login through the Admin API, with a workload's through the Core API.",
      options: {
        format: {
          type: 'string',
          value: 'table|jwks|pem',
          help: 'jwks: a JWK Set (RFC 7517 section 5); pem: the SPKI PEMs',
        },
      },
      async run(inv) {
        const format = str(inv.values, 'format') ?? 'table';
        if (!['table', 'jwks', 'pem'].includes(format))
          throw new UsageError(`--format must be table, jwks or pem, got ${format}`);
        const c = connect(inv);
        const keys: PublicKeys =
          c.session.profile.grant === 'password'
            ? await c.api.adminGetPublicKeys({ tenantId: c.tenantId, kid: inv.args[0] })
            : await c.api.getPublicKeys({ kid: inv.args[0] });
        if (format === 'jwks')
          inv.stdout.write(
            `${JSON.stringify({ keys: keys.versions.map((v) => v.jwk) }, null, 2)}\n`,
          );
        else if (format === 'pem') inv.stdout.write(keys.versions.map((v) => v.pem ?? '').join(''));
        else
          print(inv, keys, () =>
            table(keys.versions, [
              ['version', (v) => v.version],
              ['kid', (v) => v.jwk.kid],
              ['kty', (v) => v.jwk.kty],
              ['alg', (v) => v.jwk.alg],
            ]),
          );
        return EXIT.ok;
      },
    },
  ],
};

/** A true|false option as a body member, or nothing when it is absent. */
function flag(
  values: Values,
  option: string,
  member: 'archiveSigning' | 'trustAnchor',
): Partial<Record<typeof member, boolean>> {
  const v = str(values, option);
  if (v === undefined) return {};
  if (v !== 'true' && v !== 'false')
    throw new UsageError(`--${option} must be true or false, got ${v}`);
  return { [member]: v === 'true' };
}
