"""What a VM boots: its image, boot disk and startup script (`--image`, `--disk-size`, `--startup-script` of
`vm create` and `vm fleet create`), and the images a cloud offers (`vm images`).

A provider that takes these options is `SupportsMachineOptions`: it lists its images for a machine, marking the
one vm boots by default, and checks options against what its cloud accepts before any create is sent (the image
exists in that region, the disk size is within the image's bounds, the user data within the cloud's size limit),
raising UsageError (exit 2) that names the allowed values. A fleet records its MachineOptions, so that
`vm fleet scale` and `vm fleet repair` create the same machines.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .errors import UsageError


@dataclass(frozen=True, slots=True)
class MachineOptions:
    """`image` (a cloud's image name, family or id), `disk_gib` (the boot disk) and `startup_script` (the text run
    at first boot); None: the provider's default (see `vm images`)."""

    image: str | None = None
    disk_gib: int | None = None
    startup_script: str | None = None

    @property
    def is_default(self) -> bool:
        return self.image is None and self.disk_gib is None and self.startup_script is None

    @property
    def script_digest(self) -> str:
        """SHA-256 of the startup script as UTF-8 ("" without one)."""
        return hashlib.sha256(self.startup_script.encode()).hexdigest() if self.startup_script is not None else ""

    def to_record(self) -> str:
        """The JSON text a fleet stores ("" for the defaults)."""
        if self.is_default:
            return ""
        return json.dumps({"image": self.image, "disk_gib": self.disk_gib, "startup_script": self.startup_script},
                          sort_keys=True)

    @classmethod
    def from_record(cls, text: str | None) -> MachineOptions:
        if not text:
            return cls()
        raw: dict[str, Any] = json.loads(text)
        return cls(image=raw.get("image"), disk_gib=raw.get("disk_gib"), startup_script=raw.get("startup_script"))

    def to_json(self) -> dict[str, Any]:
        """What `-o json` shows (the script by its size and digest, never its text: it may hold secrets)."""
        script = self.startup_script
        return {"image": self.image, "disk_gib": self.disk_gib,
                "startup_script_bytes": len(script.encode()) if script is not None else None,
                "startup_script_sha256": self.script_digest or None}


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """One image a cloud offers for a machine. `name` is what `--image` takes; `default` marks the one vm boots
    when no `--image` is given."""

    provider: str
    name: str
    description: str = ""
    regions: tuple[str, ...] = ()
    default: bool = False
    image_id: str = ""  # the cloud's id where it differs from `name` ("" otherwise)
    min_disk_gib: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "name": self.name, "id": self.image_id or self.name,
                "description": self.description, "regions": list(self.regions), "default": self.default,
                "min_disk_gib": self.min_disk_gib}


@runtime_checkable
class SupportsMachineOptions(Protocol):
    def images(self, gpu: str | None, gpu_count: int | None = None, region: str | None = None) -> list[ImageInfo]:
        """The images the cloud offers for VMs of `gpu` (any machine when None) in `region` (the provider's
        default region when None), the default marked. Reads the cloud; raises VmError."""
        ...

    def check_machine(self, gpu: str, gpu_count: int | None, region: str | None, options: MachineOptions) -> None:
        """UsageError naming the allowed values when the cloud would refuse `options` for such a VM (in `region`,
        or wherever the provider may place it when None); may read the cloud, never creates anything."""
        ...


def check(provider: object, name: str, gpu: str, gpu_count: int | None, region: str | None,
          options: MachineOptions) -> None:
    """`provider.check_machine`, and UsageError for options given to a provider that takes none."""
    if options.is_default:
        return
    if not isinstance(provider, SupportsMachineOptions):
        raise UsageError(f"{name} takes no machine options (image, boot disk size, startup script)", provider=name)
    provider.check_machine(gpu, gpu_count, region, options)


def too_big(what: str, size: int, limit: int, provider: str) -> UsageError:
    return UsageError(f"{what} is {size:,} bytes; {provider} takes at most {limit:,}", provider=provider,
                      suggestion="make the script smaller, e.g. have it download the rest")


def unknown_image(wanted: str, provider: str, where: str, allowed: list[str]) -> UsageError:
    from .hints import Command, Hint

    listed = ", ".join(allowed) if allowed else "none"
    return UsageError(f"{provider} has no image {wanted!r}{where}; it offers: {listed}", provider=provider,
                      suggestion=Hint.say("see {}", Command.of("images", "--provider", provider)))
