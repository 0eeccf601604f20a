/**
 * The route table's shape checked at start (api/routes/index.ts assertAreaAccess): the real
 * table passes, and each misplaced row fails the start naming the row.
 */
import { ROUTE_TABLE, assertAreaAccess, type Area } from '../../../api/routes/index.ts';
import { endpoint } from '../../../api/rows/endpoint.ts';

const answer = { status: 204, description: 'done' } as const;
const row = (access: Parameters<typeof endpoint>[0]['access'], path = '/x') =>
  endpoint({
    method: 'get',
    path,
    operationId: 'probe',
    tag: 'system',
    summary: 'probe',
    access,
    answer,
    handle: () => undefined,
  });

describe('the route table is checked for where its rows stand', () => {
  it('when the real table is checked, then it passes', () => {
    expect(() => assertAreaAccess(ROUTE_TABLE)).not.toThrow();
  });

  it('when an open row stands in an area that checks a bearer token, then the start fails naming it', () => {
    const table: Area[] = [
      {
        prefix: '/api/v3/admin',
        audiences: ['a'],
        mounts: [{ path: '', endpoints: [row({ open: 'probe' })] }],
      },
    ];
    expect(() => assertAreaAccess(table)).toThrow('GET /api/v3/admin/x is open');
  });

  it('when a row needing a token stands in an area that checks none, then the start fails naming it', () => {
    for (const access of [{ anyOf: ['p'] as [string] }, { legacyRole: 'r' }]) {
      const table: Area[] = [
        { prefix: '/pub', audiences: null, mounts: [{ path: '', endpoints: [row(access)] }] },
      ];
      expect(() => assertAreaAccess(table)).toThrow('GET /pub/x needs a token');
    }
  });

  it('when a row names :tenantId outside a tenant-scoped mount, then the start fails naming it', () => {
    const mounts = [{ path: '/tenants/:tenantId', endpoints: [row({ anyOf: ['p'] })] }];
    expect(() => assertAreaAccess([{ prefix: '/api', audiences: ['a'], mounts }])).toThrow(
      ':tenantId',
    );
    expect(() =>
      assertAreaAccess([
        { prefix: '/api', audiences: ['a'], mounts: [{ ...mounts[0], tenantScoped: true }] },
      ]),
    ).not.toThrow();
  });
});
