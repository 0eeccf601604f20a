/** A durable migration as the API answers it: state, source, output, counts, rate and ETA. */
import Type, { type Static } from 'typebox';
import { NullableTime, Time } from './common.ts';

export const MIGRATION_ID = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b';

export const Count = Type.Integer({ minimum: 0 });
export const State = Type.Union(
  [
    Type.Literal('running'),
    Type.Literal('paused'),
    Type.Literal('cancelled'),
    Type.Literal('completed'),
  ],
  { description: '`completed` once the listing is done and every object is converted or refused' },
);
export const Source = Type.Union([
  Type.Object(
    {
      prefix: Type.String({
        description:
          'every object under it, listed page by page as the migration goes (any number)',
      }),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      manifest: Type.String({
        description: 'an object of your storage area listing one source key per line',
      }),
    },
    { additionalProperties: false },
  ),
]);
export const EXAMPLE = {
  id: MIGRATION_ID,
  state: 'running',
  source: { prefix: 'archive/' },
  output: { prefix: 'converted/' },
  metadata: { targetKid: 'archive-2026' },
  rateLimit: 200,
  listing: { done: true },
  counts: { listed: 120000, converted: 80000, refused: 12, pending: 39988, bytesRead: 245760000 },
  objectsPerSecond: 185.4,
  etaSeconds: 216,
  createdAt: '2026-11-23T16:00:00.000Z',
  updatedAt: '2026-11-23T16:07:12.000Z',
  completedAt: null,
};
export const Migration = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    state: State,
    source: Source,
    output: Type.Object({ prefix: Type.String() }),
    metadata: Type.Object({}),
    rateLimit: Type.Integer({
      minimum: 0,
      description: 'objects per second; 0: no limit of its own',
    }),
    listing: Type.Object({ done: Type.Boolean() }),
    counts: Type.Object({
      listed: Count,
      converted: Count,
      refused: Count,
      pending: Count,
      bytesRead: Count,
    }),
    objectsPerSecond: Type.Number({
      minimum: 0,
      description: 'objects finished per second since creation',
    }),
    etaSeconds: Type.Union([Count, Type.Null()], {
      description: 'seconds left at that rate; null while the listing runs or nothing finished',
    }),
    createdAt: Time(),
    updatedAt: Time(),
    completedAt: NullableTime(),
  },
  { examples: [EXAMPLE] },
);

export type MigrationView = Static<typeof Migration>;
