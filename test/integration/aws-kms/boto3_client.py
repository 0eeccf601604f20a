"""boto3 against Keyward's AWS KMS API: the control plane, success and error paths.

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
out["unknown_key"] = err(kms.describe_key, KeyId="nope")
print(json.dumps(out))
