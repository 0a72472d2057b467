"""Builders for `InstanceSpec` and its parts, with the defaults SkyPilot and dstack use on Nebius.

Nothing here talks to the network. Validation of service parameters (FORBID with reservation ids, unknown
presets...) is left to the server, which answers INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Sequence

from .models import (
    AttachedDiskSpec,
    AttachedDiskSpecAttachMode,
    DiskSpec,
    DiskSpecDiskType,
    ExistingDisk,
    FollowsSpotPriceSpec,
    InstanceGpuClusterSpec,
    InstanceRecoveryPolicy,
    InstanceSpec,
    IpAddress,
    ManagedDisk,
    NetworkInterfaceSpec,
    PreemptibleSpec,
    PreemptibleSpecPreemptionPolicy,
    PublicIpAddress,
    ReservationPolicy,
    ReservationPolicyPolicy,
    ResourcesSpec,
    SourceImageFamily,
    SpotPricingPolicySpec,
)

DEFAULT_IMAGE_FAMILY = "ubuntu22.04-cuda12"
DEFAULT_BOOT_DISK_GIB = 100
DEFAULT_INTERFACE_NAME = "eth0"


def managed_boot_disk(
    *,
    name: str = "",
    image_family: str = DEFAULT_IMAGE_FAMILY,
    size_gib: int = DEFAULT_BOOT_DISK_GIB,
    disk_type: DiskSpecDiskType = DiskSpecDiskType.NETWORK_SSD,
    image_id: str = "",
) -> AttachedDiskSpec:
    """A boot disk created and deleted together with the instance, from an image (`image_id`, e.g. the one
    `ImageService.GetLatestByFamily` answered) or else the latest image of a public image family."""
    if image_id:
        spec = DiskSpec(size_gibibytes=size_gib, type=disk_type, source_image_id=image_id)
    else:
        spec = DiskSpec(
            size_gibibytes=size_gib,
            type=disk_type,
            source_image_family=SourceImageFamily(image_family=image_family),
        )
    return AttachedDiskSpec(
        attach_mode=AttachedDiskSpecAttachMode.READ_WRITE, managed_disk=ManagedDisk(name=name, spec=spec)
    )


def existing_boot_disk(disk_id: str) -> AttachedDiskSpec:
    """Boot from a disk that already exists (it is left behind, detached, when the instance is deleted)."""
    return AttachedDiskSpec(
        attach_mode=AttachedDiskSpecAttachMode.READ_WRITE, existing_disk=ExistingDisk(id=disk_id)
    )


def network_interface(
    subnet_id: str,
    *,
    name: str = DEFAULT_INTERFACE_NAME,
    public_ip: bool = True,
    static_public_ip: bool = False,
) -> NetworkInterfaceSpec:
    """One interface with an automatic private IP and, if `public_ip`, a (dynamic unless static) public IP."""
    public = PublicIpAddress(static=static_public_ip) if public_ip else None
    return NetworkInterfaceSpec(
        subnet_id=subnet_id, name=name, ip_address=IpAddress(), public_ip_address=public
    )


def reservation_policy(
    policy: ReservationPolicyPolicy = ReservationPolicyPolicy.AUTO, reservation_ids: Sequence[str] = ()
) -> ReservationPolicy:
    """AUTO: listed (or any) capacity block, else on-demand. FORBID: on-demand only (no ids allowed).
    STRICT: only the listed blocks (or any suitable block if none listed), else the create fails."""
    return ReservationPolicy(policy=policy, reservation_ids=list(reservation_ids))


def build_instance_spec(
    platform: str,
    preset: str,
    *,
    subnet_id: str = "",
    boot_disk: AttachedDiskSpec | None = None,
    network_interfaces: Sequence[NetworkInterfaceSpec] | None = None,
    public_ip: bool = True,
    reservation: ReservationPolicy | ReservationPolicyPolicy | None = None,
    reservation_ids: Sequence[str] = (),
    stopped: bool = False,
    preemptible: bool = False,
    spot_pricing_policy_id: str = "",
    cloud_init_user_data: str = "",
    hostname: str = "",
    service_account_id: str = "",
    gpu_cluster_id: str = "",
) -> InstanceSpec:
    """An `InstanceSpec` for `platform`/`preset` with a managed Ubuntu boot disk and one network interface.

    `reservation` is a full `ReservationPolicy` or just its policy; `reservation_ids` alone implies AUTO.
    No reservation argument leaves the field unset (the server's default, AUTO). A preemptible VM stops on
    preemption and never recovers by itself (recovery policy FAIL), as SkyPilot and dstack configure it.
    A preemptible VM needs a spot pricing model (the API refuses one without: "pricing model must be specified for
    a preemptible instance"): `follows_spot_price` (pay the current spot price) unless `spot_pricing_policy_id`
    (preemptible only) names a pricing policy that caps the spot price (`spot_pricing_policy`: the VM is preempted
    when the spot price exceeds the policy's maximum). A regular VM leaves `pricing_model` unset (on-demand).
    """
    if spot_pricing_policy_id and not preemptible:
        raise ValueError("spot_pricing_policy_id needs preemptible=True")
    spec = InstanceSpec(
        resources=ResourcesSpec(platform=platform, preset=preset),
        boot_disk=boot_disk or managed_boot_disk(),
        network_interfaces=_interfaces(network_interfaces, subnet_id, public_ip),
        reservation_policy=_reservation(reservation, reservation_ids),
        stopped=stopped,
        cloud_init_user_data=cloud_init_user_data,
        hostname=hostname,
        service_account_id=service_account_id,
    )
    if preemptible:
        spec.preemptible = PreemptibleSpec(on_preemption=PreemptibleSpecPreemptionPolicy.STOP)
        spec.recovery_policy = InstanceRecoveryPolicy.FAIL
    if spot_pricing_policy_id:
        spec.spot_pricing_policy = SpotPricingPolicySpec(id=spot_pricing_policy_id)
    elif preemptible:
        spec.follows_spot_price = FollowsSpotPriceSpec()
    if gpu_cluster_id:
        spec.gpu_cluster = InstanceGpuClusterSpec(id=gpu_cluster_id)
    return spec


def _interfaces(
    given: Sequence[NetworkInterfaceSpec] | None, subnet_id: str, public_ip: bool
) -> list[NetworkInterfaceSpec]:
    if given is not None:
        return list(given)
    return [network_interface(subnet_id, public_ip=public_ip)]


def _reservation(
    reservation: ReservationPolicy | ReservationPolicyPolicy | None, reservation_ids: Sequence[str]
) -> ReservationPolicy | None:
    if isinstance(reservation, ReservationPolicy):
        return reservation
    if reservation is None and not reservation_ids:
        return None
    policy = ReservationPolicyPolicy.AUTO if reservation is None else reservation
    return reservation_policy(policy, reservation_ids)
