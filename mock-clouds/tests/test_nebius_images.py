"""Nebius mock: ImageService (the public images of each region) and the boot disk a create may ask for."""

from __future__ import annotations

import grpc
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

GIB = 1 << 30


def _public(nebius, region: str) -> str:
    return f"project-{nebius.projects[region].removeprefix('project-')[:3]}public-images"


def _spec(disk: compute.AttachedDiskSpec) -> compute.InstanceSpec:
    spec = testkit.instance_spec()
    spec.boot_disk = disk
    return spec


def _managed(family: str = "", image_id: str = "", size_gib: int = 100) -> compute.AttachedDiskSpec:
    spec = compute.DiskSpec(size_gibibytes=size_gib, type=compute.DiskSpecDiskType.NETWORK_SSD)
    if image_id:
        spec.source_image_id = image_id
    else:
        spec.source_image_family = compute.SourceImageFamily(image_family=family)
    return compute.AttachedDiskSpec(
        attach_mode=compute.AttachedDiskSpecAttachMode.READ_WRITE,
        managed_disk=compute.ManagedDisk(name="boot", spec=spec),
    )


def test_the_public_images_of_a_region_list_get_and_resolve_by_family(nebius):
    parent = _public(nebius, "eu-north1")
    listed = nebius.client.images.list(compute.ListImagesRequest(parent_id=parent)).items
    families = {i.spec.image_family for i in listed}
    assert {"ubuntu22.04-cuda12", "ubuntu24.04-cuda12.8", "ubuntu24.04-cuda13.0"} <= families
    assert all(i.metadata.parent_id == parent and i.metadata.id.startswith("computeimage-e00") for i in listed)
    assert all(i.status.state == compute.ImageStatusState.READY for i in listed)
    latest = nebius.client.images.get_latest_by_family(
        compute.GetImageLatestByFamilyRequest(image_family="ubuntu22.04-cuda12", parent_id=parent)
    )
    versions = sorted(i.spec.version for i in listed if i.spec.image_family == "ubuntu22.04-cuda12")
    assert len(versions) == 2 and latest.spec.version == versions[-1]  # the newest of the family
    assert "gpu-b200-sxm" in latest.spec.unsupported_platforms
    assert latest.status.min_disk_size_bytes == 50 * GIB
    got = nebius.client.images.get(compute.GetImageRequest(id=latest.metadata.id))
    assert got.metadata.id == latest.metadata.id
    assert nebius.client.images.list(compute.ListImagesRequest(parent_id=nebius.project)).items == []
    public = nebius.client.images.list_public(compute.ListPublicRequest(region="us-central1")).items
    assert {i.metadata.parent_id for i in public} == {_public(nebius, "us-central1")}


def test_unknown_images_and_families_are_not_found(nebius):
    parent = _public(nebius, "eu-north1")
    failed = testkit.failure(
        nebius.client.images.get_latest_by_family,
        compute.GetImageLatestByFamilyRequest(image_family="windows-2022", parent_id=parent),
    )
    assert failed.code == grpc.StatusCode.NOT_FOUND
    failed = testkit.failure(nebius.client.images.get, compute.GetImageRequest(id="computeimage-e00nosuchimage0000"))
    assert failed.code == grpc.StatusCode.NOT_FOUND
    failed = testkit.failure(
        nebius.client.images.list, compute.ListImagesRequest(parent_id="project-e00othertenant0001")
    )
    assert failed.code == grpc.StatusCode.PERMISSION_DENIED
    failed = testkit.failure(
        nebius.client.images.get_by_name, common.GetByNameRequest(parent_id=parent, name="nope")
    )
    assert failed.code == grpc.StatusCode.NOT_FOUND


def test_a_create_boots_from_an_existing_family_or_image_of_its_region_at_its_minimum_size(nebius):
    parent = _public(nebius, "eu-north1")
    image = nebius.client.images.get_latest_by_family(
        compute.GetImageLatestByFamilyRequest(image_family="ubuntu24.04-cuda12.8", parent_id=parent)
    )
    ok = nebius.create("by-id", _spec(_managed(image_id=image.metadata.id, size_gib=60)))
    assert ok.resource_id
    ok = nebius.create("by-family", _spec(_managed("ubuntu22.04-cuda12")))
    assert ok.resource_id
    cases = [
        (_managed("windows-2022"), "source_image_family.image_family"),
        (_managed(image_id="computeimage-e00nosuchimage0000"), "source_image_id"),
        (_managed("ubuntu22.04-cuda12", size_gib=20), "spec.boot_disk.managed_disk.spec.size"),
    ]
    other_region = nebius.client.images.get_latest_by_family(
        compute.GetImageLatestByFamilyRequest(image_family="ubuntu22.04-cuda12", parent_id=_public(nebius, "eu-west1"))
    )
    cases.append((_managed(image_id=other_region.metadata.id), "source_image_id"))
    for i, (disk, field) in enumerate(cases):
        failed = testkit.failure(
            nebius.client.instances.create,
            testkit.create_request(nebius.project, f"bad-{i}", _spec(disk)),
        )
        assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
        assert field in failed.error.bad_request.violations[0].field
