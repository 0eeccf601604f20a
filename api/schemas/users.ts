/** A tenant's human user as the API takes and answers it (never the password hash). */
import Type, { type Static } from 'typebox';
import { Body, NullableTime, Resource, Time, Uuid } from './common.ts';

const USER_EXAMPLE = {
  id: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d',
  tenantId: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
  email: 'ops@acme.example',
  roleId: '5c0e8b1a-2d3f-4a6b-9c7d-8e9f0a1b2c3d',
  disabled: false,
  lockedUntil: null,
  createdAt: '2026-11-23T16:00:00.000Z',
  updatedAt: '2026-11-23T16:00:00.000Z',
};

export const User = Resource(
  {
    id: Uuid(),
    tenantId: Uuid(),
    email: Type.String({ format: 'email' }),
    roleId: Uuid(),
    disabled: Type.Boolean(),
    lockedUntil: Type.Optional(NullableTime()),
    createdAt: Type.Optional(Time()),
    updatedAt: Type.Optional(Time()),
  },
  USER_EXAMPLE,
);

export type UserView = Static<typeof User>;

/** The body of createUser. */
export const NewUser = Body(
  {
    email: Type.String({ maxLength: 254, description: 'an e-mail address' }),
    password: Type.String({ minLength: 12, writeOnly: true }),
    roleId: Uuid('a role of this tenant'),
  },
  {
    email: USER_EXAMPLE.email,
    password: 'correct horse battery staple',
    roleId: USER_EXAMPLE.roleId,
  },
);
export type NewUserBody = Static<typeof NewUser>;

/** The body of updateUser. */
export const UserChange = Body(
  {
    roleId: Type.Optional(Uuid('a role of this tenant')),
    disabled: Type.Optional(Type.Boolean()),
  },
  { disabled: true },
);
export type UserChangeBody = Static<typeof UserChange>;
