/** A tenant role as the API takes and answers it. */
import Type, { type Static } from 'typebox';
import { Body, Resource, Time, Uuid } from './common.ts';

const name = () =>
  Type.String({ description: '1 to 200 characters, trimmed; unique in the tenant' });
const permissions = () =>
  Type.Array(Type.String(), {
    description:
      'catalogue permissions (GET /api/v3/admin/platform/scopes); admin.platform.* only in the platform tenant',
  });

export const Role = Resource(
  {
    id: Uuid(),
    tenantId: Uuid(),
    name: Type.String(),
    permissions: Type.Array(Type.String()),
    createdAt: Time(),
  },
  {
    id: '5c0e8b1a-2d3f-4a6b-9c7d-8e9f0a1b2c3d',
    tenantId: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
    name: 'encryptor',
    permissions: ['crypto.encrypt', 'crypto.decrypt', 'crypto.keys.read'],
    createdAt: '2026-11-23T16:00:00.000Z',
  },
);

export type RoleView = Static<typeof Role>;

/** The body of createRole. */
export const NewRole = Body(
  { name: name(), permissions: permissions() },
  { name: 'encryptor', permissions: ['crypto.encrypt', 'crypto.decrypt', 'crypto.keys.read'] },
);
export type NewRoleBody = Static<typeof NewRole>;

/** The body of updateRole. */
export const RoleChange = Body(
  { name: Type.Optional(name()), permissions: Type.Optional(permissions()) },
  { permissions: ['crypto.encrypt', 'crypto.keys.read'] },
);
export type RoleChangeBody = Static<typeof RoleChange>;
