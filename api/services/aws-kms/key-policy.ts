/**
 * The key policy and grants as AWS KMS clients read them (docs/aws-kms.md): every key has the
 * default policy only, and no grants; access is the workload's Keyward permissions.
 */
import type { AppContext } from '../../context.ts';
import { AwsError } from './errors.ts';
import { accountOf, keyArn, type AwsCaller } from './ids.ts';
import { keyOf, paging, type Answer, type Input } from './key-access.ts';

/**
 * The one key policy Keyward applies, in AWS's words: AWS's default key policy, which leaves
 * every decision to the caller's identity policy; here that is the workload's Keyward
 * permissions (docs/aws-kms.md). Keyward keeps no other policy, so PutKeyPolicy is not served.
 */
function defaultPolicy(c: AwsCaller): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Id: 'key-default-1',
    Statement: [
      {
        Sid: 'Enable IAM User Permissions',
        Effect: 'Allow',
        Principal: { AWS: `arn:aws:iam::${accountOf(c.tenantId)}:root` },
        Action: 'kms:*',
        Resource: '*',
      },
    ],
  });
}

/** GetKeyPolicy: the default policy, the only one a key has. */
export async function getKeyPolicy(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const name = input.PolicyName ?? 'default';
  if (typeof name !== 'string' || !/^[\w]{1,128}$/.test(name))
    throw new AwsError('ValidationException', 'PolicyName must be 1 to 128 word characters');
  const { kid } = await keyOf(ctx, c, input, actor);
  if (name !== 'default')
    throw new AwsError('NotFoundException', `Key ${keyArn(c, kid)} has no policy named ${name}`);
  return { kid, Policy: defaultPolicy(c), PolicyName: 'default' };
}

/** ListKeyPolicies: `default`, the only policy name a key has. */
export async function listKeyPolicies(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { offset } = paging(input);
  const { kid } = await keyOf(ctx, c, input, actor);
  return { kid, PolicyNames: offset === 0 ? ['default'] : [], Truncated: false };
}

/** ListGrants: Keyward holds no grants (access is the workload's permissions), so an empty list. */
export async function listGrants(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  paging(input);
  const { kid } = await keyOf(ctx, c, input, actor);
  return { kid, Grants: [], Truncated: false };
}
