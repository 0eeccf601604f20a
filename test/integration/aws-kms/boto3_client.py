"""boto3 against Keyward's AWS KMS API: the control plane, success and error paths, and the error
path of every operation whose other clients' tests call only its success path.

Prints one JSON line of results for the jest test that spawns it (aws-kms/cli-boto3.test.ts).
"""
import json
import sys

import boto3
from botocore.exceptions import ClientError

endpoint, region = sys.argv[1], sys.argv[2]
kms = boto3.client("kms", endpoint_url=endpoint, region_name=region)
out = {}


def err(fn, **kw):
    try:
        fn(**kw)
        return None
    except ClientError as e:
        return [e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]]


kid = kms.create_key(Description="boto3", Tags=[{"TagKey": "team", "TagValue": "a"}])["KeyMetadata"]["KeyId"]
kms.create_alias(AliasName="alias/boto3", TargetKeyId=kid)
out["alias_dup"] = err(kms.create_alias, AliasName="alias/boto3", TargetKeyId="key/" + kid)
ct = kms.encrypt(KeyId="alias/boto3", Plaintext=b"via alias", EncryptionContext={"a": "b"})["CiphertextBlob"]
out["decrypted"] = kms.decrypt(CiphertextBlob=ct, EncryptionContext={"a": "b"})["Plaintext"].decode()
out["aliases"] = [a["AliasName"] for a in kms.list_aliases(KeyId=kid)["Aliases"]]
kms.delete_alias(AliasName="alias/boto3")
out["alias_gone"] = err(kms.describe_key, KeyId="alias/boto3")
out["keys"] = kid in [k["KeyId"] for k in kms.list_keys()["Keys"]]
# Debian's boto3 1.26 predates RotationPeriodInDays, RotateKeyOnDemand and ListKeyRotations
# (the SDK v3 test calls those).
kms.enable_key_rotation(KeyId=kid)
out["rotation"] = kms.get_key_rotation_status(KeyId=kid)["KeyRotationEnabled"]
# The default tenant policy rotates every key: the key's own period cannot switch that off.
out["rotation_off"] = err(kms.disable_key_rotation, KeyId=kid)
kms.tag_resource(KeyId=kid, Tags=[{"TagKey": "env", "TagValue": "prod"}])
kms.untag_resource(KeyId=kid, TagKeys=["team"])
out["tags"] = kms.list_resource_tags(KeyId=kid)["Tags"]
sched = kms.schedule_key_deletion(KeyId=kid, PendingWindowInDays=7)
out["scheduled"] = sched["KeyState"]
out["pending_describe"] = kms.describe_key(KeyId=kid)["KeyMetadata"]["KeyState"]
out["encrypt_pending"] = err(kms.encrypt, KeyId=kid, Plaintext=b"x")
out["window_bad"] = err(kms.schedule_key_deletion, KeyId=kid, PendingWindowInDays=3)
kms.cancel_key_deletion(KeyId=kid)
out["cancelled"] = kms.describe_key(KeyId=kid)["KeyMetadata"]["KeyState"]
out["cancel_again"] = err(kms.cancel_key_deletion, KeyId=kid)
# What scripts call after a cancellation: EnableKey (the key stays Disabled until then, as in AWS).
kms.enable_key(KeyId=kid)
out["enabled"] = kms.describe_key(KeyId=kid)["KeyMetadata"]["KeyState"]
kms.disable_key(KeyId=kid)
out["disabled"] = kms.describe_key(KeyId=kid)["KeyMetadata"]["KeyState"]
out["encrypt_disabled"] = err(kms.encrypt, KeyId=kid, Plaintext=b"x")
kms.enable_key(KeyId=kid)
kms.update_key_description(KeyId=kid, Description="renamed")
out["description"] = kms.describe_key(KeyId=kid)["KeyMetadata"]["Description"]
policy = kms.get_key_policy(KeyId=kid, PolicyName="default")
out["policy_actions"] = [s["Action"] for s in json.loads(policy["Policy"])["Statement"]]
out["policy_names"] = kms.list_key_policies(KeyId=kid)["PolicyNames"]
out["policy_other"] = err(kms.get_key_policy, KeyId=kid, PolicyName="other")
out["grants"] = kms.list_grants(KeyId=kid)["Grants"]
other = kms.create_key()["KeyMetadata"]["KeyId"]
kms.create_alias(AliasName="alias/boto3-moving", TargetKeyId=kid)
kms.update_alias(AliasName="alias/boto3-moving", TargetKeyId=other)
out["alias_moved"] = kms.describe_key(KeyId="alias/boto3-moving")["KeyMetadata"]["KeyId"] == other
out["unknown_key"] = err(kms.describe_key, KeyId="nope")

# Error paths: one for each operation the other tests call only with success (every
# operation with success and error paths, through a client made by AWS).
aes = kms.create_key()["KeyMetadata"]["KeyId"]
signer = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
blob = kms.encrypt(KeyId=aes, Plaintext=b"x")["CiphertextBlob"]
out["errors"] = {
    "re_encrypt": err(kms.re_encrypt, CiphertextBlob=blob, DestinationKeyId="nope"),
    "data_key_without_plaintext": err(
        kms.generate_data_key_without_plaintext, KeyId=signer, KeySpec="AES_256"
    ),
    "data_key_pair_without_plaintext": err(
        kms.generate_data_key_pair_without_plaintext, KeyId="nope", KeyPairSpec="RSA_2048"
    ),
    "sign": err(kms.sign, KeyId=aes, Message=b"m", SigningAlgorithm="ECDSA_SHA_256"),
    "random": err(kms.generate_random, NumberOfBytes=2048),
    "list_keys": err(kms.list_keys, Limit=1001),
    "list_aliases": err(kms.list_aliases, Marker="not-ours"),
    "list_aliases_unknown_key": err(kms.list_aliases, KeyId="nope"),
    "rotation_status": err(kms.get_key_rotation_status, KeyId="alias/none"),
    "rotation_status_asymmetric": err(kms.get_key_rotation_status, KeyId=signer),
    "enable_rotation": err(kms.enable_key_rotation, KeyId=signer),
    "create_key": err(kms.create_key, KeySpec="HMAC_999"),
    "delete_alias": err(kms.delete_alias, AliasName="alias/none"),
    "tag": err(kms.tag_resource, KeyId="nope", Tags=[{"TagKey": "a", "TagValue": "b"}]),
    "untag": err(kms.untag_resource, KeyId="nope", TagKeys=["a"]),
    "list_tags": err(kms.list_resource_tags, KeyId="nope"),
    "enable_key": err(kms.enable_key, KeyId="nope"),
    "disable_key": err(kms.disable_key, KeyId="nope"),
    "update_alias": err(kms.update_alias, AliasName="alias/none", TargetKeyId=aes),
    "update_description": err(kms.update_key_description, KeyId="nope", Description="x"),
    "list_grants": err(kms.list_grants, KeyId="nope"),
    "list_key_policies": err(kms.list_key_policies, KeyId="nope"),
}
print(json.dumps(out))
