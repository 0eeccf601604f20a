/**
 * The AWS KMS API's operations (docs/aws-kms.md): each X-Amz-Target operation with
 * the Keyward permissions it needs, its audit action and rate-limit endpoint, and whether it is a
 * runtime operation (run through runRuntime: the metrics, the tallied audit and the
 * decryption-failure budget of the Core API) or a control-plane one (audited as a change).
 */
import type { AppContext } from '../../context.ts';
import type { AwsCaller } from './ids.ts';
import type { ExpensiveDeclaration } from '../../../shared/keys/work-budget.ts';
import * as data from './data-plane.ts';
import * as dataKeys from './data-keys.ts';
import * as control from './control-plane.ts';
import * as rotation from './rotation.ts';
import * as tags from './tags.ts';
import * as keyPolicy from './key-policy.ts';

/** One operation: the caller, its request members and its audit actor → the answer plus `kid`. */
export type AwsRun = (
  ctx: AppContext,
  caller: AwsCaller,
  input: Record<string, unknown>,
  actor: string,
) => Promise<Record<string, unknown>>;

export interface AwsOperation {
  permissions: readonly string[];
  /** Audit action and rate-limit endpoint. */
  action: string;
  /** A runtime operation (tallied audit, budget, metrics) rather than a control-plane change. */
  runtime: boolean;
  /** The caller-costed work it can trigger, like a route row's (docs/expensive-work.md). */
  expensive?: ExpensiveDeclaration;
  run: AwsRun;
}

const op = (permissions: string | readonly string[], run: AwsRun, runtime = true) => ({
  permissions: typeof permissions === 'string' ? [permissions] : permissions,
  run,
  runtime,
});

/** An operation that generates key pairs on the caller's budget of expensive work. */
const generates = <T extends object>(o: T) => ({
  ...o,
  expensive: { kinds: ['key-generation'] } as ExpensiveDeclaration,
});

const READ = 'crypto.keys.read';

// A Map, not an object literal: the target is request input, and an
// object literal would answer `constructor` or `__proto__`.
const TABLE: Array<[string, Omit<AwsOperation, 'action'>]> = [
  ['Encrypt', op('crypto.encrypt', data.encrypt)],
  ['Decrypt', op('crypto.decrypt', data.decrypt)],
  ['ReEncrypt', op(['crypto.decrypt', 'crypto.encrypt'], data.reEncrypt)],
  ['GenerateDataKey', op('crypto.generate-data-key', dataKeys.generateDataKey)],
  [
    'GenerateDataKeyWithoutPlaintext',
    op('crypto.generate-data-key', dataKeys.generateDataKeyWithoutPlaintext),
  ],
  ['GenerateDataKeyPair', generates(op('crypto.generate-data-key', dataKeys.generateDataKeyPair))],
  [
    'GenerateDataKeyPairWithoutPlaintext',
    generates(op('crypto.generate-data-key', dataKeys.generateDataKeyPairWithoutPlaintext)),
  ],
  ['GenerateRandom', op('crypto.generate-data-key', dataKeys.generateRandom)],
  ['GenerateMac', op('crypto.sign', data.generateMacOp)],
  ['VerifyMac', op('crypto.verify', data.verifyMacOp)],
  ['Sign', op('crypto.sign', data.signOp)],
  ['Verify', op('crypto.verify', data.verifyOp)],
  ['GetPublicKey', op(READ, control.getPublicKey)],
  ['DescribeKey', op(READ, control.describeKey, false)],
  ['ListKeys', op(READ, control.listKeys, false)],
  ['ListAliases', op(READ, control.listAliases, false)],
  ['GetKeyRotationStatus', op(READ, rotation.getKeyRotationStatus, false)],
  ['ListKeyRotations', op(READ, rotation.listKeyRotations, false)],
  ['ListResourceTags', op(READ, tags.listResourceTags, false)],
  ['GetKeyPolicy', op(READ, keyPolicy.getKeyPolicy, false)],
  ['ListKeyPolicies', op(READ, keyPolicy.listKeyPolicies, false)],
  ['ListGrants', op(READ, keyPolicy.listGrants, false)],
  ['EnableKeyRotation', op('admin.keys.update', rotation.enableKeyRotation, false)],
  ['DisableKeyRotation', op('admin.keys.update', rotation.disableKeyRotation, false)],
  ['RotateKeyOnDemand', op('admin.keys.rotate', rotation.rotateKeyOnDemand, false)],
  ['CreateKey', generates(op('admin.keys.create', control.createKeyOp, false))],
  ['CreateAlias', op('admin.keys.update', control.createAlias, false)],
  ['UpdateAlias', op('admin.keys.update', control.updateAlias, false)],
  ['DeleteAlias', op('admin.keys.update', control.deleteAlias, false)],
  ['UpdateKeyDescription', op('admin.keys.update', control.updateKeyDescription, false)],
  ['TagResource', op('admin.keys.update', tags.tagResource, false)],
  ['UntagResource', op('admin.keys.update', tags.untagResource, false)],
  ['ScheduleKeyDeletion', op('admin.keys.revoke', control.scheduleKeyDeletion, false)],
  ['CancelKeyDeletion', op('admin.keys.resume', control.cancelKeyDeletion, false)],
  ['EnableKey', op('admin.keys.resume', control.enableKey, false)],
  ['DisableKey', op('admin.keys.suspend', control.disableKey, false)],
];

/** Every operation by its X-Amz-Target name (`TrentService.<name>`). */
export const AWS_OPERATIONS: ReadonlyMap<string, AwsOperation> = new Map(
  TABLE.map(([name, o]) => [name, { ...o, action: `aws-kms.${name}` }]),
);
