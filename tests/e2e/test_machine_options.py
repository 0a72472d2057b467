"""What a VM boots, through the real `vm`: `vm images`, the default image per type, and `--image`, `--disk-size`
and `--startup-script` on `vm create` on each cloud, checked in the clouds' own inventory; bad values are exit 2
before any create (the inventory unchanged)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

SCRIPT = "#!/bin/bash\nset -e\necho 'hello from vm' > /var/tmp/hello\n"
DIGEST = hashlib.sha256(SCRIPT.encode()).hexdigest()


def _images(home: VmHome, provider: str, *args: str) -> list[dict[str, Any]]:
    images: list[dict[str, Any]] = home.ok("images", "-p", provider, *args, "-o", "json").json()
    return images


def _created(home: VmHome, name: str) -> dict[str, Any]:
    [row] = home.live(name)
    return row


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scripts") / "setup.sh"
    path.write_text(SCRIPT)
    return path


def test_images_list_what_each_cloud_offers_and_mark_the_default_per_type(shared_home: VmHome) -> None:
    sxm = _images(shared_home, "crusoe", "--gpu", "H100:8")
    assert [i["name"] for i in sxm if i["default"]] == ["ubuntu22.04-nvidia-sxm-docker:latest"]
    pcie = _images(shared_home, "crusoe", "--gpu", "L40S")
    assert [i["name"] for i in pcie if i["default"]] == ["ubuntu22.04-nvidia-pcie-docker:latest"]
    lam = _images(shared_home, "lambda", "--gpu", "H100")
    assert [i["name"] for i in lam if i["default"]] == ["lambda-stack-22-04"]
    assert {"gpu-base-24-04", "ubuntu-22-04"} <= {i["name"] for i in lam}
    hopper = _images(shared_home, "nebius", "--gpu", "H100")
    assert [i["name"] for i in hopper if i["default"]] == ["ubuntu22.04-cuda12"]
    blackwell = _images(shared_home, "nebius", "--gpu", "B200:8", "--region", "us-central1")
    assert [i["name"] for i in blackwell if i["default"]] == ["ubuntu24.04-cuda12.8"]
    assert "ubuntu22.04-cuda12" not in {i["name"] for i in blackwell}  # its driver does not boot Blackwell
    table = shared_home.ok("images", "-p", "nebius", "--gpu", "H100").rows()
    assert table[0][:4] == ["PROVIDER", "NAME", "DEFAULT", "MIN-DISK"]


def test_a_vm_boots_the_default_image_of_its_type(shared_home: VmHome) -> None:
    shared_home.ok("create", "-p", "crusoe", "--gpu", "L40S", "--name", "pcie-default", "-q")
    assert _created(shared_home, "pcie-default")["image"] == "ubuntu22.04-nvidia-pcie-docker:latest"
    shared_home.ok("create", "-p", "nebius", "--gpu", "B200:8", "--name", "blackwell-default", "-q")
    [latest] = [i for i in _images(shared_home, "nebius", "--region", "us-central1")
                if i["name"] == "ubuntu24.04-cuda12.8"]
    row = _created(shared_home, "blackwell-default")
    assert row["image"] == latest["id"] and row["disk_gib"] == 100
    shared_home.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "lambda-default", "-q")
    assert _created(shared_home, "lambda-default")["image"] == ""  # Lambda's own default: the latest Lambda Stack


@pytest.mark.parametrize(("provider", "gpu", "image", "disk"), [
    ("crusoe", "L40S", "ubuntu22.04:latest", None),
    ("lambda", "H100", "gpu-base-24-04", None),
    ("nebius", "H100", "ubuntu24.04-cuda13.0", "250"),
])
def test_create_boots_the_image_disk_and_script_asked_for(shared_home: VmHome, script: Path, provider: str,
                                                          gpu: str, image: str, disk: str | None) -> None:
    name = f"machine-{provider}"
    args = ["create", "-p", provider, "--gpu", gpu, "--name", name, "--image", image,
            "--startup-script", str(script), "-q"]
    shared_home.ok(*args, *(["--disk-size", disk] if disk else []))
    row = _created(shared_home, name)
    [wanted] = [i for i in _images(shared_home, provider) if i["name"] == image]
    assert row["image"] == (image if provider == "crusoe" else wanted["id"])
    if provider == "nebius":  # the script merged into the login user's cloud-config: the VM has both
        assert row["disk_gib"] == 250 and row["startup_script_bytes"] >= len(SCRIPT)
        assert row["ssh_public_keys"] == [shared_home.ssh_key]  # the login user's key is still there
    else:
        assert row["disk_gib"] is None and row["startup_script_sha256"] == DIGEST


@pytest.mark.parametrize(("provider", "gpu", "args", "says"), [
    ("crusoe", "L40S", ["--image", "windows:latest"], "ubuntu22.04-nvidia-pcie-docker:latest"),
    ("crusoe", "L40S", ["--disk-size", "200"], "no boot disk size"),
    ("lambda", "H100", ["--image", "windows"], "lambda-stack-22-04"),
    ("lambda", "H100", ["--disk-size", "200"], "no boot disk size"),
    ("lambda", "H100", ["--startup-script", "BIG:1000001"], "at most 1,000,000"),
    ("nebius", "H100", ["--image", "windows"], "ubuntu24.04-cuda12.8"),
    ("nebius", "H100", ["--image", "computeimage-e00nosuchimage0000"], "ubuntu22.04-cuda12"),
    ("nebius", "H100", ["--disk-size", "20"], "at least 50 GiB"),
    ("nebius", "B200:8", ["--image", "ubuntu22.04-cuda12"], "does not boot gpu-b200-sxm"),
    ("nebius", "H100", ["--startup-script", "BIG:33000"], "at most 32,768"),
    ("nebius", "H100", ["--disk-size", "0"], "from 1 to"),
    ("crusoe", "L40S", ["--startup-script", "MISSING"], "cannot read it"),
    ("crusoe", "L40S", ["--image", ""], "must not be empty"),
])
def test_bad_machine_options_are_exit_2_before_any_create(shared_home: VmHome, tmp_path: Path, provider: str,
                                                          gpu: str, args: list[str], says: str) -> None:
    if args[-1].startswith("BIG:"):
        big = tmp_path / "big.sh"
        big.write_text("#!/bin/bash\n" + "#" * int(args[-1][4:]) + "\n")
        args = [*args[:-1], str(big)]
    elif args[-1] == "MISSING":
        args = [*args[:-1], str(tmp_path / "missing.sh")]
    shared_home.ok("list")
    before = shared_home.inventory()
    result = shared_home("create", "-p", provider, "--gpu", gpu, "--name", "refused", *args, "-o", "json")
    assert result.code == 2 and result.out == "", result.err
    assert says in result.error()["message"], result.error()
    assert shared_home.inventory() == before


def _members(home: VmHome, fleet: str) -> list[dict[str, Any]]:
    return [i for i in home.inventory() if i["name"].startswith(f"{fleet}--") and i["state"] != "terminated"]


@pytest.mark.parametrize(("provider", "gpu", "image", "disk"), [
    ("nebius", "H100", "ubuntu24.04-cuda12.8", "120"),
    ("crusoe", "L40S", "ubuntu22.04:latest", None),
    ("lambda", "A10", "gpu-base-24-04", None),
])
def test_a_fleet_creates_scales_and_repairs_with_the_machine_it_was_created_with(
        shared_home: VmHome, script: Path, provider: str, gpu: str, image: str, disk: str | None) -> None:
    fleet = f"machines-{provider}"
    shared_home.ok("fleet", "create", "--gpu", gpu, "--count", "2", "--name", fleet, "--providers", provider,
                   "--image", image, "--startup-script", str(script), *(["--disk-size", disk] if disk else []), "-q")
    shared_home.ok("fleet", "scale", fleet, "--count", "3", "-q")
    gone = _members(shared_home, fleet)[0]
    shared_home.ok("destroy", gone["id"], "-p", provider, "--yes", "-q")
    shared_home("fleet", "status", fleet)  # sees the member missing
    shared_home.ok("fleet", "repair", fleet, "-q")
    members = _members(shared_home, fleet)
    assert len(members) == 3 and gone["id"] not in {m["id"] for m in members}
    [wanted] = [i for i in _images(shared_home, provider) if i["name"] == image]
    for member in members:
        assert member["image"] == (image if provider == "crusoe" else wanted["id"])
        assert member["disk_gib"] == (int(disk) if disk else None)
        if provider != "nebius":  # Nebius merges it with the login user's cloud-config
            assert member["startup_script_sha256"] == DIGEST
    assert len({m["startup_script_sha256"] for m in members}) == 1  # the same user data on every member
    shared_home.ok("fleet", "destroy", fleet, "--yes", "-q")
    assert _members(shared_home, fleet) == []


def test_a_fleet_leaves_out_a_cloud_that_refuses_the_options_and_keeps_to_the_others(shared_home: VmHome) -> None:
    result = shared_home.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "nebius-image",
                            "--image", "ubuntu24.04-cuda13.0", "--dry-run")
    assert "lambda is not used: lambda has no image 'ubuntu24.04-cuda13.0'" in result.err
    assert "lambda " not in result.out and "nebius" in result.out


@pytest.mark.parametrize("args", [
    ["--providers", "nebius", "--image", "windows"],
    ["--providers", "nebius", "--disk-size", "10"],
    ["--providers", "lambda,nebius", "--disk-size", "200"],
    ["--image", "no-such-image-anywhere"],
])
def test_a_fleet_with_options_no_cloud_takes_is_exit_2_and_records_nothing(shared_home: VmHome,
                                                                          args: list[str]) -> None:
    shared_home.ok("list")
    before = shared_home.inventory()
    result = shared_home("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "refused-fleet", *args,
                         "-o", "json")
    assert result.code == 2 and result.out == "", result.err
    assert shared_home.inventory() == before
    assert "refused-fleet" not in shared_home.ok("fleet", "list").out


def test_a_cloud_config_startup_script_keeps_the_nebius_login_user(shared_home: VmHome, tmp_path: Path) -> None:
    config = tmp_path / "setup.yaml"
    config.write_text("#cloud-config\npackages:\n  - htop\nusers:\n  - default\n")
    shared_home.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "cloud-config-script",
                   "--startup-script", str(config), "-q")
    row = _created(shared_home, "cloud-config-script")
    assert row["startup_script_bytes"] > len(config.read_text())  # a second part after the login cloud-config
    assert row["ssh_public_keys"] == [shared_home.ssh_key]
