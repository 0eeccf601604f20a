/** A force-revoked access token as the platform's revocation list answers it. */
import Type, { type Static } from 'typebox';
import { Body, NullableString, Resource, Time } from './common.ts';

export const JTI_EXAMPLE = 'b7e2c0d4-9f1a-4c3b-8d5e-6a7b8c9d0e1f';

export const RevokedToken = Resource(
  {
    jti: Type.String(),
    tenantId: NullableString(),
    sub: NullableString(),
    expiresAt: Time(),
    revokedAt: Time(),
    revokedBy: NullableString(),
    reason: Type.String(),
  },
  {
    jti: JTI_EXAMPLE,
    tenantId: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
    sub: '6f1c2b9e-3d4a-4f7b-9a51-0c8e2d7f4b10',
    expiresAt: '2026-11-24T02:00:00.000Z',
    revokedAt: '2026-11-23T16:00:00.000Z',
    revokedBy: 'user:root@keyward.test',
    reason: 'leaked in a build log',
  },
);

export type RevokedTokenView = Static<typeof RevokedToken>;

/** The body of revokeAnyToken. */
export const ForceRevoke = Body(
  {
    jti: Type.Optional(Type.String({ maxLength: 128, description: 'used when `token` is absent' })),
    token: Type.Optional(Type.String({ description: 'the token itself' })),
    reason: Type.Optional(
      Type.String({ description: 'kept to its first 200 characters; force-revoke if absent' }),
    ),
  },
  { jti: JTI_EXAMPLE, reason: 'leaked in a build log' },
);
export type ForceRevokeBody = Static<typeof ForceRevoke>;

/** The query of listRevokedTokens. */
export const RevokedTokensQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ default: 100, description: 'page size, clamped to 1 to 500' }),
  ),
  cursor: Type.Optional(
    Type.String({ description: 'nextCursor of the previous page (the last jti it listed)' }),
  ),
});
export type RevokedTokensQueryValue = Static<typeof RevokedTokensQuery>;
