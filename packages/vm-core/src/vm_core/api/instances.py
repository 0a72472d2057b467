"""The VM and catalog verbs of `Client` (see its methods for the contracts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..calls import Outcome as Done
from ..calls import failure_error, fan_out
from ..errors import NotFound, Unsupported, UsageError, VmError
from ..hints import MARK, Command, Hint, phrase
from ..model import CreateSpec, Instance, InstanceState, Offer, ReservationMode
from ..spend.observe import CreatedVms, observe, observe_gone
from . import validate
from .confirm import Confirm, Confirmation, ask, destroying
from .outcome import Problem
from .reports import (
    ConfigReport,
    DestroyedVms,
    Gone,
    ImageList,
    InstanceList,
    InstanceReport,
    OfferList,
    ProviderList,
    VmsActed,
    VmsCreated,
)
from .requests import (
    ActionRequest,
    CreateRequest,
    GetRequest,
    ImagesRequest,
    ListRequest,
    OffersRequest,
    ProvidersRequest,
)
from .reservations import ON_DEMAND, warn_on_demand
from .running import accepted_only, perform

if TYPE_CHECKING:
    from ..provider import Pending, Provider
    from .client import Client


def problem_of(failures: Sequence[tuple[str, VmError]], total: int, what: str,
               note: Hint | None = None) -> Problem | None:
    """None without failures; else the error of a verb over `total` targets (actions.failure_error), with each
    failure listed when there were several; `note` becomes the error's hint."""
    if not failures:
        return None
    error = failure_error(failures, total, what)
    if note is not None:
        error.hint = note
    return Problem.of(error, failures if total > 1 else [])


# ------------------------------------------------------------------------------------------ list, get
def list_instances(client: Client, request: ListRequest) -> InstanceList:
    from ..fleet.owners import FleetNames

    session = client.session
    names = session.selected(request.provider)
    fleets = FleetNames(session)  # read from the store while the providers answer
    outcomes = fan_out(lambda name: list(session.provider(name).list_instances()), names, prepare=session.provider)
    failures = [(o.key, o.error) for o in outcomes if o.error]
    problem = problem_of(failures, len(names), "providers")
    listed = {o.key: o.value for o in outcomes if o.value is not None}
    if names and len(failures) == len(names):
        return InstanceList(answered=False, problem=problem)
    found = fleets.apply([i for o in outcomes if o.value for i in o.value], client.warn)
    observe(session, found, "list", client.warn, complete=list(listed))
    wanted = [i for i in found if (request.fleet is None or i.fleet == request.fleet)
              and (request.state is None or i.state == request.state)
              and (request.region is None or i.region == request.region)
              and (request.name is None or i.name == request.name)]
    return InstanceList(instances=sorted(wanted, key=lambda i: (i.provider, i.name, i.id)), listed=listed,
                        problem=problem)


def get_instance(client: Client, request: GetRequest) -> InstanceReport:
    from ..fleet.owners import FleetNames

    session = client.session
    instance_id = validate.instance_id(session.plugin(request.provider), request.provider, request.instance_id)
    try:
        found = session.provider(request.provider).get_instance(instance_id)
    except NotFound:
        observe_gone(session, request.provider, [instance_id], "get", client.warn)
        raise
    observe(session, [found], "get", client.warn)
    return InstanceReport(instance=FleetNames(session).apply([found], client.warn)[0])


# ----------------------------------------------------------------------------------------------- create
def create_instances(client: Client, request: CreateRequest, confirm: Confirm | None) -> VmsCreated:
    from ..catalog import default_catalog
    from ..machine import check as check_machine
    from ..sshkeys import check_keys

    session, provider = client.session, request.provider
    plugin = session.plugin(provider)
    wanted = validate.gpu(default_catalog(), provider, request.gpu)
    where = validate.region(provider, request.region)
    reservation = validate.reservation(request.reservation, request.strict, provider)
    specs = [CreateSpec(name=n, gpu=wanted.gpu, gpu_count=wanted.gpu_count, region=where, reservation=reservation,
                        spot=request.spot, ssh_public_key=request.ssh_public_key, machine=request.machine,
                        spot_max_price=request.max_price)
             for n in validate.names(request.name, validate.count(request.count))]
    target = session.provider(provider)
    _check_price_cap(target, plugin.title, request.spot, request.max_price)
    check_machine(target, provider, specs[0].gpu, specs[0].gpu_count, specs[0].region, request.machine)
    check_keys(session, [provider], request.ssh_public_key, client.warn)
    if specs[0].region is not None:
        _check_region(target, specs[0])
    ask(confirm, _unterminable(client, target, plugin.title, specs[0], len(specs)))
    ledger = CreatedVms(session, target, gpu=wanted.gpu, gpu_count=wanted.gpu_count or 0, spot=request.spot,
                        warn=client.warn)
    outcomes = perform(target, "create", target.begin_create, specs, no_wait=request.no_wait, timeout=request.timeout,
                       progress=client.progress, warn=client.warn, label=lambda spec: spec.name,
                       on_accepted=ledger.accepted)
    ledger.settled([o.value for o in outcomes if isinstance(o.value, Instance)])
    if request.reservation != ON_DEMAND:  # on-demand asked for by name is not warned about
        warn_on_demand(client, [o.value for o in outcomes if isinstance(o.value, Instance)])
    failures = [(o.key.name, o.error) for o in outcomes if o.error]
    note = _left_running(provider, outcomes) if failures else None
    accepted = accepted_only(outcomes) if request.no_wait else []
    return VmsCreated(instances=[o.value for o in outcomes if isinstance(o.value, Instance)], accepted=accepted,
                      single=request.count == 1, provider=provider,
                      problem=problem_of(failures, len(specs), "VMs", note))


def _check_price_cap(target: Provider, title: str, spot: bool, max_price: float | None) -> None:
    """UsageError for a price cap without spot, Unsupported where the cloud cannot cap spot prices (before any
    create call)."""
    from ..provider import SupportsSpotPriceCap

    if max_price is None:
        return
    if not spot:
        raise UsageError("--max-price caps the price of spot VMs: add --spot")
    if not isinstance(target, SupportsSpotPriceCap):
        raise Unsupported(f"{title} cannot cap spot prices", provider=target.name)


def _check_region(target: Provider, spec: CreateSpec) -> None:
    """UsageError (before any create call) when none of the provider's offers of the GPU is in spec.region."""
    wanted = f"{spec.gpu}:{spec.gpu_count}" if spec.gpu_count else spec.gpu
    assert spec.region is not None
    validate.offered_region(target.offers(spec.gpu, spec.gpu_count), target.name, wanted, spec.region)


def _unterminable(client: Client, target: Provider, title: str, spec: CreateSpec, count: int) -> Confirmation | None:
    """Before any create call: VMs asked on a reservation whose VMs the cloud will not delete through its API
    (`ReservationInfo.terminable` False: Lambda) are warned about, and the question to ask (default no: nothing
    created); a reservation listing that fails is warned about and asked the same way, since vm cannot tell.
    None when there is nothing to ask."""
    from ..provider import SupportsReservations

    if spec.reservation.mode is not ReservationMode.ID or not isinstance(target, SupportsReservations):
        return None
    wanted = spec.reservation.reservation_id
    try:
        listed = target.list_reservations()
    except VmError as exc:
        client.warn(f"cannot tell whether {target.name} can destroy VMs on reservation {wanted}: {exc.message}")
    else:
        found = next((r for r in listed if r.id == wanted), None)
        if found is None or found.terminable:
            return None
        vms, bills = ("this VM", "it bills until it is") if count == 1 else (f"these {count} VMs",
                                                                            "they bill until they are")
        client.warn(phrase(f"{vms} on reservation {wanted} cannot be destroyed through {title}'s API: ",
                           Command.of("destroy"), f" will refuse, and {bills} terminated in {title}'s console or by"
                           " its support"))
    return Confirmation(f"Create {count} VM{'s' if count > 1 else ''} that vm cannot destroy?",
                        Hint.run("create", "--provider", target.name, "--gpu",
                                 f"{spec.gpu}:{spec.gpu_count}" if spec.gpu_count else spec.gpu, "--count", count,
                                 "--reservation", wanted or "", "--yes"), undone="created")


def _left_running(provider: str, outcomes: list[Done[CreateSpec, Any]]) -> Hint | None:
    made = [o.value for o in outcomes if o.value is not None]
    if not made:
        return None
    ids = [getattr(v, "id", None) or v.instance_id for v in made]
    return Hint.say(f"the {len(made)} VM(s) created are left running; destroy them with {MARK}",
                    Command.of("destroy", *ids, "--provider", provider, "--yes"))


# --------------------------------------------------------------------------------- stop, start, reboot
def _target(client: Client, provider: str, instance_ids: Sequence[str]) -> tuple[Provider, list[str]]:
    """The connected provider and the checked ids (UsageError before any API call)."""
    plugin = client.session.plugin(provider)
    ids = list(dict.fromkeys(validate.instance_id(plugin, provider, i) for i in instance_ids))
    return client.session.provider(provider), ids


def _title(client: Client, provider: str) -> str:
    return client.session.plugin(provider).title


def act(client: Client, verb: str, request: ActionRequest) -> VmsActed:
    """stop, start or reboot every VM of the request (each looked up first, for its name); one already in the
    state the verb leads to is left as it is and reported with the others. NotFound for a VM that does not
    exist is its failure."""
    from ..lifecycle import look_up, name_of, reboot, stop_start, strict_start, triage

    target, ids = _target(client, request.provider, request.instance_ids)
    title = _title(client, request.provider)
    begin: Callable[[str], Pending[Any]]
    already: InstanceState | None = None
    if verb == "stop":
        begin, already = stop_start(target, title, ids).begin_stop, InstanceState.STOPPED
    elif verb == "start":
        begin, already = stop_start(target, title, ids).begin_start, InstanceState.RUNNING
        if request.strict:
            begin = strict_start(target, title, ids)
    else:
        begin = reboot(target, title, ids, hard=request.hard)
    found = look_up(target, ids)
    sorted_ = triage(found, ids, already)
    for instance in sorted_.settled:
        client.progress(f"{target.name}: {instance.name or instance.id}: already {already}")
    outcomes = perform(target, verb, begin, sorted_.todo, no_wait=request.no_wait, timeout=request.timeout,
                       progress=client.progress, warn=client.warn, label=lambda i: name_of(found[i]))
    done = [o.value for o in outcomes if isinstance(o.value, Instance)]  # waited for (also despite no_wait)
    by_id = {i.id: i for i in [*sorted_.settled, *done]}
    failures = sorted_.missing + [(o.key, o.error) for o in outcomes if o.error]
    observe(client.session, [*sorted_.settled, *done], verb, client.warn)
    warn_on_demand(client, done if verb == "start" else [])
    return VmsActed(instances=[by_id[i] for i in ids if i in by_id], accepted=accepted_only(outcomes),
                    single=len(ids) == 1, problem=problem_of(failures, len(ids), "VMs"))


def destroy_instances(client: Client, request: ActionRequest, confirm: Confirm | None) -> DestroyedVms:
    from ..lifecycle import gone_note, look_up, name_of, shown

    provider = request.provider
    target, ids = _target(client, provider, request.instance_ids)
    found = look_up(target, ids)
    notes = {i: note for i in ids if (note := gone_note(found[i]))}  # nothing to send for these
    live = [i for i in ids if i not in notes]
    ask(confirm, destroying([shown(found[i], provider, i) for i in live],
                            again=Hint.run("destroy", *live, "--provider", provider, "--yes")))
    for vm_id, note in notes.items():
        client.progress(f"{provider}: {vm_id}: {note}")
    outcomes = perform(target, "destroy", target.begin_destroy, live, no_wait=request.no_wait,
                       timeout=request.timeout, progress=client.progress, warn=client.warn,
                       label=lambda i: name_of(found[i]))
    done = {o.key for o in outcomes if not o.error}
    accepted = accepted_only(outcomes) if request.no_wait and done else []
    gone = [Gone(i, name_of(found[i]), notes.get(i, "")) for i in ids if i in notes or i in done]
    observe_gone(client.session, provider, [g.instance_id for g in gone], "destroy", client.warn)
    return DestroyedVms(provider=provider, gone=gone, accepted=accepted, single=len(ids) == 1,
                        problem=problem_of([(o.key, o.error) for o in outcomes if o.error], len(ids), "VMs"))


# -------------------------------------------------------------------------------------------- catalog
def find_offers(client: Client, request: OffersRequest) -> OfferList:
    from ..catalog import default_catalog

    wanted = default_catalog().parse(request.gpu, any_size=True)
    session = client.session
    names = session.selected(request.provider)
    outcomes = fan_out(lambda name: _offers(session.provider(name), wanted.gpu, wanted.gpu_count), names,
                       prepare=session.provider)
    failures = [(o.key, o.error) for o in outcomes if o.error]
    problem = problem_of(failures, len(names), "providers")
    if names and len(failures) == len(names):
        return OfferList(answered=False, problem=problem)
    found = [offer for o in outcomes if o.value for offer in o.value
             if (request.show_all or offer.available) and (request.region is None or offer.region == request.region)]
    return OfferList(offers=sorted(found, key=cheapest_first), problem=problem)


def _offers(target: Provider, gpu: str, gpu_count: int | None) -> list[Offer]:
    """The provider's offers, followed by its spot offers if it sells spot capacity."""
    from ..provider import SupportsSpot

    found = target.offers(gpu, gpu_count)
    if isinstance(target, SupportsSpot):
        found += target.spot_offers(gpu, gpu_count)
    return found


def cheapest_first(offer: Offer) -> tuple[bool, float, float, str, str]:
    per_gpu = offer.price_per_hour / offer.gpu_count if offer.gpu_count else offer.price_per_hour
    return (not offer.available, per_gpu, offer.price_per_hour, offer.provider, offer.region)


def report_providers(client: Client, request: ProvidersRequest) -> ProviderList:
    from ..session import report_providers as reports_of

    session = client.session
    reports = reports_of(session, check_timeout=request.timeout)
    clouds = next(filter(None, map(session.embedded_clouds, session.configured_names())), None)
    problem = None if any(r.configured for r in reports) else Problem.of(session.nothing_configured())
    return ProviderList(providers=reports, profile=session.profile.name, chosen_by=session.chosen_by,
                        mock_clouds=clouds.title if clouds else "", problem=problem)


def list_images(client: Client, request: ImagesRequest) -> ImageList:
    from ..catalog import default_catalog
    from ..machine import SupportsMachineOptions

    wanted = default_catalog().parse(request.gpu, any_size=True) if request.gpu else None
    target = client.session.provider(request.provider)
    if not isinstance(target, SupportsMachineOptions):
        raise Unsupported(f"{request.provider} does not list images", provider=request.provider)
    return ImageList(images=target.images(wanted.gpu if wanted else None, wanted.gpu_count if wanted else None,
                                          request.region))


def show_config(client: Client, profiles: Sequence[str] | None = None) -> ConfigReport:
    """`profiles`: the config's profile names (default: read from the config file)."""
    from ..config import load_config
    from ..session import configuration

    session = client.session
    names = list(profiles) if profiles is not None else load_config(session.paths.config_file).names()
    return ConfigReport(document=configuration(session, names))

