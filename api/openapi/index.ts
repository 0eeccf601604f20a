/**
 * The OpenAPI 3.1 document: every path generated from the route table's rows (endpoints.ts);
 * written by hand here are only the document's frame, the tag groups of the rendered reference,
 * and the shared components and examples (components.ts, problem-examples.ts).
 */
import { components } from './components.ts';
import { endpointPaths, type RowArea } from './endpoints.ts';
import { withProblemExamples } from './problem-examples.ts';

/**
 * The tags of the operations, grouped by API for the rendered reference (Redoc's x-tagGroups:
 * an operation whose tag is in no group is not shown, so the test checks every tag is here).
 */
const TAG_GROUPS: ReadonlyArray<{ name: string; tags: ReadonlyArray<readonly [string, string]> }> =
  [
    {
      name: 'Auth',
      tags: [
        [
          'auth',
          'OAuth 2.0 token endpoint, revocation, introspection, password reset, JWKS and metadata. Errors in the OAuth shape.',
        ],
      ],
    },
    {
      name: 'Core',
      tags: [
        [
          'crypto',
          "Runtime cryptography with the token's tenant keys (`service-core` token): single requests or batches of up to 1000, and the streaming re-encrypt and re-sign of migration results.",
        ],
        [
          'aws-kms',
          'The AWS KMS API (awsJson1_1, SigV4 with workload access keys) for AWS CLI, SDK and Encryption SDK clients.',
        ],
        [
          'vault-transit',
          "The Vault Transit API (/v1/transit/..., or a tenant's own mounts in place of transit; X-Vault-Token) for hvac, node-vault, SOPS and Vault's and OpenBao's transit seal.",
        ],
        [
          'pqc',
          'Post-quantum operations: ML-KEM and ML-KEM hybrid encapsulation, ML-DSA and SLH-DSA signatures.',
        ],
      ],
    },
    {
      name: 'Admin',
      tags: [
        [
          'platform',
          'Platform operations (platform tenant only): tenants, permissions, token revocation, signing keys.',
        ],
        ['tenants', "A tenant's own record."],
        ['workloads', 'Applications of a tenant and their client secrets.'],
        ['roles', 'Roles: named sets of permissions.'],
        ['users', 'Human users of a tenant.'],
        ['policies', "Policy templates and a tenant's effective policy."],
        [
          'keys',
          'Key lifecycle: create, import, rotate, suspend, resume, revoke, archive, bulk orchestration, public keys.',
        ],
        [
          'cryptographic-exchanges',
          'Offering keys to another tenant, and accepting or rejecting offers.',
        ],
      ],
    },
    {
      name: 'Audit',
      tags: [['audit', "The tenant's hash-chained audit events, chain verification and head."]],
    },
    {
      name: 'Migration',
      tags: [
        ['migration', 'Streaming PKCS#7/CMS analysis and conversion to JOSE, and keystore import.'],
        [
          'migration jobs',
          'Uploads to object storage and queued conversion jobs (needs REDIS_URL).',
        ],
        [
          'migrations',
          'Durable migrations of any size: a ledger row per object, chunks in flight on the queue, pause, resume, retry and a report (needs REDIS_URL and workers).',
        ],
      ],
    },
    {
      name: 'Legacy',
      tags: [
        [
          'legacy',
          'The unversioned API: JSON login, key management and runtime operations under legacy role names.',
        ],
      ],
    },
    {
      name: 'Operations',
      tags: [['system', 'Health, readiness, metrics and this documentation.']],
    },
  ];

/**
 * Builds the document for a deployment's public base URL from the route table's rows (`areas`).
 */
export function openApiDocument(
  baseUrl: string,
  areas: readonly RowArea[],
): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Keyward',
      version: '3.0.0',
      description:
        'Multi-tenant key management and cryptography: OAuth 2.0 auth, admin, runtime crypto, PQC, audit and streaming PKCS#7/CMS to JOSE migration. Errors are RFC 7807 problem details whose `type` is `{base}/problems/<slug>`.',
    },
    servers: [{ url: baseUrl }],
    tags: TAG_GROUPS.flatMap((g) => g.tags.map(([name, description]) => ({ name, description }))),
    'x-tagGroups': TAG_GROUPS.map((g) => ({ name: g.name, tags: g.tags.map(([name]) => name) })),
    paths: withProblemExamples(endpointPaths(areas), baseUrl),
    components,
    security: [{ bearer: [] }],
  };
}
