"""`/users/ssh-keys`: the SSH public keys of the caller (swagger `SSHKey`, `CreateSSHKeyRequest`,
`ListSSHKeysResponseV1Alpha5`, `CreateSSHKeyResponse`). The real keys belong to the user behind the access key;
the mock keeps them per organisation (every key of the mock is one organisation's). POST answers
`{"ssh_key": SSHKey}`, GET `{"items": [...]}`, DELETE `?id=` an empty 200 (404 when there is no such key).
Fingerprints are OpenSSH's: MD5 as colon-separated hex, SHA-256 as unpadded base64 of the key blob.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import uuid
from datetime import UTC, datetime
from typing import Any

from ..http import Response
from .access import Call
from .errors import bad_request, not_found
from .instances import SSH_KEY_PATTERN
from .models import _Body

_KEYS = "crusoe_ssh_keys"  # world.state.extra_state: organisation id -> list of keys


class CreateSSHKeyRequest(_Body):
    name: str
    public_key: str


def _keys(call: Call) -> list[dict[str, Any]]:
    table = call.world.state.extra_state.setdefault(_KEYS, {})
    assert isinstance(table, dict)
    keys: list[dict[str, Any]] = table.setdefault(call.owner, [])
    return keys


def fingerprints(public_key: str) -> dict[str, str]:
    data = public_key.split()[1]
    blob = base64.b64decode(data + "=" * (-len(data) % 4))
    md5 = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return {"md5": ":".join(md5[i:i + 2] for i in range(0, 32, 2)),
            "sha256": base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")}


def create_ssh_key(call: Call) -> Response:
    body: CreateSSHKeyRequest = call.body(CreateSSHKeyRequest)
    key = body.public_key.strip()
    if not body.name.strip():
        raise bad_request("name must not be empty")
    if not SSH_KEY_PATTERN.match(key):
        raise bad_request("invalid public_key")
    try:
        prints = fingerprints(key)
    except (binascii.Error, ValueError) as exc:
        raise bad_request("invalid public_key") from exc
    if any(k["name"] == body.name for k in _keys(call)):
        raise bad_request(f"an ssh key named {body.name!r} already exists")
    stamp = datetime.fromtimestamp(call.world.now(), UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    record = {"id": str(uuid.uuid4()), "name": body.name, "public_key": key, "created_at": stamp,
              "fingerprints": prints}
    _keys(call).append(record)
    return Response(200, {"ssh_key": record})


def list_ssh_keys(call: Call) -> Response:
    return Response(200, {"items": list(_keys(call))})


def delete_ssh_key(call: Call) -> Response:
    key_id = call.query("id")
    keys = _keys(call)
    found = next((k for k in keys if k["id"] == key_id), None)
    if found is None:
        raise not_found(f"ssh key {key_id} not found")
    keys.remove(found)
    return Response(200, {})
