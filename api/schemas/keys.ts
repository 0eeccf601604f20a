/**
 * The key answers that several route files send, and the types the key services build them by: a key's
 * metadata as the runtime lists it (api/services/keys/store.ts keyView), the admin record with
 * its settings (keyView and settingsView), and the public keys of every retained version
 * (api/services/keys/public-view.ts). Never material.
 */
import Type, { type Static, type TObject } from 'typebox';
import { NullableTime, Resource, Time } from './common.ts';

const USAGE = ['encrypt', 'sign', 'mac', 'verify'] as const;
const KEY_STATES = ['active', 'suspended', 'revoked', 'archived'] as const;

/** The metadata members of every key answer. */
export const KEY_VIEW = {
  kid: Type.String(),
  type: Type.String({
    description:
      'aes-128, aes-256, hmac-sha256/384/512 (usage mac), rsa-2048/3072/4096, rsa-pss-2048/3072/4096 (id-RSASSA-PSS keys: sign only, PS256/384/512, only the PS* of the hash their parameters bind them to), ec-p256/p384/p521, ed25519, ed448, x25519/x448 (receive CMS key agreement only, no JWE), ml-kem-768/1024, ml-dsa-44/65/87, slh-dsa-*, x25519-ml-kem-768, p256-ml-kem-768, p384-ml-kem-1024',
  }),
  usage: Type.Enum(USAGE, {
    description:
      "the key's one usage where only one can be named (a JWK's use, AWS KMS KeyUsage, listings): the type's default when enabled, else the first of `usages`. verify: a certificate imported without its private key (an outside signer, or a CA as trust anchor); it only verifies CMS signers and is never used to sign or decrypt",
  }),
  usages: Type.Array(Type.Enum(USAGE), {
    description:
      'what the key may do now; every operation checks it (422 key-usage-mismatch otherwise). An imported key pair starts with every usage its certificate allows; PATCH usages changes it within allowedUsages',
  }),
  allowedUsages: Type.Array(Type.Enum(USAGE), {
    description:
      "what the key may ever do: for an imported key pair, what its certificate's keyUsage/extendedKeyUsage allow of what its type does (everything the type does when the certificate has neither extension); for other keys, its one usage",
  }),
  state: Type.Enum(KEY_STATES),
  deletionDate: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'only while a deletion is pending (the key is suspended and refuses every operation): when the key is revoked and archived for good. Resume cancels the deletion, revoke settles it (docs/aws-kms.md)',
    }),
  ),
  currentVersion: Type.Integer({ minimum: 1 }),
  source: Type.Enum(['generated', 'imported', 'exchange']),
  createdAt: Time(),
  updatedAt: Time(),
  publicKey: Type.Optional(
    Type.Object(
      {},
      {
        description:
          'public JWK of the current version (asymmetric keys only), `kid` "<kid>#<version>"; never private or secret material. Every retained version: GET /api/v3/crypto/keys/{kid}, or .../keys/{kid}/public on the Admin API',
      },
    ),
  ),
};

export const VIEW_EXAMPLE = {
  kid: 'orders-db',
  type: 'aes-256',
  usage: 'encrypt',
  usages: ['encrypt'],
  allowedUsages: ['encrypt'],
  state: 'active',
  currentVersion: 3,
  source: 'generated',
  createdAt: '2026-01-05T09:00:00.000Z',
  updatedAt: '2026-11-23T16:00:00.000Z',
};

/** An X.509 certificate as answers show it (shared/keystore/types.ts CertificateSummary). */
export const CertificateView = Type.Object({
  subject: Type.String({ description: 'RFC 4514, most specific RDN first' }),
  issuer: Type.String({ description: 'RFC 4514, most specific RDN first' }),
  serialNumber: Type.String({ description: 'upper-case hex' }),
  notBefore: Time(),
  notAfter: Time(),
});

/** A key's metadata as the runtime, PQC and legacy APIs list it. */
export const KeyView = Resource(KEY_VIEW, VIEW_EXAMPLE);

/** A key's settings, as the Admin API answers them beside its metadata. */
const KEY_SETTINGS = {
  description: Type.Union([Type.String({ maxLength: 500 }), Type.Null()]),
  rotationPeriodDays: Type.Union([Type.Integer({ minimum: 1, maximum: 3650 }), Type.Null()], {
    description:
      "the effective automatic rotation period: the key's own, else the tenant's effective policy (see rotationPeriodFrom); null for keys that do not rotate (imported or exchanged)",
  }),
  rotationPeriodFrom: Type.Union([Type.Enum(['key', 'policy']), Type.Null()], {
    description: 'where rotationPeriodDays comes from',
  }),
  nextRotationAt: Type.Union([Time(), Type.Null()], {
    description:
      'when the scheduler rotates the key (last rotation or creation plus the period); null unless the key is generated and active',
  }),
  lastRotatedAt: NullableTime(),
  minDecryptionVersion: Type.Integer({
    minimum: 1,
    description:
      'versions below it no longer decrypt or verify (409 key-version-retired) and are kept; lowering it restores them',
  }),
  archiveSigning: Type.Boolean({
    description:
      "the tenant's default archive signing key: it signs the JWS of a SignedData conversion without signerKid, whoever the CMS signers are; one key per tenant",
  }),
  trustAnchor: Type.Boolean({
    description: 'a verify-only certificate that verify: chain validates CMS signers to',
  }),
};

/** A key as the Admin API answers it: its metadata and its settings. */
export const KeyRecord = Resource(
  { ...KEY_VIEW, ...KEY_SETTINGS },
  {
    ...VIEW_EXAMPLE,
    description: 'orders database column encryption',
    rotationPeriodDays: 90,
    rotationPeriodFrom: 'key',
    nextRotationAt: '2027-02-21T16:00:00.000Z',
    lastRotatedAt: '2026-11-23T16:00:00.000Z',
    minDecryptionVersion: 2,
    archiveSigning: false,
    trustAnchor: false,
  },
);

/** What a key with a public key can do (symmetric keys have none, so never mac). */
const PUBLIC_USAGE = ['encrypt', 'sign', 'verify'] as const;

const Jwk = Type.Object(
  {
    kty: Type.Enum(['RSA', 'EC', 'OKP', 'AKP']),
    kid: Type.String({ description: '`<kid>#<version>`' }),
    use: Type.Optional(Type.Enum(['sig', 'enc'])),
    alg: Type.Optional(
      Type.String({ description: 'the default JOSE algorithm of the key, where it has one' }),
    ),
  },
  {
    description:
      'public members only (RFC 7517, 7518, 8037; AKP for ML-KEM, ML-DSA, SLH-DSA and the ML-KEM hybrids): never d, p, q, dp, dq, qi, priv or k',
  },
);

/** Every retained version's public key of an asymmetric key, as JWK and PEM. */
export const PublicKeys = Resource(
  {
    kid: Type.String(),
    type: Type.String(),
    usage: Type.Enum(PUBLIC_USAGE),
    usages: Type.Array(Type.Enum(PUBLIC_USAGE), { description: 'what the key may do now' }),
    state: Type.Enum(KEY_STATES),
    currentVersion: Type.Integer({ minimum: 1 }),
    minDecryptionVersion: Type.Integer({
      minimum: 1,
      description:
        'versions below it are no longer shown: nothing they made verifies or decrypts any more',
    }),
    versions: Type.Array(
      Type.Object({
        version: Type.Integer({ minimum: 1 }),
        jwk: Jwk,
        pem: Type.Union([Type.String(), Type.Null()], {
          description:
            'SPKI PEM (RFC 5280 section 4.1.2.7); null for the ML-KEM hybrids, which have no SPKI form',
        }),
      }),
      { description: 'every retained version, oldest first' },
    ),
  },
  {
    kid: 'release-signing',
    type: 'ec-p256',
    usage: 'sign',
    usages: ['sign'],
    state: 'active',
    currentVersion: 2,
    minDecryptionVersion: 1,
    versions: [
      {
        version: 1,
        jwk: {
          kty: 'EC',
          crv: 'P-256',
          x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
          y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
          kid: 'release-signing#1',
          use: 'sig',
          alg: 'ES256',
        },
        pem: '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEf83OJ3D2xF1Bg8vub9tLe1gHMzV7\n6e8Tus9uPHvRVEXH8UTNG72bfocs3+257rn0s2ldbqkLJK2KRiMohYjlrQ==\n-----END PUBLIC KEY-----\n',
      },
      {
        version: 2,
        jwk: {
          kty: 'EC',
          crv: 'P-256',
          x: 'gI0GAILBdu7T53akrFmMyGcsF3n5dO7MmwNBHKW5SV0',
          y: 'SLW_xSffzlPWrHEVI30DHM_4egVwt3NQqeUD7nMFpps',
          kid: 'release-signing#2',
          use: 'sig',
          alg: 'ES256',
        },
        pem: '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgI0GAILBdu7T53akrFmMyGcsF3n5\ndO7MmwNBHKW5SV1Itb/FJ9/OU9ascRUjfQMcz/h6BXC3c1Cp5QPucwWmmw==\n-----END PUBLIC KEY-----\n',
      },
    ],
  },
);

/** A key's metadata as the services build it (api/services/keys/store.ts keyView). */
export type KeyView = Static<typeof KeyView>;
/** A key's settings as the services build them (api/services/keys/settings.ts settingsView). */
export type KeySettingsView = Static<TObject<typeof KEY_SETTINGS>>;
/** The public keys of a key as the services build them (api/services/keys/public-view.ts). */
export type PublicKeysView = Static<typeof PublicKeys>;

/** A kid as the legacy API names it in bodies. */
export const LEGACY_KID = Type.String({
  pattern: '^[A-Za-z0-9._:-]{1,128}$',
  description: 'the key id, as created',
});

/** The body of the legacy key import: exactly one of a PEM and a raw AES key. */
export const LegacyKeyImport = Type.Object(
  {
    pem: Type.Optional(Type.String()),
    password: Type.Optional(Type.String({ writeOnly: true })),
    key: Type.Optional(Type.String({ contentEncoding: 'base64', writeOnly: true })),
    type: Type.Optional(
      Type.Enum(['aes-128', 'aes-256'], { description: 'for `key`; default from its length' }),
    ),
    kid: Type.Optional(LEGACY_KID),
    usage: Type.Optional(Type.Enum(['encrypt', 'sign'])),
  },
  {
    examples: [{ key: 'q1N4ve3m3Mmw0Q2oLr7H8wJ0Xk3c1S0b3mXyq3M5c8E=', kid: 'orders-imported' }],
  },
);
export type LegacyKeyImportBody = Static<typeof LegacyKeyImport>;
