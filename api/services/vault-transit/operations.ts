/**
 * The Vault Transit API's paths (docs/vault-transit.md), one row each: method, path below `/v1/`,
 * the Keyward permissions it needs, its audit action and rate-limit endpoint, how it runs
 * (a runtime operation, with `batch_input` or not, through runRuntime: metrics, tallied audit,
 * decryption-failure budget; a key change, audited as a change; the token paths), and the
 * service it calls. The transport (api/http/vault-transit.ts) serves the table; the route file
 * (api/routes/vault-transit.ts) registers and documents it.
 */
import type { AppContext } from '../../context.ts';
import type { AccessClaims } from '../auth/access-tokens.ts';
import type { ExpensiveDeclaration } from '../../../shared/keys/work-budget.ts';
import * as data from './data-plane.ts';
import * as keys from './keys.ts';
import * as tokens from './tokens.ts';
import { DEFAULT_TRANSIT_MOUNT } from '../../../shared/policy.ts';

/** What a row's service gets: the tenant, the path parameters, the request members, the actor. */
export interface TransitCall {
  tenantId: string;
  params: Readonly<Record<string, string>>;
  input: Record<string, unknown>;
  actor: string;
  /** Absent on the login row, which takes no token. */
  claims?: AccessClaims;
  /** The token the request carried (the token rows answer it back, as Vault does). */
  token: string;
  /** The client address: the key of the login's failure budget. */
  address: string;
}

/** What a row answers: Transit's `data` (plus `kid`, the audit target), or nothing (204). */
export type TransitResult = Record<string, unknown> | null;

export interface TransitOperation {
  /** POST rows also answer PUT (Vault's Go client writes with PUT). */
  method: 'GET' | 'POST' | 'DELETE';
  /**
   * Below /v1/, Express-style: `transit/encrypt/:kid` (its first segment the mount, which the
   * tenant's mounts replace), or `auth/...` (served at that path for every tenant).
   */
  path: string;
  operationId: string;
  summary: string;
  permissions: readonly string[];
  /** Audit action and rate-limit endpoint. */
  action: string;
  /**
   * runtime: one request through runRuntime; batch: the same, per `batch_input` item when given;
   * control: a key change or read, audited once; token: the caller's own token (no permission);
   * login: open, the token endpoint's grant (audited and budgeted there).
   */
  kind: 'runtime' | 'batch' | 'control' | 'token' | 'login';
  /** The result is Vault's `auth` member (login, renewal) rather than `data`. */
  answersAuth?: boolean;
  /** The caller-costed work it can trigger, like a route row's (docs/expensive-work.md). */
  expensive?: ExpensiveDeclaration;
  /** The request members the document shows (name → JSON type and description). */
  members?: Readonly<Record<string, { type: string; description: string }>>;
  /** The documented example request. */
  example?: Record<string, unknown>;
  run(ctx: AppContext, call: TransitCall): Promise<TransitResult>;
}

/**
 * The mount the rows are written (and documented) under: Vault's default. The matcher reads a
 * row's first segment as the mount, so a tenant's own mounts (its policy's
 * `vaultTransitMounts`) take its place.
 */
export const TRANSIT_MOUNT = DEFAULT_TRANSIT_MOUNT;

const KEY = ':kid';
/** Key generation (RSA, ML-DSA) on the expensive-work pool and the caller's budget. */
const GENERATES: ExpensiveDeclaration = { kinds: ['key-generation'] };
const m = (type: string, description: string) => ({ type, description });
const PLAINTEXT = m('string', 'base64 of the plaintext');
const CONTEXT = m('string', 'base64 context, bound to the ciphertext; required by derived keys');
const CIPHERTEXT = m('string', 'vault:v<N>:<base64>, as encrypt answered it');
const BATCH = m('array', 'items of the single request members; answered as batch_results');
const INPUT = m('string', 'base64 of the input');

/** A data operation on the key named in the path. */
type DataRun = (
  ctx: AppContext,
  tenantId: string,
  kid: string,
  input: Record<string, unknown>,
) => Promise<Record<string, unknown>>;
const onKey = (run: DataRun) => (ctx: AppContext, c: TransitCall) =>
  run(ctx, c.tenantId, c.params.kid, c.input);

const path = (p: string) => `${TRANSIT_MOUNT}/${p}`;

/** Every Transit row, in the order the router registers them (literal paths before parameters). */
export const TRANSIT_OPERATIONS: readonly TransitOperation[] = [
  {
    method: 'POST',
    path: path(`encrypt/${KEY}`),
    operationId: 'transitEncrypt',
    summary: 'Encrypt with the named key (single or batch_input)',
    permissions: ['crypto.encrypt'],
    action: 'vault-transit.encrypt',
    kind: 'batch',
    members: {
      plaintext: PLAINTEXT,
      context: CONTEXT,
      key_version: m('integer', 'the latest version, or 0'),
      batch_input: BATCH,
    },
    example: { plaintext: 'aW52b2ljZSA0Mg==' },
    run: onKey(data.encrypt),
  },
  {
    method: 'POST',
    path: path(`decrypt/${KEY}`),
    operationId: 'transitDecrypt',
    summary: 'Decrypt a ciphertext of the named key (single or batch_input)',
    permissions: ['crypto.decrypt'],
    action: 'vault-transit.decrypt',
    kind: 'batch',
    members: { ciphertext: CIPHERTEXT, context: CONTEXT, batch_input: BATCH },
    example: { ciphertext: 'vault:v1:S1dDAgBIZXlKaGJHY2lPaUprYVhJaUxD...' },
    run: onKey(data.decrypt),
  },
  {
    method: 'POST',
    path: path(`rewrap/${KEY}`),
    operationId: 'transitRewrap',
    summary:
      'Re-encrypt a ciphertext with the latest version of its key, the plaintext never leaving the service',
    permissions: ['crypto.decrypt', 'crypto.encrypt'],
    action: 'vault-transit.rewrap',
    kind: 'batch',
    members: { ciphertext: CIPHERTEXT, context: CONTEXT, batch_input: BATCH },
    example: { ciphertext: 'vault:v1:S1dDAgBIZXlKaGJHY2lPaUprYVhJaUxD...' },
    run: onKey(data.rewrap),
  },
  {
    method: 'POST',
    path: path(`datakey/plaintext/${KEY}`),
    operationId: 'transitDataKeyPlaintext',
    summary: 'A fresh data key, in the clear and encrypted with the named key',
    permissions: ['crypto.generate-data-key'],
    action: 'vault-transit.datakey',
    kind: 'runtime',
    members: { bits: m('integer', '128, 256 (default) or 512'), context: CONTEXT },
    example: { bits: 256 },
    run: onKey(data.dataKey(true)),
  },
  {
    method: 'POST',
    path: path(`datakey/wrapped/${KEY}`),
    operationId: 'transitDataKeyWrapped',
    summary: 'A fresh data key, encrypted with the named key only',
    permissions: ['crypto.generate-data-key'],
    action: 'vault-transit.datakey',
    kind: 'runtime',
    members: { bits: m('integer', '128, 256 (default) or 512'), context: CONTEXT },
    example: { bits: 256 },
    run: onKey(data.dataKey(false)),
  },
  {
    method: 'POST',
    path: path(`hmac/${KEY}`),
    operationId: 'transitHmac',
    summary: 'HMAC of the input with an hmac key (single or batch_input)',
    permissions: ['crypto.sign'],
    action: 'vault-transit.hmac',
    kind: 'batch',
    members: {
      input: INPUT,
      algorithm: m('string', "the key's hash (sha2-256 for hmac keys)"),
      batch_input: BATCH,
    },
    example: { input: 'aW52b2ljZSA0Mg==' },
    run: onKey(data.hmac),
  },
  {
    method: 'POST',
    path: path(`sign/${KEY}`),
    operationId: 'transitSign',
    summary: 'Sign the input with a signing key (single or batch_input)',
    permissions: ['crypto.sign'],
    action: 'vault-transit.sign',
    kind: 'batch',
    members: {
      input: INPUT,
      hash_algorithm: m(
        'string',
        "ECDSA: the curve's hash; RSA: sha2-256 (default), sha2-384, sha2-512",
      ),
      prehashed: m('boolean', 'input is the digest (ECDSA, RSA)'),
      signature_algorithm: m('string', 'RSA: pss (default) or pkcs1v15'),
      marshaling_algorithm: m('string', 'ECDSA: asn1 (default) or jws'),
      batch_input: BATCH,
    },
    example: { input: 'aW52b2ljZSA0Mg==' },
    run: onKey(data.signData),
  },
  {
    method: 'POST',
    path: path(`verify/${KEY}`),
    operationId: 'transitVerify',
    summary: 'Verify a signature or an HMAC of the input (single or batch_input)',
    permissions: ['crypto.verify'],
    action: 'vault-transit.verify',
    kind: 'batch',
    members: {
      input: INPUT,
      signature: m('string', 'vault:v<N>:<base64>, as sign answered it'),
      hmac: m('string', 'vault:v<N>:<base64>, as hmac answered it'),
      hash_algorithm: m('string', 'as for sign'),
      prehashed: m('boolean', 'as for sign'),
      signature_algorithm: m('string', 'as for sign'),
      marshaling_algorithm: m('string', 'as for sign'),
      batch_input: BATCH,
    },
    example: {
      input: 'aW52b2ljZSA0Mg==',
      hmac: 'vault:v1:8SDd3WHDOjf7mq69CyCqYjVVViQQAVZRkFM13ok481o=',
    },
    run: onKey(data.verifyData),
  },
  {
    method: 'POST',
    path: path('random'),
    operationId: 'transitRandom',
    summary: 'Random bytes from the service CSPRNG',
    permissions: ['crypto.generate-data-key'],
    action: 'vault-transit.random',
    kind: 'runtime',
    members: {
      bytes: m('integer', '1 to 1024 (default 32)'),
      format: m('string', 'base64 (default) or hex'),
    },
    example: { bytes: 32 },
    run: (_ctx, c) => data.random(c.input),
  },
  {
    method: 'POST',
    path: path('random/:bytes'),
    operationId: 'transitRandomBytes',
    summary: 'Random bytes, their count in the path',
    permissions: ['crypto.generate-data-key'],
    action: 'vault-transit.random',
    kind: 'runtime',
    members: { format: m('string', 'base64 (default) or hex') },
    example: { format: 'hex' },
    run: (_ctx, c) => data.random(c.input, c.params.bytes),
  },
  {
    method: 'POST',
    path: path('hash'),
    operationId: 'transitHash',
    summary: 'Hash of the input (no key)',
    permissions: [],
    action: 'vault-transit.hash',
    kind: 'runtime',
    members: {
      input: INPUT,
      algorithm: m('string', 'sha2-256 (default), sha2-224/384/512, sha3-224/256/384/512'),
      format: m('string', 'hex (default) or base64'),
    },
    example: { input: 'aW52b2ljZSA0Mg==' },
    run: (_ctx, c) => data.hash(c.input),
  },
  {
    method: 'POST',
    path: path('hash/:algorithm'),
    operationId: 'transitHashAlgorithm',
    summary: 'Hash of the input, the algorithm in the path',
    permissions: [],
    action: 'vault-transit.hash',
    kind: 'runtime',
    members: { input: INPUT, format: m('string', 'hex (default) or base64') },
    example: { input: 'aW52b2ljZSA0Mg==' },
    run: (_ctx, c) => data.hash(c.input, c.params.algorithm),
  },
  {
    method: 'GET',
    path: path('keys'),
    operationId: 'transitListKeys',
    summary: 'The names of the keys (Vault LIST; send GET ?list=true)',
    permissions: ['crypto.keys.read'],
    action: 'vault-transit.keys.list',
    kind: 'control',
    run: (ctx, c) => keys.listTransitKeys(ctx, c.tenantId),
  },
  {
    method: 'POST',
    path: path(`keys/${KEY}`),
    operationId: 'transitCreateKey',
    summary: 'Create a key of a Transit type (an existing name is left as it is)',
    permissions: ['admin.keys.create'],
    action: 'vault-transit.keys.create',
    kind: 'control',
    expensive: GENERATES,
    members: {
      type: m('string', `one of ${keys.TRANSIT_TYPES.join(', ')} (default aes256-gcm96)`),
      derived: m('boolean', 'every request must carry a context'),
      parameter_set: m('string', 'ml-dsa: 44, 65 (default) or 87'),
    },
    example: { type: 'aes256-gcm96' },
    run: (ctx, c) => keys.createTransitKey(ctx, c.tenantId, c.params.kid, c.input, c.actor),
  },
  {
    method: 'GET',
    path: path(`keys/${KEY}`),
    operationId: 'transitReadKey',
    summary: 'The key, its versions and latest_version',
    permissions: ['crypto.keys.read'],
    action: 'vault-transit.keys.read',
    kind: 'control',
    run: (ctx, c) => keys.readTransitKey(ctx, c.tenantId, c.params.kid),
  },
  {
    method: 'DELETE',
    path: path(`keys/${KEY}`),
    operationId: 'transitDeleteKey',
    summary: 'Destroy the key (revoked and archived), once deletion_allowed is configured',
    permissions: ['admin.keys.revoke', 'admin.keys.archive'],
    action: 'vault-transit.keys.delete',
    kind: 'control',
    run: (ctx, c) => keys.deleteTransitKey(ctx, c.tenantId, c.params.kid, c.actor),
  },
  {
    method: 'POST',
    path: path(`keys/${KEY}/config`),
    operationId: 'transitConfigureKey',
    summary: 'min_decryption_version, deletion_allowed, auto_rotate_period',
    permissions: ['admin.keys.update'],
    action: 'vault-transit.keys.config',
    kind: 'control',
    members: {
      min_decryption_version: m('integer', 'versions below it no longer decrypt or verify'),
      deletion_allowed: m('boolean', 'DELETE destroys the key'),
      auto_rotate_period: m(
        'string',
        'whole days, as "720h" or seconds; 0 follows the tenant policy',
      ),
    },
    example: { min_decryption_version: 1 },
    run: (ctx, c) => keys.configureTransitKey(ctx, c.tenantId, c.params.kid, c.input),
  },
  {
    method: 'POST',
    path: path(`keys/${KEY}/rotate`),
    operationId: 'transitRotateKey',
    summary: 'A new version of the key, which encrypts and signs from now on',
    permissions: ['admin.keys.rotate'],
    action: 'vault-transit.keys.rotate',
    kind: 'control',
    expensive: GENERATES,
    run: (ctx, c) => keys.rotateTransitKey(ctx, c.tenantId, c.params.kid, c.actor),
  },
  {
    method: 'POST',
    path: 'auth/approle/login',
    operationId: 'vaultAppRoleLogin',
    summary:
      "A token for a workload's client credential: role_id is its client id, secret_id its secret",
    permissions: [],
    action: 'vault-transit.login',
    kind: 'login',
    answersAuth: true,
    members: {
      role_id: m('string', 'the workload client id'),
      secret_id: m('string', 'the workload client secret'),
    },
    example: { role_id: '7d7d6a39-8f6b-4b0c-9a8e-1f0a4f3f2b11', secret_id: 'the-client-secret' },
    run: async (ctx, c) => (await tokens.login(ctx, c.input, c.address)).auth,
  },
  {
    method: 'GET',
    path: 'auth/token/lookup-self',
    operationId: 'vaultLookupSelf',
    summary: 'What the token is: tenant, expiry, not renewable',
    permissions: [],
    action: 'vault-transit.token.lookup-self',
    kind: 'token',
    run: async (_ctx, c) => tokens.lookupSelf(c.claims!, c.token),
  },
  {
    method: 'POST',
    path: 'auth/token/renew-self',
    operationId: 'vaultRenewSelf',
    summary:
      'The same token and its remaining lifetime (Keyward tokens are not renewable: log in again)',
    permissions: [],
    action: 'vault-transit.token.renew-self',
    kind: 'token',
    answersAuth: true,
    members: { increment: m('string', 'ignored: the token keeps its expiry') },
    example: { increment: 0 },
    run: async (_ctx, c) => tokens.renewSelf(c.claims!, c.token).auth,
  },
];
