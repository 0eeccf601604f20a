/** A tenant's workloads and their AWS access keys as the API answers them (never a secret but once). */
import Type, { type Static } from 'typebox';
import { Body, Resource, Time, Uuid } from './common.ts';

const AT = '2026-11-23T16:00:00.000Z';
export const WORKLOAD_EXAMPLE = {
  id: '0d4e6f8a-1b3c-4d5e-8f9a-0b1c2d3e4f5a',
  tenantId: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
  name: 'billing-service',
  clientId: '6f1c2b9e-3d4a-4f7b-9a51-0c8e2d7f4b10',
  roleId: '5c0e8b1a-2d3f-4a6b-9c7d-8e9f0a1b2c3d',
  disabled: false,
  createdAt: AT,
};
export const SECRET_EXAMPLE = '9d2f4e1a-7b3c-4a5d-8e6f-1a2b3c4d5e6f';

const WORKLOAD = {
  id: Uuid(),
  tenantId: Uuid(),
  name: Type.String(),
  clientId: Uuid('the OAuth client_id it logs in with'),
  roleId: Uuid(),
  disabled: Type.Boolean(),
  createdAt: Time(),
};
export const Workload = Resource(WORKLOAD, WORKLOAD_EXAMPLE);
export const NewWorkload = Resource(
  { ...WORKLOAD, clientSecret: Uuid('the client secret, shown only here') },
  { ...WORKLOAD_EXAMPLE, clientSecret: SECRET_EXAMPLE },
);

/** AWS access key ids (api/services/auth/access-keys.ts ACCESS_KEY_ID): KWAK and 16 base32 characters. */
export const ACCESS_KEY_ID = '^KWAK[A-Z2-7]{16}$';
export const ACCESS_KEY_EXAMPLE = {
  accessKeyId: 'KWAKJ7Q2M4XRZB6T3N5P',
  workloadId: WORKLOAD_EXAMPLE.id,
  createdAt: AT,
};
const ACCESS_KEY = {
  accessKeyId: Type.String({ pattern: ACCESS_KEY_ID }),
  workloadId: Uuid(),
  createdAt: Time(),
};
const AccessKey = Resource(ACCESS_KEY, ACCESS_KEY_EXAMPLE);
export const AccessKeys = Resource(
  { items: Type.Array(AccessKey) },
  { items: [ACCESS_KEY_EXAMPLE] },
);
export const NewAccessKey = Resource(
  { ...ACCESS_KEY, secretAccessKey: Type.String({ description: 'shown only here' }) },
  { ...ACCESS_KEY_EXAMPLE, secretAccessKey: 'c2VjcmV0IGFjY2VzcyBrZXkgc2hvd24gb25jZQ==' },
);

export type WorkloadView = Static<typeof Workload>;
export type AccessKeyView = Static<typeof AccessKey>;

/** The body of createWorkload. */
export const NewWorkloadRequest = Body(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'unique in the tenant' }),
    roleId: Uuid('a role of this tenant'),
  },
  { name: WORKLOAD_EXAMPLE.name, roleId: WORKLOAD_EXAMPLE.roleId },
);
export type NewWorkloadBody = Static<typeof NewWorkloadRequest>;
