/** RFC 8693 token exchange: a token of the caller's acting in a tenant. */
import type { AppContext } from '../../../context.ts';
import { OAuthError } from '../../../../shared/errors/index.ts';
import { isPlatformPermission } from '../../../../shared/permissions.ts';
import {
  AUDIENCE_ADMIN,
  AUDIENCE_CORE,
  AUDIENCE_LEGACY,
  type AccessClaims,
} from '../access-tokens.ts';
import { rateKey } from '../rate-limits.ts';
import { Tenant } from '../../../../shared/db/models/tenants.ts';
import { UUID_SOURCE } from '../../../../shared/ids.ts';
import { subjectActor } from '../../../../shared/audit/actor.ts';
import { required, type Grant, type TokenResponse } from './grant.ts';

/** The form parameters this grant reads. */
export const parameters: ReadonlySet<string> = new Set([
  'subject_token',
  'subject_token_type',
  'resource',
]);

const RESOURCE = new RegExp(`^urn:keyward:tenant:(${UUID_SOURCE}):(admin|core)$`, 'i');

/** RFC 8693 token exchange: act in a tenant (own, or any with the platform permission); 900 s, `act` claim. */
export async function tokenExchangeGrant(
  ctx: AppContext,
  form: Record<string, string>,
): Promise<TokenResponse> {
  required(form, 'subject_token', 'resource');
  if (
    form.subject_token_type &&
    form.subject_token_type !== 'urn:ietf:params:oauth:token-type:access_token'
  ) {
    throw new OAuthError(
      'invalid_request',
      'subject_token_type must be urn:ietf:params:oauth:token-type:access_token',
    );
  }
  const match = RESOURCE.exec(form.resource);
  if (!match)
    throw new OAuthError(
      'invalid_target',
      'resource must be urn:keyward:tenant:<tenantId>:admin or :core',
    );
  const subject: AccessClaims | null = await ctx.auth.tokens.verifyFresh(form.subject_token);
  // Delegated tokens cannot be exchanged again, and legacy tokens never become v3 tokens.
  if (!subject || subject.act || subject.aud === AUDIENCE_LEGACY)
    throw new OAuthError('invalid_grant', 'the subject token is not valid');
  const [, targetTenant, flavour] = match;
  const audience = flavour.toLowerCase() === 'admin' ? AUDIENCE_ADMIN : AUDIENCE_CORE;
  // Exchange moves a token between tenants, never between audiences: an APPLICATION token stays
  // a service-core token and a HUMAN token a service-admin token.
  if (audience !== subject.aud)
    throw new OAuthError(
      'invalid_target',
      `a ${subject.aud} token can only be exchanged for a ${subject.aud} token`,
    );
  const target = targetTenant.toLowerCase();
  const sameTenant = target === subject.tenantId;
  const allowed = sameTenant
    ? subject.permissions.includes('auth.token-exchange') ||
      subject.permissions.includes('admin.platform.token-exchange')
    : subject.permissions.includes('admin.platform.token-exchange');
  const tenant = await Tenant.query(ctx.db).findOne({ id: target, status: 'active' }).select('id');
  if (!allowed || !tenant) {
    ctx.audit.record({
      tenantId: subject.tenantId,
      actor: subjectActor(subject),
      action: 'auth.token.exchange',
      outcome: 'denied',
      target: form.resource,
    });
    throw new OAuthError('invalid_target', 'the subject may not act in that tenant');
  }
  // Platform permissions do not travel into another tenant: a delegated token cannot hop further.
  const permissions = sameTenant
    ? subject.permissions
    : subject.permissions.filter((p) => !isPlatformPermission(p));
  // Never longer than the subject token: its revocation entry must outlast the delegated token.
  const ttl = Math.min(ctx.config.exchangeTokenTtl, subject.exp - Math.floor(Date.now() / 1000));
  if (ttl < 1) throw new OAuthError('invalid_grant', 'the subject token is about to expire');
  const { token } = await ctx.auth.tokens.issue(
    {
      sub: subject.sub,
      aud: audience,
      tenantId: target,
      permissions,
      client_id: subject.client_id,
      kind: subject.kind,
      act: { sub: subject.sub, tenantId: subject.tenantId, jti: subject.jti },
    },
    ttl,
  );
  for (const tenantId of new Set([subject.tenantId, target])) {
    ctx.audit.record({
      tenantId,
      actor: subjectActor(subject),
      action: 'auth.token.exchange',
      outcome: 'success',
      target: form.resource,
      details: { fromTenant: subject.tenantId, toTenant: target },
    });
  }
  return {
    access_token: token,
    token_type: 'Bearer',
    expires_in: ttl,
    issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  };
}

export const grant: Grant = {
  parameters,
  rateKey: async (ctx, form, address) => {
    const subject = form.subject_token
      ? await ctx.auth.tokens.verifyFresh(form.subject_token)
      : null;
    return subject
      ? rateKey('subject', subject.tenantId, subject.sub)
      : rateKey('address', address);
  },
  run: (ctx, form) => tokenExchangeGrant(ctx, form),
};
