/** A tenant whose workload holds an access key, for the AWS KMS API tests. */
import { adminToken, api, makeTenant, type TestTenant } from '../../../support/auth.ts';
import type { TestApp } from '../../../support/app.ts';

/** Every permission the AWS operations map to (docs/aws-kms.md). */
export const AWS_PERMISSIONS = [
  'crypto.encrypt',
  'crypto.decrypt',
  'crypto.sign',
  'crypto.verify',
  'crypto.generate-data-key',
  'crypto.keys.read',
  'admin.keys.create',
  'admin.keys.update',
  'admin.keys.rotate',
  'admin.keys.revoke',
  'admin.keys.resume',
  'admin.keys.suspend',
];

export interface AwsTenant extends TestTenant {
  workloadId: string;
  accessKeyId: string;
  secretAccessKey: string;
  admin: string;
}

/** A tenant, its workload's access key, and the platform administrator's token. */
export async function awsTenant(app: TestApp, permissions = AWS_PERMISSIONS): Promise<AwsTenant> {
  const t = await makeTenant(app, permissions);
  const admin = await adminToken(app);
  const base = `/api/v3/admin/tenants/${t.tenantId}/workloads`;
  const list = await api(app, 'GET', base, admin);
  const workloadId = (list.body.items as Array<{ id: string }>)[0].id;
  const created = await api(app, 'POST', `${base}/${workloadId}/access-keys`, admin, {});
  if (created.status !== 201) throw new Error(`access key: ${JSON.stringify(created.body)}`);
  return {
    ...t,
    workloadId,
    admin,
    accessKeyId: created.body.accessKeyId as string,
    secretAccessKey: created.body.secretAccessKey as string,
  };
}
