"""Models decode the documented shapes, tolerate new fields and values, and keep secrets out of reprs."""

from __future__ import annotations

import json

import msgspec
from lambda_sdk.models import (
    Architecture,
    Envelope,
    Filesystem,
    FileSystemMount,
    GeneratedSSHKey,
    Image,
    ImageSpec,
    Instance,
    InstanceStatus,
    InstanceTypeAvailability,
    LaunchRequest,
    Tag,
)

ACTIONS = ("migrate", "rebuild", "restart", "cold_reboot", "terminate")
REGION = {"name": "us-east-1", "description": "Virginia, USA"}
# Trimmed from the SPEC-1.10 terminate example (research lambda.md section 4), file_system_id fixed to 32 hex.
SPEC_INSTANCE = {
    "id": "0920582c7ff041399e34823a0be62549", "name": "My Instance", "ip": "198.51.100.2",
    "private_ip": "10.0.2.100", "status": "terminating", "ssh_key_names": ["My SSH key"],
    "file_system_names": ["my-filesystem"],
    "file_system_mounts": [{"mount_point": "/lambda/nfs/my-filesystem",
                            "file_system_id": "a098b0c7ff041399e34823a0be625490"}],
    "region": {"name": "us-west-1", "description": "California, USA"},
    "instance_type": {"name": "gpu_8x_example", "description": "8x Example GPU (40 GB SXM4)",
                      "gpu_description": "Example GPU (40 GB SXM4)", "price_cents_per_hour": 1592,
                      "specs": {"vcpus": 124, "memory_gib": 1800, "storage_gib": 6144, "gpus": 8}},
    "hostname": "198.51.100.2", "jupyter_token": "03b7secret", "jupyter_url": "https://jupyter-x/?token=03b7secret",
    "is_reserved": False,
    "actions": {a: {"available": True} for a in ACTIONS},
    "tags": [{"key": "key1", "value": "value1"}],
}


def _decode(payload: object, type_: type) -> object:
    return msgspec.json.decode(json.dumps({"data": payload}), type=Envelope[type_]).data


def test_instance_decodes_the_spec_example() -> None:
    inst = _decode(SPEC_INSTANCE, Instance)
    assert inst.status is InstanceStatus.TERMINATING
    assert inst.instance_type.specs.gpus == 8
    assert inst.file_system_mounts[0].file_system_id.startswith("a098")
    assert inst.tags == [Tag("key1", "value1")]
    assert inst.actions.terminate.available


def test_booting_instance_without_optional_fields() -> None:
    booting = {k: v for k, v in SPEC_INSTANCE.items()
               if k not in ("name", "ip", "private_ip", "hostname", "jupyter_token", "jupyter_url",
                            "file_system_mounts", "tags", "is_reserved")}
    booting["status"] = "booting"
    booting["actions"] = {a: {"available": False, "reason_code": "vm-has-not-launched"}
                          for a in ("migrate", "rebuild", "restart", "cold_reboot", "terminate")}
    inst = _decode(booting, Instance)
    assert inst.ip is None and inst.name is None and inst.is_reserved is False
    assert inst.file_system_mounts == [] and inst.actions.restart.reason_code == "vm-has-not-launched"


def test_unknown_status_and_fields_are_tolerated() -> None:
    newer = {**SPEC_INSTANCE, "status": "hibernating", "brand_new_field": {"x": 1}}
    newer["actions"] = {**newer["actions"], "teleport": {"available": True}}
    inst = _decode(newer, Instance)
    assert inst.status is InstanceStatus.UNKNOWN


def test_repr_hides_jupyter_credentials_and_private_keys() -> None:
    inst = _decode(SPEC_INSTANCE, Instance)
    assert "03b7secret" not in repr(inst) and "03b7secret" not in str(inst)
    key = GeneratedSSHKey(id="k", name="n", public_key="ssh-ed25519 AAA", private_key="-----BEGIN SECRET")
    assert "BEGIN SECRET" not in repr(key)


def test_instance_types_map() -> None:
    payload = {"gpu_1x_a10": {"instance_type": SPEC_INSTANCE["instance_type"],
                              "regions_with_capacity_available": [REGION]}}
    types = _decode(payload, dict[str, InstanceTypeAvailability])
    assert types["gpu_1x_a10"].has_capacity("us-east-1")
    assert not types["gpu_1x_a10"].has_capacity("us-west-1")


def test_image_and_filesystem() -> None:
    stamp = "2025-07-02T00:00:00+00:00"
    image = _decode({"id": "15c1034f-5e2e-4b7a-9ebd-8c8847440e1c", "created_time": stamp,
                     "updated_time": stamp, "name": "Lambda Stack 22.04",
                     "description": "Lambda Stack 22.04", "family": "lambda-stack-22-04",
                     "version": "22.4.5-1459", "architecture": "riscv", "region": REGION}, Image)
    assert image.architecture is Architecture.UNKNOWN and image.created_time.year == 2025
    user = {"id": "u", "email": "a@b.c", "status": "active"}
    fs = _decode({"id": "398578a2336b49079e74043f0bd2cfe8", "name": "shared",
                  "mount_point": "/lambda/nfs/shared", "created": "2025-01-01T00:00:00Z", "created_by": user,
                  "is_in_use": False, "region": REGION}, Filesystem)
    assert fs.bytes_used is None and fs.created_by.email == "a@b.c"


def test_launch_request_omits_unset_fields_and_never_sends_quantity() -> None:
    body = msgspec.json.decode(msgspec.json.encode(LaunchRequest(
        region_name="us-east-1", instance_type_name="gpu_1x_a10", ssh_key_names=["me"], name="web",
        image=ImageSpec(family="lambda-stack-22-04"),
        file_system_mounts=[FileSystemMount("/lambda/nfs/x", "f" * 32)],
    )))
    assert body == {
        "region_name": "us-east-1", "instance_type_name": "gpu_1x_a10", "ssh_key_names": ["me"],
        "name": "web",
        "image": {"family": "lambda-stack-22-04"},
        "file_system_mounts": [{"mount_point": "/lambda/nfs/x", "file_system_id": "f" * 32}],
    }
    assert "quantity" not in body
