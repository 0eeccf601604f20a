/**
 * The keystore import form (a `keystore` part, PKCS#12 file or PEM, with
 * optional password, kid, usage and trustAnchor fields), read and imported, and what its rows
 * declare of it: the v3 admin row (api/routes/v3/admin/tenants/keys.ts) and the unversioned
 * alias (api/routes/legacy/migration.ts) both take this form, answer the imported keys and
 * record one `key.import` event per key (importedKeyEvents).
 *
 * Tests: test/integration/admin/keystore-import.test.ts, test/integration/keys/rsa-exponents.test.ts
 */
import type { Request } from 'express';
import Type from 'typebox';
import type { AppContext } from '../../context.ts';
import type { StreamRequest } from '../../rows/endpoint.ts';
import { problem } from '../../../shared/errors/index.ts';
import { readSmallMultipart } from '../../http/multipart.ts';
import { importKeystore } from '../../services/keys/import.ts';
import { KEY_STATES } from '../../../shared/keys/lifecycle.ts';
import { CertificateView } from '../../schemas/keys.ts';

/** Reads the keystore form and imports it into `tenantId`: the imported keys' views. */
export async function importFromRequest(
  ctx: AppContext,
  req: Request,
  tenantId: string,
  actor: string,
) {
  const form = await readSmallMultipart(req, 1024 * 1024);
  const keystore =
    form.files.keystore ??
    (form.fields.keystore ? { data: Buffer.from(form.fields.keystore, 'utf8') } : undefined);
  if (!keystore)
    throw problem('validation_failed', 'the keystore part is required (PKCS#12 file or PEM)');
  const anchor = form.fields.trustAnchor;
  if (anchor !== undefined && anchor !== 'true' && anchor !== 'false')
    throw problem('validation_failed', 'trustAnchor must be true or false', {
      details: { field: 'trustAnchor' },
    });
  const keys = await importKeystore(
    ctx,
    tenantId,
    {
      data: keystore.data,
      password: form.fields.password,
      kid: form.fields.kid,
      usage: form.fields.usage,
      trustAnchor: anchor === 'true',
    },
    actor,
  );
  return {
    keys: keys.map((k) => ({
      kid: k.kid,
      type: k.type,
      usage: k.usage,
      usages: k.usages,
      allowedUsages: k.allowedUsages,
      state: k.state,
      certificate: k.certificate,
    })),
  };
}

/** The v3 row's handler: an import into the path's tenant. */
export const importIntoPathTenant = (
  ctx: AppContext,
  { req, params, actor }: { req: Request; params: { tenantId: string }; actor: string },
) => importFromRequest(ctx, req, params.tenantId, actor);

/** The unversioned alias's handler: an import into the token's tenant (older clients name none). */
export const importIntoTokenTenant = (
  ctx: AppContext,
  { req, claims, actor }: { req: Request; claims: { tenantId: string }; actor: string },
) => importFromRequest(ctx, req, claims.tenantId, actor);

/** The audit events of an import, declared by both its rows: one `key.import` per stored key. */
export const importedKeyEvents = (result: Awaited<ReturnType<typeof importFromRequest>>) =>
  result.keys.map((k) => ({ target: k.kid, details: { type: k.type, usages: k.usages } }));

/** The multipart/form-data body of an import (read by readSmallMultipart, at most 1 MiB). */
export const KEYSTORE_FORM: StreamRequest = {
  media: {
    'multipart/form-data': {
      schema: Type.Object({
        keystore: Type.String({ format: 'binary' }),
        password: Type.Optional(Type.String()),
        kid: Type.Optional(
          Type.String({
            description:
              "default: the certificate's subject CN, else its e-mail address, in kid characters, with -2, -3 ... when the tenant has it already; imported-<uuid> when the certificate names neither",
          }),
        ),
        usage: Type.Optional(Type.Enum(['encrypt', 'sign', 'verify'])),
        trustAnchor: Type.Optional(
          Type.Enum(['true', 'false'], {
            description:
              'certificates without a private key only: mark them as trust anchors for verify: chain',
          }),
        ),
      }),
    },
  },
};

const Str = () => Type.String();

/** The answer of an import: the keys it made. */
export const ImportedKeys = Type.Object(
  {
    keys: Type.Array(
      Type.Object({
        kid: Str(),
        type: Str(),
        usage: Str(),
        usages: Type.Array(Str()),
        allowedUsages: Type.Array(Str()),
        state: Type.Enum([...KEY_STATES]),
        certificate: Type.Union([CertificateView, Type.Null()]),
      }),
    ),
  },
  {
    examples: [
      {
        keys: [
          {
            kid: 'partner-signing',
            type: 'rsa-2048',
            usage: 'sign',
            usages: ['sign'],
            allowedUsages: ['sign'],
            state: 'active',
            certificate: {
              subject: 'CN=Partner Signing,O=Partner',
              issuer: 'CN=Partner CA,O=Partner',
              serialNumber: '5A3C91E0',
              notBefore: '2026-01-01T00:00:00.000Z',
              notAfter: '2028-01-01T00:00:00.000Z',
            },
          },
        ],
      },
    ],
  },
);

/** The problems of an import, by status. */
export const IMPORT_PROBLEMS = {
  400: "keystore-password-invalid (wrong password or failed MAC), keystore-malformed (names what was found: truncated, a certificate, ...), keystore-empty, keystore-key-mismatch (the key is not the certificate's), keystore-key-invalid (an inconsistent key pair, naming what does not hold, or an RSA public exponent outside odd 65537 <= e < 2^256), or a kid for a certificate that makes two keys",
  409: 'the kid exists, or another key of the tenant holds the certificate for one of those usages (the problem names the existing kid in `kid`)',
  413: 'body too large',
  415: 'keystore-unsupported-algorithm, or not multipart/form-data',
  422: "policy-violation, or key-usage-mismatch (usage contradicts the certificate's keyUsage/extendedKeyUsage, or they allow nothing this key type does)",
};
