"""hvac (Debian's python3-hvac) against Keyward's Vault Transit API: AppRole login with a
workload's client credential, every Transit path hvac wraps, and the errors as Vault answers them.
Signatures are also checked with python3-cryptography from the public keys hvac reads.

Prints one JSON object of results for the jest test that spawns it (vault-transit/hvac.test.ts).
"""
import base64
import json
import sys

import hvac
from hvac import exceptions
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

url, role_id, secret_id, other_token, other_ciphertext = sys.argv[1:6]
client = hvac.Client(url=url)
client.auth.approle.login(role_id=role_id, secret_id=secret_id)
transit = client.secrets.transit
out = {}


def b64(s):
    return base64.b64encode(s.encode()).decode()


def text(s):
    return base64.b64decode(s).decode()


def err(fn, *a, **kw):
    try:
        fn(*a, **kw)
        return None
    except exceptions.VaultError as e:
        return [type(e).__name__, e.errors]


out["lookup"] = {k: client.auth.token.lookup_self()["data"][k] for k in ("renewable", "type")}

transit.create_key(name="orders")
key = transit.read_key(name="orders")["data"]
out["key"] = [key["type"], key["latest_version"], sorted(key["keys"])]
ct = transit.encrypt_data(name="orders", plaintext=b64("invoice 42"))["data"]["ciphertext"]
out["decrypted"] = text(transit.decrypt_data(name="orders", ciphertext=ct)["data"]["plaintext"])
batch = transit.encrypt_data(
    name="orders", plaintext="", batch_input=[{"plaintext": b64("a")}, {"plaintext": b64("b")}]
)["data"]["batch_results"]
opened = transit.decrypt_data(
    name="orders", ciphertext="", batch_input=[{"ciphertext": r["ciphertext"]} for r in batch]
)["data"]["batch_results"]
out["batch"] = [text(r["plaintext"]) for r in opened]
# hvac lists with the LIST method, which Node's HTTP parser does not take: Vault's GET ?list=true.
out["listed"] = "orders" in client.adapter.get("/v1/transit/keys", params={"list": "true"})["data"]["keys"]

transit.create_key(name="derived", derived=True)
ctx = b64("customer-7")
dct = transit.encrypt_data(name="derived", plaintext=b64("x"), context=ctx)["data"]["ciphertext"]
out["derived"] = text(transit.decrypt_data(name="derived", ciphertext=dct, context=ctx)["data"]["plaintext"])
out["derived_no_context"] = err(transit.encrypt_data, name="derived", plaintext=b64("x"))[0]
out["derived_wrong_context"] = err(transit.decrypt_data, name="derived", ciphertext=dct, context=b64("other"))

v1 = ct
transit.rotate_key(name="orders")
out["latest"] = transit.read_key(name="orders")["data"]["latest_version"]
v2 = transit.encrypt_data(name="orders", plaintext=b64("new"))["data"]["ciphertext"]
out["v2"] = v2.split(":")[1]
out["old_decrypts"] = text(transit.decrypt_data(name="orders", ciphertext=v1)["data"]["plaintext"])
rewrapped = transit.rewrap_data(name="orders", ciphertext=v1)["data"]["ciphertext"]
out["rewrapped"] = [rewrapped.split(":")[1], text(transit.decrypt_data(name="orders", ciphertext=rewrapped)["data"]["plaintext"])]
transit.update_key_configuration(name="orders", min_decryption_version=2)
out["retired"] = err(transit.decrypt_data, name="orders", ciphertext=v1)
transit.update_key_configuration(name="orders", min_decryption_version=1)

dk = transit.generate_data_key(name="orders", key_type="plaintext", bits=256)["data"]
out["datakey"] = [
    len(base64.b64decode(dk["plaintext"])),
    transit.decrypt_data(name="orders", ciphertext=dk["ciphertext"])["data"]["plaintext"] == dk["plaintext"],
    "plaintext" in transit.generate_data_key(name="orders", key_type="wrapped")["data"],
]

client.write("transit/keys/macs", type="hmac")
mac = transit.generate_hmac(name="macs", hash_input=b64("payload"))["data"]["hmac"]
out["hmac"] = [
    transit.verify_signed_data(name="macs", hash_input=b64("payload"), hmac=mac)["data"]["valid"],
    transit.verify_signed_data(name="macs", hash_input=b64("other"), hmac=mac)["data"]["valid"],
]

message = b"release 1.2.3"
transit.create_key(name="ec", key_type="ecdsa-p256")
sig = transit.sign_data(name="ec", hash_input=base64.b64encode(message).decode())["data"]["signature"]
pem = transit.read_key(name="ec")["data"]["keys"]["1"]["public_key"]
pub = serialization.load_pem_public_key(pem.encode())
pub.verify(base64.b64decode(sig.split(":")[2]), message, ec.ECDSA(hashes.SHA256()))
out["ec"] = transit.verify_signed_data(name="ec", hash_input=base64.b64encode(message).decode(), signature=sig)["data"]["valid"]
transit.create_key(name="ed", key_type="ed25519")
sig = transit.sign_data(name="ed", hash_input=base64.b64encode(message).decode())["data"]["signature"]
raw = base64.b64decode(transit.read_key(name="ed")["data"]["keys"]["1"]["public_key"])
ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(base64.b64decode(sig.split(":")[2]), message)
out["ed"] = [
    transit.verify_signed_data(name="ed", hash_input=base64.b64encode(message).decode(), signature=sig)["data"]["valid"],
    transit.verify_signed_data(name="ed", hash_input=b64("tampered"), signature=sig)["data"]["valid"],
]

out["random"] = len(base64.b64decode(transit.generate_random_bytes(n_bytes=24)["data"]["random_bytes"]))
out["hash"] = transit.hash_data(hash_input=b64("abc"), algorithm="sha2-256")["data"]["sum"]

out["unknown_key"] = err(transit.encrypt_data, name="nope", plaintext=b64("x"))
out["unknown_read"] = err(transit.read_key, name="nope")[0]
out["bad_ciphertext"] = err(transit.decrypt_data, name="orders", ciphertext="vault:v1:bm90IGEgY2lwaGVydGV4dA==")
out["wrong_tenant"] = err(transit.decrypt_data, name="orders", ciphertext=other_ciphertext)
out["unsupported_type"] = err(transit.create_key, name="chacha", key_type="chacha20-poly1305")
out["delete_refused"] = err(transit.delete_key, name="orders")
transit.create_key(name="doomed")
transit.update_key_configuration(name="doomed", deletion_allowed=True)
transit.delete_key(name="doomed")
out["deleted"] = err(transit.read_key, name="doomed")[0]
stranger = hvac.Client(url=url, token=other_token)  # a token no service issued
out["invalid_token"] = err(
    stranger.secrets.transit.encrypt_data, name="orders", plaintext=b64("x")
)
print(json.dumps(out))
