/** The client_credentials grant (RFC 6749 section 4.4): a workload's token for service-core. */
import type { AppContext } from '../../../context.ts';
import { AUDIENCE_CORE } from '../access-tokens.ts';
import { authenticateWorkload, basicFailure, clientAuthOf, clientRateKey } from '../client-auth.ts';
import type { ClientAuth } from '../client-auth.ts';
import { clientActor } from '../../../../shared/audit/actor.ts';
import { required, type Grant, type TokenResponse } from './grant.ts';

/** The form parameters this grant reads. */
export const parameters: ReadonlySet<string> = new Set(['client_id', 'client_secret']);

/** client_credentials: an APPLICATION token for service-core, 36000 s, no refresh token; the client authenticates by form fields or HTTP Basic. */
export async function clientCredentialsGrant(
  ctx: AppContext,
  form: Record<string, string>,
  address: string,
  client: ClientAuth | null = clientAuthOf(undefined, form),
): Promise<TokenResponse> {
  if (client?.method !== 'client_secret_basic') required(form, 'client_id', 'client_secret');
  else if (client.clientId === '') throw basicFailure('the Basic credentials name no client');
  const creds = await authenticateWorkload(
    ctx,
    client!.clientId,
    client!.clientSecret,
    address,
    client!.method,
  );
  const ttl = ctx.config.accessTokenTtl;
  const { token } = await ctx.auth.tokens.issue(
    {
      sub: creds.workloadId,
      aud: AUDIENCE_CORE,
      tenantId: creds.tenantId,
      permissions: creds.permissions,
      client_id: creds.clientId,
      kind: 'workload',
    },
    ttl,
  );
  // Successful machine logins come at thousands per second: tallied (one chained event per
  // client per flush window with its count), failures stay one event each.
  ctx.audit.tally({
    tenantId: creds.tenantId,
    actor: clientActor(creds.clientId),
    action: 'auth.token.client_credentials',
    outcome: 'success',
  });
  return {
    access_token: token,
    token_type: 'Bearer',
    expires_in: ttl,
    passwordChangeEligible: false,
  };
}

export const grant: Grant = {
  parameters,
  authenticatesClient: true,
  // The budget of the client named at this address, whichever way it authenticates.
  rateKey: (ctx, form, address, client) =>
    clientRateKey(ctx, client?.clientId ?? form.client_id, address),
  run: (ctx, form, address, client) =>
    clientCredentialsGrant(ctx, form, address, client ?? undefined),
};
