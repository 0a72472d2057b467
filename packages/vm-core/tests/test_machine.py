"""Machine options: their record, the startup script merged into the login user's cloud-config (Nebius), the
default image per type, and what the command line refuses."""

from __future__ import annotations

import email
import json
from pathlib import Path

import pytest
from vm_core.cli.cmd_images import disk_gib, read_startup_script
from vm_core.errors import UsageError
from vm_core.machine import MachineOptions
from vm_core.providers import _nebius_images as ni
from vm_core.providers._user_data import MERGE_TYPE, SCRIPT_PATH, merged
from vm_core.providers.crusoe import default_image

LOGIN = ('#cloud-config\nusers:\n  - name: ubuntu\n    sudo: "ALL=(ALL) NOPASSWD:ALL"\n    shell: /bin/bash\n'
         '    ssh_authorized_keys:\n      - "ssh-ed25519 AAAA me@host"\n')


def test_machine_options_round_trip_through_their_record() -> None:
    options = MachineOptions(image="ubuntu24.04-cuda12.8", disk_gib=200, startup_script="#!/bin/sh\necho ü\n")
    assert MachineOptions.from_record(options.to_record()) == options
    assert MachineOptions().to_record() == "" and MachineOptions.from_record("") == MachineOptions()
    shown = options.to_json()
    assert shown["startup_script_bytes"] == len(options.startup_script.encode()) and "startup_script" not in shown


def test_a_shell_script_joins_the_login_cloud_config_and_runs_once_after_the_user_exists() -> None:
    script = '#!/bin/bash\necho "quotes \\ and\ttabs" > /tmp/x\n'
    data = merged(LOGIN, script)
    assert data.startswith(LOGIN.rstrip("\n") + "\nwrite_files:")
    assert data.count("#cloud-config") == 1 and "ssh_authorized_keys:" in data
    content = next(line for line in data.splitlines() if line.strip().startswith("content: "))
    assert json.loads(content.split("content: ", 1)[1]) == script  # a JSON string: the script as it is
    assert f'runcmd:\n  - ["{SCRIPT_PATH}"]' in data


def test_a_cloud_config_script_is_a_second_part_merged_by_appending() -> None:
    user = "#cloud-config\npackages:\n  - htop\nusers:\n  - name: alice\n"
    message = email.message_from_string(merged(LOGIN, user))
    assert message.is_multipart()
    parts = message.get_payload()
    assert [p.get_content_type() for p in parts] == ["text/cloud-config", "text/cloud-config"]
    assert all(p["Merge-Type"] == MERGE_TYPE for p in parts)
    assert parts[0].get_payload().rstrip("\n") == LOGIN.rstrip("\n")
    assert parts[1].get_payload().rstrip("\n") == user.rstrip("\n")


def test_without_a_login_user_the_script_is_the_user_data_and_without_a_script_the_login() -> None:
    assert merged("", "#cloud-config\n{}\n") == "#cloud-config\n{}\n"
    assert merged(LOGIN, None) == LOGIN


def test_a_script_cloud_init_would_not_run_is_refused() -> None:
    with pytest.raises(UsageError, match="shell script"):
        merged(LOGIN, "echo no shebang\n")


def test_default_images_per_type() -> None:
    assert default_image("h100-80gb-sxm-ib.8x") == "ubuntu22.04-nvidia-sxm-docker:latest"
    assert default_image("l40s-48gb.1x") == "ubuntu22.04-nvidia-pcie-docker:latest"
    for platform in ("gpu-b200-sxm", "gpu-b200-sxm-a", "gpu-b300-sxm"):
        assert ni.default_family(platform) == "ubuntu24.04-cuda12.8"
    for platform in ("gpu-h100-sxm", "gpu-h200-sxm", "gpu-l40s-a", "gpu-l40s-d"):
        assert ni.default_family(platform) == "ubuntu22.04-cuda12"
    assert ni.public_parent("project-e01k7q4m2w9x5v3c8b") == "project-e01public-images"


def test_the_command_line_refuses_bad_sizes_and_scripts(tmp_path: Path) -> None:
    assert disk_gib(None) is None and disk_gib(100) == 100
    for bad in (0, -5, 1 << 21):
        with pytest.raises(UsageError, match="--disk-size"):
            disk_gib(bad)
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_startup_script(binary)
    with pytest.raises(UsageError, match="cannot read"):
        read_startup_script(tmp_path / "missing.sh")
    text = tmp_path / "ok.sh"
    text.write_text("#!/bin/sh\n")
    assert read_startup_script(text) == "#!/bin/sh\n"
