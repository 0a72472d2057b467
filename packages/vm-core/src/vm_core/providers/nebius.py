"""Nebius AI Cloud adapter: vm-core's Provider over nebius_sdk (the gRPC compute API).

How the Nebius model maps onto vm-core:

- **Regions are projects.** A Nebius project lives in exactly one region (its IAM Container's `status.region`).
  `project_id` is the default project; its region is tried first. The other regions are the default project's
  tenant's other projects, found once per provider on first need (IAM `ProjectService.Get` of the default project,
  then `List(parent_id=its tenant)`, as dstack and SkyPilot do; `_nebius_discovery`): one project per region, the
  default project where it is one of several, else the first by name (the others are named under `vm --debug`).
  The `projects` setting (region -> project id) replaces that discovery; `project_id` must then be one of them.
  Lists and lookups by name walk every project of the map; a lookup by id needs no project (ids are global), only
  the map to say the instance's region.
- **Create** picks the shape (`spec.shape`, else the catalog's smallest Nebius shape of the GPU and count) and
  the region (`spec.region`, else the first region whose PlatformService lists that platform/preset; Nebius has
  no capacity API). New instances get a managed boot disk and one interface on their project's subnet: the
  `subnet_id` setting's (a string for every region, or a region -> subnet mapping: subnets belong to one
  project), else the project's own, found once per project on its first create (VPC `SubnetService.List`): the
  one named `default-subnet...`, else the only one; several and none of them the default is a ConfigError naming
  them. The SDK sends an idempotency key that its retries reuse, so a retried create never doubles.
  `spec.labels` become `metadata.labels`; an `ssh_public_key` (the create's, else the setting's) becomes
  cloud-init user data creating the user `ssh_user` (default `ubuntu`) with that key; none at all is a
  UsageError before any call, and `--no-ssh-key` creates no user.
- **Boot image and disk** (`_nebius_images`): the latest image of a family chosen per platform (CUDA 12.8 for
  Blackwell, `ubuntu22.04-cuda12` for Hopper and L40S), or `--image` (a family or `computeimage-...` id of the
  region's public images, `project-{code}public-images`), resolved once per project and image with
  `ImageService.GetLatestByFamily` / `Get` and created from its id; a managed boot disk of 100 GiB or
  `--disk-size`, at least the image's minimum. `--startup-script` is merged into the login user's cloud-config
  (`_user_data`); the whole user data may be 32 KiB (`cloud_init_user_data`'s limit).
- **Reservations**, `--reservation auto|none|ID [--strict]`: auto -> AUTO, none -> FORBID, ID -> AUTO with
  that capacity block group (STRICT with `--strict`); auto + strict -> STRICT without ids. The compute API
  cannot list capacity blocks, so this provider is not `SupportsReservations`; pass
  `--reservation capacityblockgroup-...` to use a block.
- **Capacity block prices** come from the `capacity_blocks` setting (block id -> region, platform and contract
  price in $/GPU-h): the billing calculator prices on-demand and preemptible VMs, and the Capacity API's
  CapacityBlockGroupStatus has limits and usage only, so a block's price is the customer's contract. An instance
  in a listed block costs that price x its GPUs; in a block that is not listed its price is unknown (None). Each
  listed block is also a reserved offer in its region; an entry may state the block's size (`gpus`, or `vms`), and
  the offer's capacity is then the VMs of its size the block holds (else unknown). The local profile lists the
  mock clouds' blocks.
- **Capacity shortage surfaces late**: the create operation fails (RESOURCE_EXHAUSTED/NotEnoughResources)
  and Nebius keeps the instance, STOPPED. `wait()` of a failed create deletes that instance (waiting for the
  delete within what is left of its timeout) before raising, so a failed create leaves nothing behind.
- **Following instances** (SupportsGetStates): a fleet reads the statuses of all the instances it follows with
  one `InstanceService.BatchGet` (up to 1000 ids a call) per `poll_interval` instead of polling each operation,
  then the running ones whole with one more (`get_instances`); a STOPPED or failed instance sends the fleet to
  its operation's `wait()`, which says why and removes it.
- **Reboot**: Nebius has none; `begin_reboot` is stop then start, as one Pending whose `wait()` waits for
  both (the start is sent only when the stop has finished, from `wait()` or `done()`); its `note` says so.
  `hard` is Unsupported: there is no reset, and a stop + start must not pass for one.
- **GPU clusters** (`SupportsPlacementGroups`, `_nebius_clusters`): a `--placement cluster` fleet's 8-GPU VMs in
  a place join the fleet's GPU cluster there (`InstanceSpec.gpu_cluster`), made on the documented InfiniBand
  fabric of the platform and region and labelled with the fleet's identity; the fleet's destroy deletes the
  clusters carrying that identity, and no other.
- **Offers**: Nebius exposes no capacity: an offer is a region whose PlatformService lists the preset, with
  `capacity=None` and `available=True`, plus the listed capacity blocks (their contract price, `CONTRACT`). Its
  price is the billing calculator's (`_nebius_prices`: one `billing.v1.CalculatorService.EstimateBatch` per region
  and kind, remembered as long as the platforms, `API`), else the catalog's list price when the calculator does
  not answer (`CATALOG`); each offer says which (`Offer.price_source`).
- **Spot** (`SupportsSpot`): `spot_offers` are the catalog shapes with a spot list price whose platform
  PlatformService allows for preemptibles, at the calculator's spot price, else the catalog's; `CreateSpec.spot`
  creates a preemptible instance (`on_preemption: STOP`). A preempted instance is STOPPED, as the API shows it.
  Capacity blocks host regular VMs only, so spot with `--reservation ID` or `--strict` is a UsageError.
  `CreateSpec.spot_max_price` (`vm create --spot --max-price`, `SupportsSpotPriceCap`) caps the price through a
  pricing policy (`_nebius_spot_caps`); without it the VM follows the spot price.

- **Credentials**: exactly one of `token` (NEBIUS_IAM_TOKEN, e.g. `nebius iam get-access-token`'s output, valid for
  12 h), `token_file` (re-read when it changes), `token_command` (run again when its token is refused or 11 h old),
  `service_account_file` (a credentials JSON), or `service_account_id` + `public_key_id` + `private_key_file` (or
  `private_key`): a service account's JWT is exchanged for access tokens, renewed before they expire. Browser
  (federation) login is not something vm can do. One credential object per provider, shared by its threads.
- **Endpoint** is the API domain (`api.nebius.cloud:443`): compute is `compute.<domain>`, the token exchange
  `tokens.iam.<domain>`, projects `cpl.iam.<domain>`, subnets `vpc.<domain>`; a loopback address or `localhost`
  (the mock clouds) serves every service itself.

Importing this module imports neither nebius_sdk nor grpc; `plugin.connect()` does.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import Catalog, ShapeEntry
from ..errors import CapacityError, ConfigError, Scope, Unsupported, UsageError, VmError
from ..hints import MARK, Command, Hint
from ..kit import Finished, GivenCatalog, Memo, Noted, OperationPending, ShapesFile, offer, read_many, scaled
from ..kit.settings import number, parse_settings, positive_number, setting, settings_of, table, texts
from ..kit.shapes import GpusFile
from ..machine import ImageInfo, MachineOptions, too_big, unknown_image
from ..model import CreateSpec, Instance, InstanceState, Offer, PriceSource, ReservationMode
from ..provider import Pending, ReservationInfo, ReservationListing, ReservationTerms, Setting
from ..sshkeys import no_key_error, public_key_setting
from . import _nebius_clusters as nc
from . import _nebius_images as ni
from . import _nebius_spot_caps as sc
from . import billing_rules
from ._chain import StopThenStart
from ._nebius_discovery import project_subnet, region_projects
from ._nebius_map import (
    NAME,
    SSH_USER,
    ErrorContext,
    reservation_policy,
    status_state,
    to_instance,
    translated,
)
from ._nebius_prices import read_live
from ._user_data import merged

REBOOT_NOTE = "rebooting as a stop then a start (Nebius AI Cloud has no reboot)"

if TYPE_CHECKING:
    from nebius_sdk import NebiusClient, Operation, RetryPolicy, TokenSource

    from ..native import NativeCredentials

T = TypeVar("T")
log = logging.getLogger(__name__)

TOKEN_ENV = "NEBIUS_IAM_TOKEN"
PROJECT_ENV = "NEBIUS_PROJECT_ID"
DEFAULT_ENDPOINT = "api.nebius.cloud:443"  # the API domain (pysdk's DOMAIN); compute is compute.<domain>
KEY_FORM = ("service_account_id", "public_key_id", "private_key_file")  # a service account given by its key
NO_CREDENTIALS_HINT = (
    "browser (federation) login is not supported: use token_command = \"nebius iam get-access-token\" (the nebius "
    "CLI logs in and vm runs it again when its token expires), or a service account (service_account_file, from "
    "`nebius iam auth-public-key generate`), whose tokens vm renews itself"
)
INSTANCE_ID_PREFIX = "computeinstance-"
BLOCKS_FROM_SETTINGS = ("capacity blocks come from the profile's capacity_blocks setting (the compute API cannot "
                        "list them): a block missing there is not shown")

@dataclass(frozen=True, slots=True)
class CapacityBlock:
    """A capacity block group as the customer's contract describes it (the `capacity_blocks` setting)."""

    id: str
    region: str
    platform: str
    price_per_gpu_hour: float
    gpus: int | None = None  # the block's size in GPUs (a VM of N GPUs takes N), when the contract says it
    vms: int | None = None  # or in VMs, whatever their size

    def holds(self, gpu_count: int) -> int | None:
        """How many VMs of `gpu_count` GPUs the block holds in all; None when its size is not stated."""
        if self.vms is not None:
            return self.vms
        return None if self.gpus is None else self.gpus // max(gpu_count, 1)


def _subnets(raw: Any) -> dict[str, str] | str:
    return raw.strip() if isinstance(raw, str) else texts("a subnet id or a region -> subnet id table", blank=True)(raw)


def _command(raw: Any) -> tuple[str, ...]:
    """A command line (split as a POSIX shell would, without running one) or a list of words."""
    if isinstance(raw, list | tuple) and raw and all(isinstance(word, str) and word for word in raw):
        return tuple(raw)
    try:
        words = shlex.split(raw) if isinstance(raw, str) else []
    except ValueError as exc:
        raise ValueError(f"a command line ({exc})") from None
    if not words:
        raise ValueError("a command line, e.g. \"nebius iam get-access-token\"")
    return tuple(words)


def _block(block_id: str, terms: Any) -> CapacityBlock:
    try:
        block = CapacityBlock(block_id, str(terms["region"]), str(terms["platform"]),
                              number(terms["price_per_gpu_hour"]),  # finite, 0 or more
                              gpus=_size(terms.get("gpus")), vms=_size(terms.get("vms")))
    except (TypeError, KeyError, ValueError, AttributeError):
        block = None
    if block is None or not (block.id and block.platform) or None not in (block.gpus, block.vms):
        raise ValueError(f"a table of blocks: {block_id!r} needs region, platform and a price_per_gpu_hour of 0 or "
                         "more, and may state its size as gpus or vms (a whole number of 1 or more; not both)")
    return block


def _login(raw: Any) -> str:
    """A login user name cloud-init can create (lower case, digits, `_` and `-`, at most 32); ValueError else."""
    text = str(raw).strip()
    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", text) or text == "root":
        raise ValueError("a user name of lower-case letters, digits, _ and - (at most 32, not root), e.g. ubuntu")
    return text


def _size(raw: Any) -> int | None:
    """A block's stated size: None when absent, else a whole number of 1 or more (ValueError otherwise)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ValueError(raw)
    return raw


@dataclass(frozen=True, kw_only=True)
class NebiusSettings:
    """Validated settings (kit.settings). `projects` is the `projects` table (region -> project), the default
    project's region first; {} when it is not given (the provider then asks the API)."""

    token: str = setting(env=TOKEN_ENV, secret=True, default="",
                         help="IAM access token (`nebius iam get-access-token`; valid for 12 h): one credential of "
                              "token, token_file, token_command or a service account")
    token_file: str = setting(default="", help="file holding an IAM access token, read again when it changes")
    token_command: tuple[str, ...] = setting(
        default=(), parse=_command,
        help="command printing an IAM access token, run again when it is refused or 11 h old (e.g. \"nebius iam "
             "get-access-token\")")
    service_account_file: str = setting(
        default="", help="service account credentials JSON ({\"subject-credentials\": ...}); tokens are renewed")
    service_account_id: str = setting(default="", help="service account id, with public_key_id and private_key_file")
    public_key_id: str = setting(default="", help="the service account's public key id")
    private_key_file: str = setting(default="", help="the service account's PEM private key file")
    private_key: str = setting(default="", secret=True, help="the service account's PEM private key itself "
                                                             "(instead of private_key_file)")
    endpoint: str = setting(default=DEFAULT_ENDPOINT,
                            help=f"API domain host:port (default {DEFAULT_ENDPOINT}): compute is compute.<domain>, "
                                 "tokens tokens.iam.<domain>; a loopback address or localhost serves every service")
    project_id: str = setting(env=PROJECT_ENV, help="default project (project-...); its region is tried first")
    projects: dict[str, str] = setting(default_factory=dict, parse=texts("a table (map each region to a project id)"),
                                       help="region -> project id, one project per region (default: the projects of "
                                            "project_id's tenant, from the API)")
    subnet_id: dict[str, str] | str = setting(
        default="", parse=_subnets,
        help="VPC subnet of new instances: one id, or region -> subnet id (default: the project's default-subnet..., "
             "or its only subnet, from the API)")
    time_scale: float = setting(default=1.0, parse=positive_number,
                                help="multiplies retry and poll intervals (default 1)")
    capacity_blocks: dict[str, CapacityBlock] = setting(
        default_factory=dict, parse=table("a table mapping each block id to {region, platform, price_per_gpu_hour}",
                                          _block),
        help="capacity block id -> {region, platform, price_per_gpu_hour, and gpus or vms: its size}: the contract "
             "terms of your blocks (the billing API prices on-demand and spot VMs, not blocks)")
    ssh_public_key: str | None = setting(default=None, parse=lambda raw: public_key_setting(raw, NAME),
                                         help="public key cloud-init installs for ssh_user on new VMs (default: "
                                              "~/.ssh/id_ed25519.pub, id_ecdsa.pub or id_rsa.pub)")
    ssh_user: str = setting(default=SSH_USER, parse=_login,
                            help=f"the login user cloud-init creates with the key (default {SSH_USER})")

    def __post_init__(self) -> None:
        """Checks that exactly one credential is given (`credential`), and puts the default project's region first in
        a given `projects`; ConfigError when it is not one of them."""
        self.credential()
        given = self.projects
        if not given:
            return
        default_region = next((region for region, project in given.items() if project == self.project_id), None)
        if default_region is None:
            raise ConfigError(f"Nebius project_id {self.project_id} is not one of the projects setting's "
                              f"({', '.join(f'{r}={p}' for r, p in given.items())})", provider=NAME)
        ordered = {default_region: self.project_id, **{r: p for r, p in given.items() if r != default_region}}
        object.__setattr__(self, "projects", ordered)

    def credential(self) -> str:
        """The one credential setting given: "token", "token_file", "token_command", "service_account_file" or
        "service_account_id" (with public_key_id and private_key_file or private_key). Raises ConfigError for none
        (saying how to get one), several (naming them), or a service account key form that lacks a part."""
        keyed = [key for key in (*KEY_FORM, "private_key") if getattr(self, key)]
        given = [key for key in ("token", "token_file", "token_command", "service_account_file")
                 if getattr(self, key)] + (["service_account_id"] if keyed else [])
        if not given:
            raise ConfigError(
                f"Nebius needs credentials: set the profile's token (or export {TOKEN_ENV}), token_file, "
                "token_command, service_account_file, or service_account_id with public_key_id and "
                "private_key_file", provider=NAME, suggestion=NO_CREDENTIALS_HINT)
        if len(given) > 1:
            named = ", ".join("service_account_id/public_key_id/private_key_file" if key == "service_account_id"
                              else f"token ({TOKEN_ENV})" if key == "token" else key for key in given)
            raise ConfigError(f"Nebius has several credentials: {named}; keep one of them", provider=NAME)
        if keyed:
            missing = [key for key in KEY_FORM[:2] if not getattr(self, key)]
            if not (self.private_key_file or self.private_key):
                missing.append("private_key_file")
            if self.private_key_file and self.private_key:
                raise ConfigError("Nebius service account: give private_key_file or private_key, not both",
                                  provider=NAME)
            if missing:
                raise ConfigError(f"a Nebius service account given by its key needs service_account_id, "
                                  f"public_key_id and private_key_file; missing: {', '.join(missing)}", provider=NAME,
                                  suggestion="or give its credentials JSON as service_account_file")
        return given[0]

    def subnet(self, region: str) -> str:
        """The `subnet_id` setting's subnet for new instances in `region`; "" when it names none (the provider then
        asks the API)."""
        return self.subnet_id if isinstance(self.subnet_id, str) else self.subnet_id.get(region, "")


@dataclass(frozen=True)
class NebiusPlugin:
    """The `vm_core.providers` entry point `nebius`."""

    name: str = NAME
    title: str = "Nebius AI Cloud"
    settings: tuple[Setting, ...] = settings_of(NebiusSettings)
    settings_type = NebiusSettings  # the session parses the settings into one (DeclaresSettingsType)
    instance_id_pattern = INSTANCE_ID_PREFIX + "[a-z0-9]{3,40}"
    instance_id_example = INSTANCE_ID_PREFIX + "e00hf93cfnsgaxygn3"
    create_concurrency = 32  # Nebius documents no rate limit
    billing = billing_rules.NEBIUS  # how its cloud bills a VM's time (docs/billing.md)
    debug_loggers = ("nebius_sdk",)

    shapes = ShapesFile(NAME, __package__, "nebius_shapes.toml")  # its rows of the GPU catalog
    gpus = GpusFile(__package__, "nebius_shapes.toml")  # the GPU types only it sells

    def native_credentials(self, environ: Mapping[str, str], home: Path) -> NativeCredentials:
        """ReadsNativeCredentials: the cloud's own variables and files (nebius_native.py)."""
        from .nebius_native import native_credentials

        return native_credentials(environ, home)

    def embedded_settings(self, endpoint: Mapping[str, Any], time_scale: float) -> dict[str, Any]:
        """Settings for the mock Nebius of the embedded clouds, from its endpoint record: what a real profile has (a
        token and the default project; the regions' projects and the subnets come from the API), plus the
        contract terms of the mock tenant's capacity blocks."""
        return {"token": endpoint["token"], "endpoint": endpoint["target"], "project_id": endpoint["project_id"],
                "capacity_blocks": dict(endpoint.get("capacity_blocks", {})), "time_scale": time_scale}

    def connect(self, settings: Mapping[str, Any] | NebiusSettings) -> NebiusProvider:
        """A provider for these settings (no network call yet; a service account's files are read now). Raises
        ConfigError for bad settings, AuthError for service account files that are missing or malformed."""
        from nebius_sdk import NebiusClient
        from nebius_sdk.client import DEFAULT_POLL, DEFAULT_RETRY

        config = parse_settings(NebiusSettings, settings, title=self.title, provider=NAME)
        retry = scaled(DEFAULT_RETRY, config.time_scale)
        with translated():
            credentials = _credentials(config, retry)
        try:
            client = NebiusClient(credentials, domain=config.endpoint, parent_id=config.project_id, retry=retry,
                                  poll=scaled(DEFAULT_POLL, config.time_scale))
        except ValueError as exc:  # an endpoint that is no host:port, a CA variable naming no file
            raise ConfigError(f"Nebius: {exc}", provider=NAME) from None
        return NebiusProvider(client, config)


plugin = NebiusPlugin()


def _credentials(config: NebiusSettings, retry: RetryPolicy) -> TokenSource:
    """The SDK token source of the one credential setting given (`NebiusSettings.credential`). Raises the SDK's
    CredentialsError for service account files that are missing or malformed."""
    from nebius_sdk import ServiceAccount, StaticToken, TokenCommand, TokenFile

    kind = config.credential()
    if kind == "token":
        return StaticToken(config.token)
    if kind == "token_file":
        return TokenFile(config.token_file)
    if kind == "token_command":
        return TokenCommand(config.token_command)
    options: dict[str, Any] = {"domain": config.endpoint, "retry": retry}
    if kind == "service_account_file":
        return ServiceAccount.from_credentials_file(config.service_account_file, **options)
    if config.private_key:
        return ServiceAccount(config.service_account_id, config.public_key_id, config.private_key, **options)
    return ServiceAccount.from_private_key_file(config.private_key_file, config.service_account_id,
                                                config.public_key_id, **options)


class NebiusProvider:
    """One Nebius tenant, connected: Provider + SupportsStopStart + SupportsReboot + SupportsSpot + SupportsGetMany
    + SupportsGetStates + Paced + SupportsPlacementGroups (GPU clusters) + SupportsSpotPriceCap (pricing
    policies) + SupportsReservationTerms (the capacity blocks of its settings). Thread-safe.

    Every method may block on gRPC calls (the SDK retries transient failures with the same idempotency key)
    and raises only vm_core errors.
    """

    name = NAME
    _catalog = GivenCatalog()  # the catalog given, else the default one

    def __init__(self, client: NebiusClient, config: NebiusSettings, catalog: Catalog | None = None) -> None:
        self._client = client
        self._config = config
        self._given_catalog = catalog
        self._sold = Memo(self._read_platforms, ttl=PLATFORMS_TTL * config.time_scale)  # (region, preemptible)
        self._prices = Memo(self._read_prices, ttl=PLATFORMS_TTL * config.time_scale)  # (region, preemptible)
        self._discovered = Memo(self._discover_projects)  # default project id -> region -> project
        self._subnets = Memo(self._discover_subnet)  # (region, project) -> subnet id
        self._images = Memo(self._resolve_image)  # (project, --image or default family) -> Image

    def __repr__(self) -> str:
        return (f"NebiusProvider(endpoint={self.endpoint!r}, project_id={self._config.project_id!r}, "
                f"projects={self._config.projects!r})")

    @property
    def endpoint(self) -> str:
        """The compute service's host:port that calls go to (DescribesEndpoint): `compute.<domain>`, or the domain
        itself for a loopback address or localhost."""
        return self._client.target

    def account(self) -> str:
        """The configured project ids (the default one, and the `projects` setting's): Nebius instances live in
        projects, and a project belongs to one tenant. No network call, so discovered projects are not in it."""
        return "projects " + ",".join(sorted({self._config.project_id, *self._config.projects.values()}))

    def close(self) -> None:
        """Release the gRPC channels (the service account's too). Operations in flight continue in the cloud."""
        from nebius_sdk import ServiceAccount

        self._client.close()
        if isinstance(self._client.credentials, ServiceAccount):
            self._client.credentials.close()

    # ------------------------------------------------------------------------------------------ reads
    def list_instances(self) -> Iterator[Instance]:
        """Every instance of every configured project (lazily paged). When iteration starts, the first page of
        every further project is asked for at once (in daemon threads), so regions cost one round trip, not one
        each."""
        projects = list(self._projects().items())
        pages: list[Iterable[Any]] = [self._client.list_instances(project).by_page() if i == 0
                                      else self._client.list_instances(project).prefetched()
                                      for i, (_, project) in enumerate(projects)]
        for (region, project), listing in zip(projects, pages, strict=True):
            with translated(ErrorContext(region=region, project=project)):
                for page in listing:
                    for native in page:
                        yield self._instance(native)

    def get_instance(self, instance_id: str) -> Instance:
        """Raises NotFound when it does not exist (deleted instances are not found), UsageError for a
        malformed id."""
        with translated(_about(instance_id)):
            return self._instance(self._client.get_instance(instance_id))

    def get_instances(self, instance_ids: Collection[str]) -> dict[str, Instance | None]:
        """`InstanceService.BatchGet`, one call per 1000 ids: each id maps to its instance, or None when Nebius
        answers NotFound for it (deleted); ids answered with another error are left out (unknown)."""
        from nebius_sdk import NotFound as NativeNotFound

        with translated():
            found = self._client.batch_get_instances(list(instance_ids))
        return read_many(found, self._instance, gone=(NativeNotFound,))

    def get_states(self, instance_ids: Collection[str]) -> dict[str, InstanceState | None]:
        """`get_instances` reading only each instance's status (SupportsGetStates): its state, or None when Nebius
        answers NotFound for it; ids answered with another error are left out (unknown)."""
        from nebius_sdk import NotFound as NativeNotFound

        with translated():
            found = self._client.batch_get_instance_statuses(list(instance_ids))
        return read_many(found, status_state, gone=(NativeNotFound,))

    @property
    def poll_interval(self) -> float:
        """One second (scaled): Nebius documents no rate limit, and one read covers every followed instance."""
        return 1.0 * self._config.time_scale

    def find_instance(self, name: str) -> Instance | None:
        """The instance named `name` in the first configured project that has one (GetByName), or None."""
        if not name:
            raise UsageError("an instance name is required", provider=NAME)
        for region, project in self._projects().items():
            with translated(ErrorContext(region=region, project=project)):
                native = self._client.find_instance(name, parent_id=project)
            if native is not None:
                return self._instance(native)
        return None

    # ------------------------------------------------------------------------------------------ lifecycle
    def begin_create(self, spec: CreateSpec) -> Pending[Instance]:
        """Send the create and return at once (the operation knows the new instance id).

        Raises UsageError for an unknown GPU, a shape Nebius does not sell or a region that is not configured,
        ConfigError without a subnet, CapacityError when the chosen region does not offer the shape, and what
        the API answers at once (VmError for a name taken in the project, QuotaError, ...).
        """
        if not spec.name:
            raise UsageError("an instance name is required", provider=NAME)
        ssh_public_key = spec.ssh_public_key if spec.ssh_public_key is not None else self._config.ssh_public_key
        if ssh_public_key is None:
            raise no_key_error(NAME)  # before any call; NO_KEY (--no-ssh-key) is "": no login user
        if spec.spot and (spec.reservation.mode is ReservationMode.ID or spec.reservation.strict):
            raise UsageError("spot instances cannot use capacity blocks: drop --reservation ID/--strict",
                             provider=NAME)
        if spec.spot_max_price is not None and not spec.spot:
            raise UsageError("a spot price cap (--max-price) is for spot VMs: add --spot", provider=NAME)
        policy = reservation_policy(spec.reservation)
        shape = self._shape_for(spec)
        gpu = self._catalog.gpu(spec.gpu).name
        region = self._region_for(spec.region, shape, gpu)  # reads PlatformService; the checks above call nothing
        project = self._projects()[region]
        subnet = self._config.subnet(region) or self._subnets((region, project))
        platform, _, preset = shape.partition("/")
        strict_block = spec.reservation.reservation_id if spec.reservation.strict else ""
        context = ErrorContext(region=region, project=project, name=spec.name, gpu=gpu, block=strict_block)
        user_data = _cloud_init(ssh_public_key, self._config.ssh_user)
        image_id, disk_gib, user_data = self._boot(spec.machine, project, platform, user_data)
        cap = self.spot_price_cap(region, shape, spec.spot_max_price) if spec.spot_max_price is not None else ""
        with translated(context):
            operation = self._client.begin_create_instance(
                spec.name, platform, preset, parent_id=project, labels=spec.labels, subnet_id=subnet,
                reservation=policy, cloud_init_user_data=user_data, preemptible=spec.spot,
                image_id=image_id, boot_disk_gib=disk_gib, gpu_cluster_id=spec.placement_group or "",
                spot_pricing_policy_id=cap,
            )
        context = replace(context, instance_id=operation.resource_id)
        return _pending(operation, self.get_instance, context,
                        failed=lambda error, deadline: self._remove_failed(operation, error, deadline))

    def begin_destroy(self, instance_id: str) -> Pending[None]:
        """Delete an instance and its managed disks; an instance already gone gives a finished Pending."""
        context = _about(instance_id)
        with translated(context):
            operation = self._client.begin_delete_instance(instance_id)
        if not operation.continuation_token():  # already gone: the SDK's finished Operation
            return Finished(instance_id, None)
        return _pending(operation, lambda _id: None, context)

    def begin_stop(self, instance_id: str) -> Pending[Instance]:
        """Stop a RUNNING instance; the result is the instance re-read after the stop."""
        return self._act(lambda: self._client.begin_stop_instance(instance_id), instance_id)

    def begin_start(self, instance_id: str) -> Pending[Instance]:
        """Start a STOPPED instance; the result is the instance re-read after the start. A stop released its
        capacity block, and with the AUTO policy a start onto a full block runs on-demand: when a configured
        block could have held it (its region and platform) and it came back on-demand, the Pending's `note`
        says so after `wait`, with both prices (as Crusoe's start does)."""
        blocks = self._blocks_for(self.get_instance(instance_id))
        pending = self._act(lambda: self._client.begin_start_instance(instance_id), instance_id)
        return Noted(pending, lambda started: _on_demand_note(started, blocks)) if blocks else pending

    def reservation_terms(self) -> ReservationListing:
        """SupportsReservationTerms: the capacity blocks of the `capacity_blocks` setting (the compute API cannot
        list them), with their contract price and stated size; which VMs use one is not said (no call)."""
        return ReservationListing(tuple(ReservationTerms(ReservationInfo(
            provider=NAME, id=b.id, gpu=self._platform_gpu(b.platform), regions=(b.region,),
            total_gpus=b.gpus, used_gpus=None, price_per_gpu_hour=b.price_per_gpu_hour))
            for b in self._config.capacity_blocks.values()), BLOCKS_FROM_SETTINGS)

    def _platform_gpu(self, platform: str) -> str:
        return next((s.gpu for s in self._catalog.shapes if s.provider == NAME
                     and s.shape.startswith(f"{platform}/")), "")

    def _blocks_for(self, instance: Instance) -> list[CapacityBlock]:
        """The configured capacity blocks `instance` could run on: those of its region and platform."""
        platform = (instance.shape or "").split("/", 1)[0]
        return [b for b in self._config.capacity_blocks.values()
                if b.region == instance.region and b.platform == platform]

    def begin_reboot(self, instance_id: str, *, hard: bool = False) -> Pending[Instance]:
        """Stop, then start (Nebius has no reboot). Only the stop is sent now: the start follows when the
        stop has finished, from the Pending's `wait()` or `done()`. Unsupported for `hard`: Nebius has no reset,
        and a stop + start is not one."""
        if hard:
            raise Unsupported("Nebius AI Cloud has no hard reset; its only reboot is a stop then a start",
                              provider=NAME, suggestion=Hint.run("reboot", instance_id, "--provider", NAME))
        return StopThenStart(self.begin_stop(instance_id), self.begin_start, note=REBOOT_NOTE)

    # ------------------------------------------------------------------------------------------ spot price caps
    def spot_price_cap(self, region: str, shape: str, max_price_per_hour: float) -> str:
        """The project's pricing policy capping spot VMs of `shape` at `max_price_per_hour` (`_nebius_spot_caps`:
        per GPU-hour, reused or made). Blocks; raises UsageError for a cap Nebius refuses, CapacityError when the
        spot price is above it now."""
        platform = shape.partition("/")[0]
        entry = next((s for s in self._catalog.shapes if s.provider == NAME and s.shape == shape), None)
        price = sc.per_gpu(max_price_per_hour, entry.gpu_count if entry is not None else 1)
        return sc.ensure(self._client, self._projects()[region], region, platform, price)

    # ------------------------------------------------------------------------------------------ GPU clusters
    def placement_group(self, labels: Mapping[str, str], region: str, shape: str) -> str | None:
        """The fleet's GPU cluster for 8-GPU `shape` VMs in `region` (`_nebius_clusters`: the one carrying
        `labels`, else made on the fabric of the platform there); None for a preset of fewer GPUs or a platform
        with no fabric in the region. Blocks; raises VmError."""
        platform = shape.partition("/")[0]
        entry = next((s for s in self._catalog.shapes if s.provider == NAME and s.shape == shape), None)
        fabric = nc.fabric_for(platform, region, entry.gpu_count if entry is not None else 0)
        if fabric is None:
            return None
        return nc.ensure(self._client, self._projects()[region], region, labels, platform, fabric)

    def delete_placement_groups(self, labels: Mapping[str, str]) -> list[str]:
        """Delete the GPU clusters carrying all of `labels` in every region's project, blocking until they are
        gone; the ids deleted. Raises VmError."""
        return nc.delete_all(self._client, self._projects(), labels)

    # ------------------------------------------------------------------------------------------ offers
    def offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]:
        """One offer per catalog shape of `gpu` and configured region whose PlatformService lists it, plus the
        configured capacity blocks there.

        Nebius reports no capacity: capacity is None. The price is the billing calculator's, else (it did not
        answer) the catalog's list price; a block's is its contract price. Raises UsageError for an unknown GPU.
        """
        entries = self._catalog.shapes_for(NAME, self._catalog.gpu(gpu).name, gpu_count)
        found = []
        for region in self._projects():
            sold = self._shapes_sold(region)
            live = self._prices((region, False)) if any(e.shape in sold for e in entries) else {}
            found += [_priced(e, region, live, e.price_per_hour) for e in entries
                      if e.shape in sold and e.price_per_hour is not None]  # the catalog prices every Nebius shape
            found += [offer(e, region, round(b.price_per_gpu_hour * e.gpu_count, 4), b.holds(e.gpu_count),
                            reservation_id=b.id, price_source=PriceSource.CONTRACT)
                      for b in self._config.capacity_blocks.values() if b.region == region
                      for e in entries if e.shape in sold and e.shape.split("/")[0] == b.platform]
        return found

    def spot_offers(self, gpu: str, gpu_count: int | None = None) -> list[Offer]:
        """One spot offer per catalog shape of `gpu` with a spot list price, in each configured region whose
        PlatformService lists the preset on a platform allowed for preemptibles, at the calculator's spot price,
        else the catalog's. Raises UsageError for an unknown GPU."""
        entries = [
            e for e in self._catalog.shapes_for(NAME, self._catalog.gpu(gpu).name, gpu_count)
            if e.spot_price_per_hour is not None
        ]
        found = []
        for region in self._projects() if entries else ():
            sold = self._shapes_sold(region, preemptible=True)
            live = self._prices((region, True)) if any(e.shape in sold for e in entries) else {}
            found += [_priced(e, region, live, e.spot_price_per_hour, spot=True) for e in entries
                      if e.shape in sold and e.spot_price_per_hour is not None]
        return found

    # ------------------------------------------------------------------------------------------ internals
    def _act(self, begin: Callable[[], Operation[Any]], instance_id: str) -> Pending[Instance]:
        context = _about(instance_id)
        with translated(context):
            operation = begin()
        return _pending(operation, self.get_instance, context)

    def _instance(self, native: Any) -> Instance:
        region = next((r for r, p in self._projects().items() if p == native.metadata.parent_id), "")
        found = to_instance(native, region, self._catalog,
                            {b.id: b.price_per_gpu_hour for b in self._config.capacity_blocks.values()})
        return found if self._config.ssh_user == SSH_USER else replace(found, ssh_user=self._config.ssh_user)

    def _projects(self) -> dict[str, str]:
        """region -> project, the default project's region first: the `projects` setting, else the tenant's
        projects as the API lists them (found once, `_discover_projects`)."""
        return self._config.projects or self._discovered(self._config.project_id)

    def _discover_projects(self, project_id: str) -> dict[str, str]:
        """The default project's tenant's projects by region (`region_projects`): ProjectService.Get of the default
        project, then List of its tenant (every page)."""
        with translated(ErrorContext(project=project_id)):
            default = self._client.get_project(project_id)
        with translated(ErrorContext(tenant=default.tenant_id)):
            listed = self._client.list_projects(default.tenant_id).to_list()
        return region_projects(default, listed)

    def _discover_subnet(self, key: tuple[str, str]) -> str:
        """The subnet of new instances in a project (`project_subnet`), from its SubnetService.List (every page).
        Raises ConfigError when the project has none, or several and no default one."""
        region, project = key
        with translated(ErrorContext(region=region, project=project)):
            subnets = self._client.list_subnets(project).to_list()
        return project_subnet(subnets, project, region)

    def images(self, gpu: str | None, gpu_count: int | None = None, region: str | None = None) -> list[ImageInfo]:
        """The newest public image of each family in `region` (the default project's region when None), leaving
        out those that cannot boot the platform of `gpu`'s smallest shape; the default family for that platform
        is marked (SupportsMachineOptions; _nebius_images)."""
        regions = self._projects()
        where = region or next(iter(regions))
        if where not in regions:
            raise self._no_project_in(where, list(regions))
        platform = self._shape_for(CreateSpec(name="", gpu=gpu, gpu_count=gpu_count)).partition("/")[0] \
            if gpu else ""
        with translated(ErrorContext(region=where, project=regions[where])):
            listed = self._client.list_images(ni.public_parent(regions[where])).to_list()
        default = ni.default_family(platform) if platform else ""
        return [ni.info(image, where, default) for image in ni.latest_per_family(listed)
                if not ni.unsupported(image, platform)]

    def check_machine(self, gpu: str, gpu_count: int | None, region: str | None, options: MachineOptions) -> None:
        """UsageError when Nebius would refuse the options in `region` (else in every region that sells the
        shape): an image (family or id) that region does not have or that cannot boot the platform, a boot disk
        below the image's minimum, user data (with the login cloud-config merged in) above 32 KiB."""
        shape = self._shape_for(CreateSpec(name="", gpu=gpu, gpu_count=gpu_count))
        platform = shape.partition("/")[0]
        regions = self._projects()
        if region:
            candidates = [self._region_for(region, shape, self._catalog.gpu(gpu).name)]
        else:
            candidates = [r for r in regions if shape in self._shapes_sold(r)]
        # the profile's key and user; a create with its own key checks its own user data again
        login = _cloud_init(self._config.ssh_public_key, self._config.ssh_user)
        for where in candidates:
            self._boot(options, regions[where], platform, login)

    def _boot(self, options: MachineOptions, project: str, platform: str, login: str) -> tuple[str, int, str]:
        """(image id, boot disk GiB, user data) of a create in `project` (UsageError as `check_machine` says)."""
        image = self._images((project, options.image or ni.default_family(platform)))
        disk = ni.check_disk(image, options.disk_gib, platform, options.image or ni.default_family(platform))
        user_data = merged(login, options.startup_script)
        size = len(user_data.encode())
        if size > ni.MAX_USER_DATA:
            what = "--startup-script with the login cloud-config (cloud_init_user_data)" if login else \
                "--startup-script (cloud_init_user_data)"
            raise too_big(what, size, ni.MAX_USER_DATA, NAME)
        return (image.metadata.id if image.metadata is not None else ""), disk, user_data

    def _resolve_image(self, key: tuple[str, str]) -> Any:
        """The image `wanted` names for a project's region: an image id of that region's public images, or the
        latest image of a family there (ImageService.Get / GetLatestByFamily); UsageError listing the region's
        families when there is none."""
        from nebius_sdk import NotFound as NativeNotFound

        project, wanted = key
        parent = ni.public_parent(project)
        region = next((r for r, p in self._projects().items() if p == project), "")
        with translated(ErrorContext(region=region, project=project)):
            try:
                if ni.is_image_id(wanted):
                    image = self._client.get_image(wanted)
                else:
                    image = self._client.get_latest_image(wanted, parent_id=parent)
            except NativeNotFound:
                image = None
            if image is None or image.metadata is None or image.metadata.parent_id not in (parent, project):
                families = sorted({i.spec.image_family for i in self._client.list_images(parent) if i.spec})
                raise unknown_image(wanted, NAME, f" in {region or project}", families)
        return image

    def _shapes_sold(self, region: str, *, preemptible: bool = False) -> set[str]:
        """"platform/preset" of every preset the region's project may create (PlatformService.List, read again
        after PLATFORMS_TTL seconds times time_scale: a fleet's creates share one read); with `preemptible`,
        only on platforms allowed for preemptible VMs."""
        return self._sold((region, preemptible))

    def _read_prices(self, key: tuple[str, bool]) -> dict[str, float]:
        """"platform/preset" -> the calculator's hourly price of every catalog Nebius shape the region sells (on
        platforms allowed for preemptibles, for spot): one call prices a region for every GPU asked for; {} when
        the calculator does not answer."""
        region, preemptible = key
        sold = self._shapes_sold(region, preemptible=preemptible)
        shapes = sorted({s.shape for s in self._catalog.shapes if s.provider == NAME and s.shape in sold
                         and (s.spot_price_per_hour if preemptible else s.price_per_hour) is not None})
        return read_live(self._client, self._projects()[region], shapes, preemptible=preemptible)

    def _read_platforms(self, key: tuple[str, bool]) -> set[str]:
        region, preemptible = key
        project = self._projects()[region]
        with translated(ErrorContext(region=region, project=project)):
            return {
                f"{p.metadata.name}/{preset.name}"
                for p in self._client.list_platforms(project)
                if p.metadata is not None
                and (not preemptible or (p.status is not None and p.status.allowed_for_preemptibles))
                for preset in (p.spec.presets if p.spec else ())
            }

    def _shape_for(self, spec: CreateSpec) -> str:
        if spec.shape:
            if "/" not in spec.shape:
                raise UsageError(f"a Nebius shape is platform/preset (e.g. gpu-h100-sxm/8gpu-128vcpu-1600gb), "
                                 f"not {spec.shape!r}", provider=NAME)
            return spec.shape
        gpu = self._catalog.gpu(spec.gpu).name
        shapes = self._catalog.shapes_for(NAME, gpu, spec.gpu_count)
        if not shapes:
            per_vm = f" with {spec.gpu_count} GPUs per VM" if spec.gpu_count else ""
            raise UsageError(f"Nebius sells no {gpu} VM{per_vm}; it sells {self._menu()}", provider=NAME)
        return shapes[0].shape

    def _menu(self) -> str:
        counts: dict[str, list[int]] = {}
        for s in self._catalog.shapes:
            if s.provider == NAME:
                counts.setdefault(s.gpu, []).append(s.gpu_count)
        return ", ".join(f"{gpu}:{'/'.join(map(str, sorted(n)))}" for gpu, n in counts.items())

    def _region_for(self, wanted: str | None, shape: str, gpu: str) -> str:
        """`wanted` if it has a project and sells `shape`, else the first region that sells it."""
        regions = list(self._projects())
        if wanted:
            if wanted not in regions:
                raise self._no_project_in(wanted, regions)
            if shape not in self._shapes_sold(wanted):
                raise CapacityError(f"Nebius offers no {shape} in {wanted}", scope=Scope.REGION, region=wanted,
                                    provider=NAME, suggestion=Hint.say("{} lists where it is sold", Command.of(
                                        "offers", "--gpu", gpu, "--provider", NAME)))
            return wanted
        for region in regions:
            if shape in self._shapes_sold(region):
                return region
        raise CapacityError(f"none of the configured Nebius regions offers {shape}", scope=Scope.PROVIDER,
                            provider=NAME)

    def _no_project_in(self, region: str, regions: list[str]) -> UsageError:
        known = ", ".join(r or "(default project)" for r in regions)
        if self._config.projects:
            return UsageError(f"Nebius region {region!r} is not configured; configured regions: {known}",
                              provider=NAME, suggestion="add its project to the profile's `projects` table")
        return UsageError(f"Nebius region {region!r} has no project of this tenant; its regions: {known}",
                          provider=NAME, suggestion="create a project in that region (Nebius console), or choose "
                                                    "one of these regions")

    def _remove_failed(self, operation: Operation[Any], error: VmError, deadline: float) -> VmError:
        """When the create operation itself failed (not a timeout or a failed poll), delete the instance Nebius
        keeps (STOPPED), waiting until `deadline`; returns `error`.

        If it cannot be removed in time, `error` says so (its suggestion) instead of hiding the original error.
        """
        if operation.error() is None:
            return error
        instance_id = operation.resource_id
        try:
            with translated(_about(instance_id)):
                self._client.delete_instance(instance_id, wait_timeout=max(deadline - time.monotonic(), 0.0))
        except VmError as cleanup:
            detail = cleanup.message.replace(MARK, "{ }")  # the cloud's words are prose, not a command's mark
            error.hint = Hint.say(f"Nebius kept instance {instance_id} after the failed create and it is not gone "
                                  f"yet ({detail}); remove it with {{}}",
                                  Command.of("destroy", instance_id, "--provider", NAME))
        return error


PLATFORMS_TTL = 60.0  # seconds a PlatformService.List answer is reused (times time_scale)


def _priced(entry: ShapeEntry, region: str, live: Mapping[str, float], catalog_price: float,
            *, spot: bool = False) -> Offer:
    """The offer of a catalog row at its live price when the calculator gave one, else at `catalog_price`."""
    price = live.get(entry.shape)
    if price is None:
        return offer(entry, region, catalog_price, None, spot=spot, price_source=PriceSource.CATALOG)
    return offer(entry, region, price, None, spot=spot, price_source=PriceSource.API)


def _about(instance_id: str) -> ErrorContext:
    """The error context of a call about one instance. Raises UsageError for a malformed id (no API call)."""
    if not instance_id.startswith(INSTANCE_ID_PREFIX):
        raise UsageError(f"{instance_id!r} is not a Nebius instance id ({INSTANCE_ID_PREFIX}...)", provider=NAME)
    return ErrorContext(instance_id=instance_id)


def _cloud_init(ssh_public_key: str | None, user: str = SSH_USER) -> str:
    """The cloud-init user data that creates `user` (the ssh_user setting; sudo without password, bash) holding
    the key; "" without a key. Nebius images run cloud-init; the user is created on first boot."""
    if not ssh_public_key:
        return ""
    quoted = json.dumps(ssh_public_key.strip())  # a JSON string is a YAML string: nothing can be injected
    return (f"#cloud-config\nusers:\n  - name: {user}\n    sudo: \"ALL=(ALL) NOPASSWD:ALL\"\n"
            f"    shell: /bin/bash\n    ssh_authorized_keys:\n      - {quoted}\n")


def _pending(operation: Operation[Any], finish: Callable[[str], T], context: ErrorContext, *,
             failed: Callable[[VmError, float], VmError] | None = None) -> OperationPending[T]:
    """A Pending over one SDK Operation; `finish(resource_id)` gives the result once it succeeded; `failed` is
    the kit's hook for a wait that raised (OperationPending)."""
    return OperationPending(operation, lambda: translated(context), id=operation.id,
                            resource_id=operation.resource_id, block=operation.wait,
                            finish=lambda _answer: finish(operation.resource_id), failed=failed)


def _on_demand_note(instance: Instance, blocks: Sequence[CapacityBlock]) -> str:
    """"" when a started `instance` is on a capacity block; else that it runs on-demand although `blocks` could
    have held it, with its price now and the block's."""
    if instance.reserved:
        return ""
    now = f"${instance.price_per_hour:.2f}/h" if instance.price_per_hour is not None else "the list price"
    block = min(blocks, key=lambda b: b.price_per_gpu_hour)
    was = f"${block.price_per_gpu_hour * max(instance.gpu_count, 1):.2f}/h"
    return f"started on-demand at {now}: capacity block {block.id} ({was}) has no room for it"
