"""Lambda records the core does not model: SSH keys, file systems, firewall rulesets, images and per-instance
launch details.

Keys, file systems and firewall rulesets are per account and live in `world.state.extra_state["lambda"]`, so they
survive restarts.
Seed data (scenario `[lambda.extra]`) is copied into each account the first time that account is served, so
every account starts with the seeded keys and file systems and may delete them independently.
Instance details (keys, mounts, addresses...) are kept in `VM.native`.
"""

from __future__ import annotations

import ipaddress

import msgspec

from ..core.models import VM, Provider
from ..core.world import World

EXTRA_STATE_KEY = "lambda"


class SSHKeyRecord(msgspec.Struct, kw_only=True):
    id: str
    name: str
    public_key: str


class FileSystemRecord(msgspec.Struct, kw_only=True):
    id: str
    name: str
    region: str
    created: float = 0.0
    bytes_used: int = 0


class ImageRecord(msgspec.Struct, kw_only=True):
    id: str
    name: str
    family: str
    version: str
    architecture: str = "x86_64"
    description: str = ""
    created_time: str = "2025-07-02T00:00:00+00:00"
    updated_time: str = "2025-07-02T00:00:00+00:00"


class Seed(msgspec.Struct, kw_only=True):
    """The `[lambda.extra]` section of a scenario.

    `reservations_api`: whether the mock extension for reservations is served (GET /reservations and the launch
    field `reservation_id`). False behaves as the real API: GET /reservations is 404 `global/not-found` like any
    unknown path, and `reservation_id` is ignored like any unknown field (inferred: the spec's request schemas
    do not forbid extra fields), so such a launch runs on-demand.
    `visibility_delay`: seconds (time-scaled) after a launch during which the new instance is not visible yet:
    GET /instances leaves it out and GET /instances/{id} is 404 `global/object-does-not-exist`. Lambda does not
    document a delay; clients wait through one (dstack treats an instance missing from the listing as not ready
    yet), so its length is an inference. 0 (the default): visible at once.
    """

    ssh_keys: list[SSHKeyRecord] = []
    file_systems: list[FileSystemRecord] = []
    images: list[ImageRecord] = []
    reservations_api: bool = True
    visibility_delay: float = 0.0


class FirewallRuleRecord(msgspec.Struct, kw_only=True):
    protocol: str  # tcp | udp | icmp | all
    source_network: str
    description: str
    port_range: list[int] | None = None  # [min, max]; None for icmp


class FirewallRulesetRecord(msgspec.Struct, kw_only=True):
    id: str
    name: str
    region: str
    rules: list[FirewallRuleRecord]
    created: float = 0.0


def default_firewall_rules() -> list[FirewallRuleRecord]:
    """An account's inbound rules before any PUT /firewall-rules: SSH (port 22) and ICMP open to everyone
    (research lambda.md section 4, FirewallRule defaults)."""
    return [
        FirewallRuleRecord(protocol="tcp", port_range=[22, 22], source_network="0.0.0.0/0", description="Allow SSH"),
        FirewallRuleRecord(protocol="icmp", source_network="0.0.0.0/0", description="Allow ICMP"),
    ]


class AccountState(msgspec.Struct, kw_only=True):
    ssh_keys: list[SSHKeyRecord] = []
    file_systems: list[FileSystemRecord] = []
    firewall_rulesets: list[FirewallRulesetRecord] = []
    global_firewall_rules: list[FirewallRuleRecord] = []
    firewall_rules: list[FirewallRuleRecord] = msgspec.field(default_factory=default_firewall_rules)


class LambdaState(msgspec.Struct, kw_only=True):
    accounts: dict[str, AccountState] = {}
    launches: int = 0  # instances launched so far; numbers their IP addresses


class Mount(msgspec.Struct, kw_only=True):
    mount_point: str
    file_system_id: str


class Tag(msgspec.Struct, kw_only=True):
    key: str
    value: str


class InstanceDetails(msgspec.Struct, kw_only=True):
    """What a launch fixed about an instance; stored as builtins in `VM.native`."""

    ssh_key_names: list[str]
    file_system_names: list[str] = []
    file_system_mounts: list[Mount] = []
    hostname: str = ""  # requested hostname; "" = IP-address based
    image_id: str = ""
    # The launch's user_data (its SHA-256 and size): write-only in the API, kept for the admin inventory.
    user_data_sha256: str = ""
    user_data_bytes: int = 0
    # The public keys of the launch's ssh_key_names when it was made (what the VM's authorized_keys holds), kept
    # for the admin inventory.
    ssh_public_keys: list[str] = []
    tags: list[Tag] = []
    firewall_ruleset_ids: list[str] = []
    ip: str
    private_ip: str
    jupyter_token: str


def instance_details(vm: VM) -> InstanceDetails:
    return msgspec.convert(vm.native, InstanceDetails)


class LambdaStore:
    """The live LambdaState, kept inside `extra_state` so world snapshots persist it. Use in world.tx()."""

    def __init__(self, world: World) -> None:
        self._world = world
        with world.tx():
            raw = world.state.extra_state.get(EXTRA_STATE_KEY, {})
            self.state = raw if isinstance(raw, LambdaState) else msgspec.convert(raw, LambdaState)
            world.state.extra_state[EXTRA_STATE_KEY] = self.state
            self.seed = msgspec.convert(world.config(Provider.LAMBDA).extra, Seed)

    def account(self, account: str) -> AccountState:
        """The account's keys and file systems, seeded on first use."""
        found = self.state.accounts.get(account)
        if found is None:
            now = self._world.now()
            found = AccountState(
                ssh_keys=[msgspec.structs.replace(k) for k in self.seed.ssh_keys],
                file_systems=[
                    msgspec.structs.replace(f, created=f.created or now) for f in self.seed.file_systems
                ],
            )
            self.state.accounts[account] = found
        return found

    def next_addresses(self) -> tuple[str, str]:
        """(public, private) IPv4 addresses for the next launch; call `commit_launch` once it succeeds."""
        return public_ip(self.state.launches), private_ip(self.state.launches)

    def commit_launch(self) -> None:
        self.state.launches += 1


# Documentation ranges first (the spec's examples use 198.51.100.x), then the 198.18.0.0/15 benchmark range.
_PUBLIC_POOLS = tuple(ipaddress.ip_network(n) for n in ("198.51.100.0/24", "203.0.113.0/24", "198.18.0.0/15"))


def public_ip(number: int) -> str:
    """The `number`-th public address (host addresses only, wrapping around after ~132k launches)."""
    sizes = [net.num_addresses - 2 for net in _PUBLIC_POOLS]
    number %= sum(sizes)
    for net, size in zip(_PUBLIC_POOLS, sizes, strict=True):
        if number < size:
            return str(net.network_address + 1 + number)
        number -= size
    raise AssertionError("unreachable")


def private_ip(number: int) -> str:
    """The `number`-th private address, from 10.0.2.100 on (as in the spec's example)."""
    return str(ipaddress.IPv4Address("10.0.2.100") + number % (2**24 - 1024))
