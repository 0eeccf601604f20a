/** A cryptographic exchange (a key offered by one tenant to another) as either side sees it. */
import Type, { type Static } from 'typebox';
import { NullableString, NullableTime, Resource, Time, Uuid } from './common.ts';

export const STATES = ['pending', 'accepted', 'rejected', 'cancelled', 'expired'] as const;

export const Exchange = Resource(
  {
    id: Uuid(),
    direction: Type.Enum(['outgoing', 'incoming'], {
      description: 'relative to the tenant of the path',
    }),
    fromTenantId: Uuid(),
    toTenantId: Uuid(),
    kid: Type.String({ description: 'the offered key in the offering tenant' }),
    version: Type.Integer(),
    type: Type.String(),
    usage: Type.String(),
    mode: Type.Enum(['public', 'wrapped']),
    wrappingKid: NullableString(),
    state: Type.Enum(STATES, {
      description:
        'cancelled: withdrawn by the offering tenant, or by suspending or revoking the offered key',
    }),
    publicKeySha256: Type.Union([Type.String(), Type.Null()], {
      description: 'base64url SHA-256 of the public key (SPKI DER) to compare out of band',
    }),
    hasCertificate: Type.Boolean(),
    createdAt: Time(),
    expiresAt: Time(),
    decidedAt: NullableTime(),
    acceptedKid: Type.Optional(
      Type.Union([Type.String(), Type.Null()], { description: 'receiving tenant only' }),
    ),
  },
  {
    id: 'e5f6a7b8-c9d0-4e1f-8a2b-3c4d5e6f7a8b',
    direction: 'outgoing',
    fromTenantId: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
    toTenantId: '9b1d7c2e-0a4f-4e5b-8c6d-1f2a3b4c5d6e',
    kid: 'release-signing',
    version: 2,
    type: 'ec-p256',
    usage: 'sign',
    mode: 'public',
    wrappingKid: null,
    state: 'pending',
    publicKeySha256: 'n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg',
    hasCertificate: false,
    createdAt: '2026-11-23T16:00:00.000Z',
    expiresAt: '2026-11-24T16:00:00.000Z',
    decidedAt: null,
    acceptedKid: null,
  },
);

export type ExchangeView = Static<typeof Exchange>;
