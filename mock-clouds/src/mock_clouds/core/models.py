"""Provider-neutral records of the simulation core.

The three front ends (crusoe, lambda_cloud, nebius) render these records in their own wire formats.
Every record is a msgspec Struct so the whole world can be persisted as one JSON document.
"""

from __future__ import annotations

import enum

import msgspec


class Provider(enum.StrEnum):
    CRUSOE = "crusoe"
    LAMBDA = "lambda"
    NEBIUS = "nebius"


class VMState(enum.StrEnum):
    """Core lifecycle states; each front end maps them to its native names."""

    CREATING = "creating"
    STARTING = "starting"
    RUNNING = "running"
    REBOOTING = "rebooting"
    STOPPING = "stopping"
    STOPPED = "stopped"
    DELETING = "deleting"
    DELETED = "deleted"
    ERROR = "error"


class OpKind(enum.StrEnum):
    CREATE = "create"
    START = "start"
    STOP = "stop"
    REBOOT = "reboot"
    RESET = "reset"
    RESTART = "restart"
    DELETE = "delete"
    UPDATE = "update"


class OpError(enum.StrEnum):
    """Why an operation failed; front ends map these to native error codes."""

    CAPACITY = "capacity"
    QUOTA = "quota"
    INTERNAL = "internal"
    ABORTED = "aborted"


class CreateFailure(enum.StrEnum):
    """What a failed create leaves behind, which differs per cloud."""

    REMOVE = "remove"  # Crusoe: the VM never appears
    STOP = "stop"  # Nebius: the instance stays STOPPED and must be deleted by the client
    ERROR = "error"  # Lambda: the instance stays, unhealthy


class Shape(msgspec.Struct, kw_only=True):
    """A machine shape a provider sells (Crusoe VM type, Lambda instance type, Nebius platform preset)."""

    key: str  # unique per provider; Nebius uses "<platform>/<preset>"
    family: str  # reservation match key: Crusoe product line, Lambda GPU family, Nebius platform
    gpus: int
    vcpus: int
    memory_gb: int
    disk_gb: int = 0
    price_cents_per_hour: int
    description: str = ""
    gpu_description: str = ""
    gpu_type: str = ""
    cpu_type: str = "intel"


class Capacity(msgspec.Struct, kw_only=True):
    """On-demand capacity: how many VMs of one shape a region can host at once."""

    region: str
    shape: str
    quantity: int


class Reservation(msgspec.Struct, kw_only=True):
    """Reserved capacity counted in GPUs; usage is derived from the VMs that hold it."""

    id: str
    family: str
    regions: list[str]
    quantity: int
    price_cents_per_gpu_hour: int
    scopes: list[str] = []  # projects/accounts allowed to use it; empty = every scope of the provider
    name: str = ""
    reservation_type: str = "RIPA"
    start: float = 0.0
    end: float = 0.0


class Quota(msgspec.Struct, kw_only=True):
    scope: str
    family: str
    max_gpus: int


class Project(msgspec.Struct, kw_only=True):
    """A scope that owns VMs: Crusoe project, Lambda account, Nebius project."""

    id: str
    name: str
    owner: str  # organisation / tenant / account id that the credentials belong to
    region: str = ""  # Nebius projects live in exactly one region


class Credential(msgspec.Struct, kw_only=True):
    """A secret that authenticates as one owner (organisation, account or tenant)."""

    owner: str
    key_id: str = ""  # Crusoe access key id; empty elsewhere
    secret: str


class Durations(msgspec.Struct, kw_only=True):
    """Real-world seconds for each operation kind, before the time scale is applied."""

    create: float = 60.0
    start: float = 30.0
    stop: float = 20.0
    reboot: float = 30.0
    reset: float = 10.0
    restart: float = 60.0
    delete: float = 20.0
    update: float = 5.0


class RateLimit(msgspec.Struct, kw_only=True):
    """Token buckets per credential; an interval of 0 disables the bucket."""

    request_interval: float = 0.0
    request_burst: int = 1
    create_interval: float = 0.0
    create_burst: int = 1


class Faults(msgspec.Struct, kw_only=True):
    error_rate: float = 0.0
    op_failure_rate: float = 0.0
    latency_ms: int = 0
    drop_rate: float = 0.0
    seed: int = 0


class ProviderConfig(msgspec.Struct, kw_only=True):
    shapes: list[Shape] = []
    capacity: list[Capacity] = []
    reservations: list[Reservation] = []
    quotas: list[Quota] = []
    projects: list[Project] = []
    regions: dict[str, str] = {}  # region name -> description
    durations: Durations = msgspec.field(default_factory=Durations)
    rate_limit: RateLimit = msgspec.field(default_factory=RateLimit)
    faults: Faults = msgspec.field(default_factory=Faults)
    extra: dict[str, object] = {}  # provider-specific seed data (ssh keys, images, file systems...)


class VM(msgspec.Struct, kw_only=True):
    provider: Provider
    id: str
    name: str
    scope: str
    region: str
    shape: str
    state: VMState
    created_at: float
    updated_at: float
    holds_capacity: bool = False
    reservation_id: str = ""  # reservation currently held (only while holds_capacity)
    last_reservation_id: str = ""  # reservation to reclaim on start
    reservation_candidates: list[str] | None = None  # None = any matching reservation
    use_reservations: bool = True
    on_demand_fallback: bool = True
    deleted_at: float = 0.0
    preempted: bool = False  # stopped by the cloud to reclaim spot capacity (`World.preempt`); cleared on start
    spot: bool = False  # billed at the spot price (Nebius preemptible)
    native: dict[str, object] = {}  # provider-specific fields the front end stores verbatim


class Operation(msgspec.Struct, kw_only=True):
    provider: Provider
    id: str
    scope: str
    kind: OpKind
    resource_id: str
    created_at: float
    due_at: float
    done: bool = False
    finished_at: float = 0.0
    error: OpError | None = None
    message: str = ""
    idempotency_key: str = ""
    created_by: str = ""
    native: dict[str, object] = {}


class ServiceAccount(msgspec.Struct, kw_only=True):
    """A Nebius service account with one authorized key (an RSA key pair registered as `publickey-...`).

    The mock keeps the private half, which the real cloud never sees, so that `mock-clouds credentials` can
    hand it out as the credentials file a user would have made when uploading the key."""

    id: str  # serviceaccount-e00...
    owner: str  # the tenant it belongs to
    public_key_id: str  # publickey-e00...
    public_key_pem: str = ""  # SubjectPublicKeyInfo PEM; "" until first needed (nebius/keys.py key_pair)
    private_key_pem: str = ""  # PKCS#8 PEM, unencrypted (secret); made with the public half


class IssuedToken(msgspec.Struct, kw_only=True):
    """An access token issued by a token exchange, known only by its SHA-256 digest."""

    owner: str  # the tenant it authenticates as
    subject: str  # the service account it was issued to
    expires_at: float  # wall-clock epoch seconds


class TokenExchange(msgspec.Struct, kw_only=True):
    """One successful token exchange (mock extension: the log tests read to count renewals)."""

    at: float
    service_account_id: str
    expires_at: float


class TokenService(msgspec.Struct, kw_only=True):
    """Nebius IAM's token exchange: service accounts, issued access tokens and the exchange log."""

    token_lifetime: float = 43200.0  # seconds before the time scale: the real 12 h
    service_accounts: list[ServiceAccount] = []
    issued: dict[str, IssuedToken] = {}  # SHA-256 hex digest of the access token -> token
    exchange_count: int = 0  # every exchange since the world was created
    exchanges: list[TokenExchange] = []  # the most recent ones (bounded), oldest first


class BillingEntry(msgspec.Struct, kw_only=True):
    """From `at` (world seconds) until the next entry, a VM was in `state` at `price_per_hour` (USD, a decimal
    string) on `pricing` ("on-demand" | "spot" | "reservation", then holding `gpus` GPUs of `reservation_id`)."""

    at: float
    state: VMState
    pricing: str
    price_per_hour: str
    reservation_id: str = ""
    gpus: int = 0


class BillingRecord(msgspec.Struct, kw_only=True):
    """What a cloud would bill a VM by: its billing log, kept after the VM itself is purged (mock extension)."""

    provider: Provider
    id: str
    name: str
    scope: str
    region: str
    shape: str
    entries: list[BillingEntry] = []


class WorldState(msgspec.Struct, kw_only=True):
    """Everything that survives a restart of the mocks."""

    seed: int = 0
    time_scale: float = 0.05
    providers: dict[str, ProviderConfig] = {}
    credentials: dict[str, list[Credential]] = {}
    vms: dict[str, VM] = {}  # key: "<provider>:<id>"
    operations: dict[str, Operation] = {}  # key: "<provider>:<id>"
    idempotency: dict[str, str] = {}  # "<provider>:<owner>:<key>" -> operation key
    extra_state: dict[str, object] = {}  # front-end owned data (ssh keys created through the API...)
    token_service: TokenService = msgspec.field(default_factory=TokenService)  # Nebius IAM
    clock_offset: float = 0.0  # seconds the world clock runs ahead of the wall clock (admin POST /clock)
    billing_since: float = 0.0  # world time billing began (the world's first start): reservations bill from it
    billing: dict[str, BillingRecord] = {}  # "<provider>:<id>" -> the VM's billing log (core/billing.py)
