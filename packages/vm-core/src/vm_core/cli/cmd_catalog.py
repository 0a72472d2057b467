"""`vm offers` and `vm providers`."""

from __future__ import annotations

import click

from ..actions import fan_out
from ..catalog import default_catalog
from ..model import Offer
from ..provider import Provider, SupportsSpot
from ..session import CHECK_TIMEOUT, Session, report_providers
from . import views
from .app import SECONDS, App, completes, provider_option, with_app


@click.command()
@click.option("--gpu", required=True, metavar="TYPE[:N]", shell_complete=completes("gpu_types"),
              help="GPU type, optionally with GPUs per VM (H100:8); without :N, every size.")
@provider_option(required=False)
@click.option("--region", metavar="REGION", help="Only offers in this region.")
@click.option("--all", "show_all", is_flag=True, help="Also offers without capacity now.")
@with_app
def offers(app: App, gpu: str, provider: str | None, region: str | None, show_all: bool) -> None:
    """Where a GPU type can be had now: shapes, regions, prices, capacity and reservations.

    Cheapest per GPU-hour first (with --all, offers without capacity follow). When every provider fails,
    nothing is listed. `--gpu H100` lists every size sold; `--gpu H100:1` only one-GPU VMs (what `vm create --gpu
    H100` and `vm fleet create --gpu H100` use). Spot offers (preemptible VMs at the spot price, from providers
    that sell them) are marked as such; create them with `vm create --spot`.

    \b
    vm offers --gpu H100
    vm offers --gpu H100:8 --provider crusoe -o json
    vm offers --gpu H100 --region us-east1-a --all
    """
    request = default_catalog().parse(gpu, any_size=True)
    session = app.session()
    names = session.selected(provider)
    outcomes = fan_out(lambda name: _offers(session.provider(name), request.gpu, request.gpu_count), names,
                       prepare=session.provider)
    failures = [(o.key, o.error) for o in outcomes if o.error]
    if names and len(failures) == len(names):
        app.finish(failures, len(names), "providers", as_warnings=True)
    found: list[Offer] = [offer for o in outcomes if o.value for offer in o.value
                          if (show_all or offer.available) and (region is None or offer.region == region)]
    views.offers(app.output, sorted(found, key=cheapest_first))
    app.finish(failures, len(names), "providers", as_warnings=True)


def _offers(target: Provider, gpu: str, gpu_count: int | None) -> list[Offer]:
    """The provider's offers, followed by its spot offers if it sells spot capacity."""
    found = target.offers(gpu, gpu_count)
    if isinstance(target, SupportsSpot):
        found += target.spot_offers(gpu, gpu_count)
    return found


def cheapest_first(offer: Offer) -> tuple[bool, float, float, str, str]:
    per_gpu = offer.price_per_hour / offer.gpu_count if offer.gpu_count else offer.price_per_hour
    return (not offer.available, per_gpu, offer.price_per_hour, offer.provider, offer.region)


@click.command()
@click.option("--timeout", type=SECONDS, default=CHECK_TIMEOUT, show_default=True, metavar="SECONDS",
              help="How long to wait for the credential checks (made at once for every provider).")
@with_app
def providers(app: App, timeout: float) -> None:
    """The provider plugins: which are configured, whether their credentials work, where their API is, what
    they can do, and broken ones.

    STATUS is ok only once an authenticated call succeeded; else auth refused, unreachable (with the reason),
    error, not configured or broken.

    \b
    vm providers
    vm providers -o json --timeout 3
    """
    session = app.session()
    reports = report_providers(session, check_timeout=timeout)
    app.output.progress(profile_line(session))
    views.providers(app.output, reports)
    if not any(r.configured for r in reports):
        app.fail(session.nothing_configured())


def profile_line(session: Session) -> str:
    """Which profile the command acts on and why, saying so when it is the embedded mock clouds."""
    why = f" ({session.chosen_by})" if session.chosen_by else ""
    clouds = next(filter(None, map(session.embedded_clouds, session.configured_names())), None)
    mocks = f": {clouds.title}, not real clouds" if clouds else ""
    return f"vm: profile {session.profile.name}{why}{mocks}"
