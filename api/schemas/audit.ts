/** An audit event as the audit endpoints answer it, and the chain's hash and sequence types. */
import Type, { type Static } from 'typebox';
import { NullableString, Resource, Time } from './common.ts';

export const HASH = 'c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2';
export const Seq = (description?: string) =>
  Type.Integer({ minimum: 0, ...(description ? { description } : {}) });
export const Sha256 = (description = 'hex SHA-256') =>
  Type.String({ pattern: '^[0-9a-f]{64}$', description });
export const OUTCOMES = ['success', 'failure', 'denied'] as const;

export const Event = Resource(
  {
    seq: Type.Integer({ minimum: 1 }),
    at: Time(),
    actor: Type.String(),
    action: Type.String(),
    outcome: Type.Enum(OUTCOMES),
    target: NullableString(),
    details: Type.Object(
      {},
      {
        description:
          '`{count, since}` for tallied runtime operations; `audit.events-lost` events say how many events the service could not keep for this tenant',
      },
    ),
    hash: Sha256(),
    prevHash: Sha256(),
  },
  {
    seq: 45,
    at: '2026-11-23T15:00:00.000Z',
    actor: 'workload:6f1c2b9e-3d4a-4f7b-9a51-0c8e2d7f4b10',
    action: 'crypto.encrypt',
    outcome: 'success',
    target: 'orders',
    details: { count: 1027, since: '2026-11-23T14:59:00.000Z' },
    hash: HASH,
    prevHash: '2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae',
  },
);

export type EventView = Static<typeof Event>;
