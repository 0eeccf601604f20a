/**
 * The vocabulary of the route rows' schemas (api/rows/endpoint.ts): TypeBox builders, which are
 * JSON Schema 2020-12 objects with static types, so one declaration validates a request, types
 * its handler and documents it. A resource a service answers has its schema in a file of its own
 * beside this one (users.ts, roles.ts, ...), its type `Static` of it; the others live in the route
 * file that answers them.
 */
import Type, { type Static, type TProperties, type TSchema } from 'typebox';

export const Uuid = (description?: string) =>
  Type.String({ format: 'uuid', ...(description ? { description } : {}) });
export const Time = () => Type.String({ format: 'date-time' });
/** `s` or null. */
export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
export const NullableTime = () => Nullable(Time());
export const NullableString = () => Nullable(Type.String());

/** A request body object: members it does not know are refused, naming the member. */
export const Body = <P extends TProperties>(properties: P, example?: unknown) =>
  Type.Object(properties, {
    additionalProperties: false,
    ...(example === undefined ? {} : { examples: [example] }),
  });

/** A response object with an example the document shows. */
export const Resource = <P extends TProperties>(properties: P, example?: unknown) =>
  Type.Object(properties, example === undefined ? {} : { examples: [example] });

/** A problem document (RFC 7807) inside an answer, its details as extra members. */
export const ProblemDocument = Type.Object(
  {
    type: Type.String({ format: 'uri' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.Optional(Type.String()),
    instance: Type.Optional(Type.String()),
  },
  { description: 'a problem (RFC 7807); its details as extra members' },
);

/** A page of `item`s (api/rows/pagination.ts), its example made from the item's. */
export function PageOf<T extends TSchema>(item: T) {
  const example = (item as { examples?: unknown[] }).examples?.[0];
  return Type.Object(
    {
      items: Type.Array(item),
      nextCursor: Type.Union([Type.String(), Type.Null()], {
        description: 'pass as `cursor` for the next page; null on the last',
      }),
    },
    example === undefined ? {} : { examples: [{ items: [example], nextCursor: null }] },
  );
}

/** The `limit` and `cursor` of a paged list (one reader: api/rows/pagination.ts pageRequest). */
export const PAGE_QUERY = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'page size' }),
  ),
  cursor: Type.Optional(Type.String({ description: 'nextCursor of the previous page' })),
};
export const PageQuery = Type.Object(PAGE_QUERY);

const TENANT_EXAMPLE = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';
const ID_EXAMPLE = '0d4e6f8a-1b3c-4d5e-8f9a-0b1c2d3e4f5a';

/** The path's tenant of a tenant-scoped admin mount (checked by the route table's tenant scope). */
export const TENANT_PARAM = {
  tenantId: Type.String({
    format: 'uuid',
    description: "the tenant; must be the token's unless it holds admin.platform.cross-tenant",
    examples: [TENANT_EXAMPLE],
  }),
};

/** A record id path parameter (`:id`); a value that is not a UUID names nothing (404). */
export const idParam = (what: string) => ({
  id: Type.String({ format: 'uuid', description: `the ${what} id`, examples: [ID_EXAMPLE] }),
});

/** The path parameters of a tenant's record: `{tenantId, id}`. */
export const TenantRecord = (what: string) => Type.Object({ ...TENANT_PARAM, ...idParam(what) });

/** A tenant as the API shows it: answered by the platform's tenant rows and by a tenant's own record. */
export const TenantResource = Resource(
  {
    id: Uuid(),
    name: Type.String(),
    status: Type.Enum(['active', 'suspended']),
    isPlatform: Type.Boolean(),
    createdAt: Time(),
  },
  {
    id: TENANT_EXAMPLE,
    name: 'acme',
    status: 'active',
    isPlatform: false,
    createdAt: '2026-11-23T16:00:00.000Z',
  },
);

export type TenantView = Static<typeof TenantResource>;

/** The body of createTenant. */
export const NewTenant = Body(
  { name: Type.String({ minLength: 1, maxLength: 200, description: 'trimmed' }) },
  { name: 'acme' },
);
export type NewTenantBody = Static<typeof NewTenant>;
