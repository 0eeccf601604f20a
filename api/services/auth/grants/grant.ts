/** What every grant of the token endpoint is: its parameters, its budget key and its run. */
import type { AppContext } from '../../../context.ts';
import { OAuthError } from '../../../../shared/errors/index.ts';
import type { ClientAuth } from '../client-auth.ts';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  passwordChangeEligible?: boolean;
  issued_token_type?: string;
}

/** A grant of the token endpoint: who it spends the budgets of, and the grant itself. */
export interface Grant {
  /** The form parameters the grant reads besides grant_type (node-oidc-provider's `parameters`). */
  parameters: ReadonlySet<string>;
  /** True when the grant authenticates a client (and so reads HTTP Basic credentials). */
  authenticatesClient?: boolean;
  /** The canonical identity being authenticated (client or user at an address, token family, token subject). */
  rateKey(
    ctx: AppContext,
    form: Record<string, string>,
    address: string,
    client?: ClientAuth | null,
  ): Promise<string>;
  run(
    ctx: AppContext,
    form: Record<string, string>,
    address: string,
    client?: ClientAuth | null,
  ): Promise<TokenResponse>;
}

/** invalid_request naming the first of `fields` that is missing or empty. */
export function required(form: Record<string, string>, ...fields: string[]): void {
  for (const f of fields)
    if (typeof form[f] !== 'string' || form[f] === '')
      throw new OAuthError('invalid_request', `${f} is required`);
}
