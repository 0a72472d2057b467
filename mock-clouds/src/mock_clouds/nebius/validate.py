"""Request validation with BadRequest field paths ("spec.resources.preset").

Rules come from the field behaviours and validation comments of the real protos (research §2, §4): required
fields, IDENTIFIER (`metadata.id` never set on Create), OUTPUT_ONLY timestamps, length limits and patterns.
Each function returns the violations it finds; callers raise one INVALID_ARGUMENT with all of them.
"""

from __future__ import annotations

import re

from ..core.models import Provider
from ..core.world import World
from . import catalog
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute

Violation = tuple[str, str]
NEBIUS = Provider.NEBIUS

MAX_NAME_BYTES = 1024
MAX_CLOUD_INIT = 32768
MAX_NICS = 8
MAX_DEVICE_ID = 20
_HOSTNAME = re.compile(r"[a-z0-9][a-z0-9-]{0,61}[a-z0-9]")
_NIC_NAME = re.compile(r"[0-9a-z][0-9a-z-]{0,59}")
Policy = compute.ReservationPolicyPolicy
DiskMode = compute.AttachedDiskSpecAttachMode
_DISK_MODES = frozenset({DiskMode.READ_ONLY, DiskMode.READ_WRITE})
_RECOVERY = frozenset(compute.InstanceRecoveryPolicy)


def create_metadata(metadata: common.ResourceMetadata | None) -> list[Violation]:
    if metadata is None:
        return [("metadata.parent_id", "parent_id is required"), ("metadata.name", "name is required")]
    found = [] if metadata.parent_id else [("metadata.parent_id", "parent_id is required")]
    if metadata.id:
        found.append(("metadata.id", "id must not be set when creating a resource"))
    for field, value in (("created_at", metadata.created_at), ("updated_at", metadata.updated_at)):
        if value is not None:
            found.append((f"metadata.{field}", f"{field} is output only"))
    return found + name(metadata.name)


def name(value: str) -> list[Violation]:
    """Instances are named resources (no UNNAMED behaviour), so the mock requires a name (inference)."""
    if not value:
        return [("metadata.name", "name is required")]
    if len(value.encode()) > MAX_NAME_BYTES:
        return [("metadata.name", f"name must be at most {MAX_NAME_BYTES} bytes")]
    return []


def spec(value: compute.InstanceSpec | None) -> list[Violation]:
    """Structural checks of a whole InstanceSpec (Create, and Update after merging)."""
    if value is None:
        return [("spec", "spec is required")]
    return (
        resources(value.resources)
        + network_interfaces(value.network_interfaces)
        + disks(value)
        + _scalars(value)
        + preemptible(value.preemptible)
        + pricing_model(value)
        + reservation_policy(value.reservation_policy, is_preemptible(value))
    )


def is_preemptible(value: compute.InstanceSpec) -> bool:
    """A preemptible (spot) VM: `preemptible` set, or a spot member of the `pricing_model` oneof."""
    return value.preemptible is not None or value.follows_spot_price is not None or (
        value.spot_pricing_policy is not None
    )


PRICING_MODEL_REQUIRED = "pricing model must be specified for a preemptible instance"  # the live API's text


def pricing_model(value: compute.InstanceSpec) -> list[Violation]:
    """`on_demand` is "a regular, non-preemptible VM", so it contradicts `preemptible`; a preemptible VM needs
    a spot pricing model ("Preemptible VMs require follows_spot_price or spot_pricing_policy", the field doc of
    `nebius` 0.6.29; the live answer `INVALID_ARGUMENT: spec.pricing_model - pricing model must be specified for
    a preemptible instance`, real-clouds.md §2); a spot pricing policy needs its id."""
    if value.on_demand is not None and value.preemptible is not None:
        return [("spec.on_demand", "an on-demand instance cannot be preemptible")]
    if value.preemptible is not None and value.follows_spot_price is None and value.spot_pricing_policy is None:
        return [("spec.pricing_model", PRICING_MODEL_REQUIRED)]
    if value.spot_pricing_policy is not None and not value.spot_pricing_policy.id:
        return [("spec.spot_pricing_policy.id", "value is required")]
    return []


def resources(value: compute.ResourcesSpec | None) -> list[Violation]:
    if value is None:
        return [("spec.resources", "resources is required")]
    found = [] if value.platform else [("spec.resources.platform", "platform is required")]
    if not value.preset:
        found.append(("spec.resources.preset", "preset is required"))
    return found


def shape(world: World, region: str, value: compute.ResourcesSpec) -> list[Violation]:
    """The platform and preset exist and the project's region offers them."""
    platforms = {catalog.split_key(s.key)[0] for s in world.config(NEBIUS).shapes}
    if value.platform not in platforms:
        return [("spec.resources.platform", f"unknown platform {value.platform!r}")]
    found = world.shape(NEBIUS, catalog.shape_key(value.platform, value.preset or ""))
    if found is None:
        return [("spec.resources.preset", f"unknown preset {value.preset!r} for platform {value.platform}")]
    if not catalog.offered(world, region, found):
        return [
            (
                "spec.resources.preset",
                f"preset {value.preset} of {value.platform} is not available in {region}",
            )
        ]
    return []


def network_interfaces(nics: list[compute.NetworkInterfaceSpec]) -> list[Violation]:
    if not nics:
        return [("spec.network_interfaces", "at least one network interface is required")]
    if len(nics) > MAX_NICS:
        return [("spec.network_interfaces", f"at most {MAX_NICS} network interfaces are allowed")]
    found: list[Violation] = []
    for i, nic in enumerate(nics):
        path = f"spec.network_interfaces[{i}]"
        if not nic.subnet_id:
            found.append((f"{path}.subnet_id", "subnet_id is required"))
        if not _NIC_NAME.fullmatch(nic.name):
            found.append((f"{path}.name", "name must match ^[0-9a-z][0-9a-z-]*$ (1-60 characters)"))
        if nic.ip_address is None:
            found.append((f"{path}.ip_address", "ip_address is required (send {} for an automatic address)"))
    return found


def disks(value: compute.InstanceSpec) -> list[Violation]:
    if value.boot_disk is None:
        return [("spec.boot_disk", "boot_disk is required")]
    found = attached_disk("spec.boot_disk", value.boot_disk)
    for i, disk in enumerate(value.secondary_disks):
        found += attached_disk(f"spec.secondary_disks[{i}]", disk)
    return found


def attached_disk(path: str, disk: compute.AttachedDiskSpec) -> list[Violation]:
    found = [] if disk.attach_mode in _DISK_MODES else [(f"{path}.attach_mode", "attach_mode is required")]
    if disk.existing_disk is None and disk.managed_disk is None:
        found.append((path, "one of existing_disk or managed_disk is required"))
    elif disk.existing_disk is not None and not disk.existing_disk.id:
        found.append((f"{path}.existing_disk.id", "id is required"))
    if len(disk.device_id) > MAX_DEVICE_ID:
        found.append((f"{path}.device_id", f"device_id must be at most {MAX_DEVICE_ID} characters"))
    return found


def _scalars(value: compute.InstanceSpec) -> list[Violation]:
    found: list[Violation] = []
    if len(value.cloud_init_user_data) > MAX_CLOUD_INIT:
        found.append(("spec.cloud_init_user_data", f"must be at most {MAX_CLOUD_INIT} characters"))
    if value.hostname and not _HOSTNAME.fullmatch(value.hostname):
        found.append(("spec.hostname", "hostname must match ^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$"))
    if value.recovery_policy not in _RECOVERY:
        found.append(("spec.recovery_policy", "unknown recovery policy"))
    elif value.recovery_policy == compute.InstanceRecoveryPolicy.ALWAYS and not value.nvl_instance_group_id:
        found.append(
            ("spec.recovery_policy", "ALWAYS is only allowed for instances of an NVL instance group")
        )
    return found


def preemptible(value: compute.PreemptibleSpec | None) -> list[Violation]:
    if value is not None and value.on_preemption != compute.PreemptibleSpecPreemptionPolicy.STOP:
        return [("spec.preemptible.on_preemption", "on_preemption is required")]
    return []


def reservation_policy(value: compute.ReservationPolicy | None, is_preemptible: bool) -> list[Violation]:
    """FORBID with reservation_ids is an error (enum comment); blocks host regular VMs only (docs)."""
    if value is None:
        return []
    path = "spec.reservation_policy"
    if value.policy not in (Policy.AUTO, Policy.FORBID, Policy.STRICT):
        return [(f"{path}.policy", "unknown reservation policy")]
    if value.policy == Policy.FORBID and value.reservation_ids:
        return [(f"{path}.reservation_ids", "reservation_ids must be empty when policy is FORBID")]
    if is_preemptible and (value.reservation_ids or value.policy == Policy.STRICT):
        return [(path, "preemptible instances cannot use capacity blocks")]
    return []
