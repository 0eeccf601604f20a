/**
 * What a verified access key stands for: its workload, as its OAuth tokens carry it. Apart from
 * the resolver (api/services/auth/access-keys.ts) so that the context's type names it without
 * importing the service.
 */
export interface AccessKeyHolder {
  accessKeyId: string;
  secret: Buffer;
  tenantId: string;
  workloadId: string;
  clientId: string;
  permissions: string[];
  usable: boolean;
  loadedAt: number;
}
