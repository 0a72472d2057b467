"""Request bodies (msgspec Structs, strict types, unknown fields ignored) and path-id validation.

Field names and constraints follow the 1.10 spec (research/lambda.md sections 2-3). A body that does not match
is answered with 400 `global/invalid-parameters`, as the real API answers invalid input.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

import msgspec
from msgspec import Meta

from ..http import BadRequestBody, Request
from .errors import invalid_parameters

T = TypeVar("T")

Name64 = Annotated[str, Meta(max_length=64)]
Hostname = Annotated[str, Meta(min_length=1, max_length=63, pattern=r"^[a-z0-9][0-9a-z-]{0,62}$")]
MountPoint = Annotated[str, Meta(max_length=256, pattern=r"^(/home|/lambda/nfs|/data)[//a-zA-Z0-9-]*$")]
UserData = Annotated[str, Meta(max_length=1_000_000)]
FilesystemName = Annotated[str, Meta(min_length=1, max_length=60, pattern=r"^[a-zA-Z]+[0-9a-zA-Z-]*$")]


class _Body(msgspec.Struct, kw_only=True):
    """Base of request bodies: unknown fields are ignored (the spec's request schemas do not forbid them)."""


class ImageSpecification(_Body):
    """`{"id": ...}` (ImageSpecificationID) or `{"family": ...}` (ImageSpecificationFamily)."""

    id: str | None = None
    family: str | None = None


class TagEntry(_Body):
    key: Annotated[str, Meta(max_length=55, pattern=r"^[a-z][a-z0-9-:]+$")]
    value: Annotated[str, Meta(max_length=128)]


class FilesystemMountEntry(_Body):
    mount_point: MountPoint
    file_system_id: str


class FirewallRulesetEntry(_Body):
    id: str


class InstanceLaunchRequest(_Body):
    region_name: str
    instance_type_name: str
    ssh_key_names: list[str]
    file_system_names: list[str] | None = None
    file_system_mounts: list[FilesystemMountEntry] | None = None
    hostname: Hostname | None = None
    name: Name64 | None = None  # Terraform sends null when unset
    image: ImageSpecification | None = None
    user_data: UserData | None = None
    tags: list[TagEntry] | None = None
    firewall_rulesets: list[FirewallRulesetEntry] | None = None
    # Gone from the spec since 1.6.0 but still validated live: only 1 is allowed (SkyPilot #7084).
    quantity: Annotated[int, Meta(ge=1)] | None = None
    # Mock extension (product brief): launch on this reservation, never on on-demand capacity.
    reservation_id: str | None = None


class InstanceIdsRequest(_Body):
    """InstanceTerminateRequest / InstanceRestartRequest."""

    instance_ids: list[str]  # required; the spec sets no minimum, so [] acts on nothing


class InstanceModificationRequest(_Body):
    name: Name64 | None = None


class AddSSHKeyRequest(_Body):
    name: Annotated[str, Meta(min_length=1, max_length=64)]
    public_key: Annotated[str, Meta(min_length=1, max_length=4096)] | None = None


class FirewallRule(_Body):
    """`FirewallRule`; `port_range` is required except for icmp, where it is refused (checked in firewalls.py)."""

    protocol: Literal["tcp", "udp", "icmp", "all"]
    source_network: str
    description: Annotated[str, Meta(max_length=128)]
    port_range: Annotated[list[Annotated[int, Meta(ge=1, le=65535)]], Meta(min_length=2, max_length=2)] | None = None


class FirewallRulesetCreateRequest(_Body):
    name: Name64
    region: str
    rules: list[FirewallRule]


class FirewallRulesetPatchRequest(_Body):
    name: Name64 | None = None
    rules: list[FirewallRule] | None = None


class GlobalFirewallRulesetPatchRequest(_Body):
    rules: list[FirewallRule] | None = None


class FirewallRulesPutRequest(_Body):
    """PUT /firewall-rules (firewallRulesSet): `data`, required, replaces every rule."""

    data: list[FirewallRule]


class FilesystemCreateRequest(_Body):
    name: FilesystemName
    region: str


def decode(request: Request, type_: type[T]) -> T:
    """The body as `type_`, or a 400 invalid-parameters ApiError naming what is wrong."""
    try:
        return request.json(type_)
    except BadRequestBody as exc:
        raise invalid_parameters(f"Error in request body: {exc}") from exc


_HEX = frozenset("0123456789abcdefABCDEF")
_GROUP_LENGTHS = (8, 4, 4, 4, 12)


def parse_path_id(raw: str, location: str = "id") -> str:
    """A path id as 32 lowercase hex, or the live API's pydantic-style 400 (research section 4).

    Like pydantic's UUID type, the simple (32 hex) and hyphenated (8-4-4-4-12) forms are accepted.
    """
    problem = uuid_problem(raw)
    if problem:
        raise invalid_parameters(
            f"Error in request path at '{location}': Input should be a valid UUID, {problem}"
        )
    return raw.replace("-", "").lower()


def uuid_problem(raw: str) -> str:
    """Why `raw` is not a UUID, worded like the Rust `uuid` crate behind pydantic; "" when it is one."""
    for index, char in enumerate(raw, start=1):
        if char not in _HEX and char != "-":
            return (
                f"invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], "
                f"found `{char}` at {index}"
            )
    groups = raw.split("-")
    if len(groups) == 1:
        return (
            ""
            if len(raw) == 32
            else f"invalid length: expected length 32 for simple format, found {len(raw)}"
        )
    if len(groups) != len(_GROUP_LENGTHS):
        return f"invalid group count: expected {len(_GROUP_LENGTHS)}, found {len(groups)}"
    for index, (group, expected) in enumerate(zip(groups, _GROUP_LENGTHS, strict=True)):
        if len(group) != expected:
            return f"invalid group length in group {index}: expected {expected}, found {len(group)}"
    return ""
