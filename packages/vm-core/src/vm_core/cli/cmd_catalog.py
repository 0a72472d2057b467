"""`vm offers` and `vm providers`."""

from __future__ import annotations

import click

from ..actions import fan_out
from ..catalog import default_catalog
from ..model import Offer
from ..session import report_providers
from . import views
from .app import App, common_options, pass_app, provider_option


@click.command()
@click.option("--gpu", required=True, metavar="TYPE[:N]",
              help="GPU type, optionally with GPUs per VM (H100:8); without :N, every size.")
@provider_option(required=False)
@click.option("--all", "show_all", is_flag=True, help="Also offers without capacity now.")
@common_options
@pass_app
def offers(app: App, gpu: str, provider: str | None, show_all: bool) -> None:
    """Where a GPU type can be had now: shapes, regions, prices, capacity and reservations.

    Cheapest per GPU-hour first (with --all, offers without capacity follow). `--gpu H100` lists every size
    sold; `--gpu H100:1` only one-GPU VMs (what `vm create --gpu H100` and `vm fleet create --gpu H100` use).

    \b
    vm offers --gpu H100
    vm offers --gpu H100:8 --provider crusoe -o json
    """
    request = default_catalog().parse(gpu, any_size=True)
    session = app.session()
    if provider is not None:
        session.plugin(provider)
    names = [provider] if provider else session.configured_names()
    outcomes = fan_out(lambda name: session.provider(name).offers(request.gpu, request.gpu_count), names)
    found: list[Offer] = [offer for o in outcomes if o.value for offer in o.value if show_all or offer.available]
    views.offers(app.output, sorted(found, key=cheapest_first))
    app.finish([(o.key, o.error) for o in outcomes if o.error], len(names), "providers", as_warnings=True)


def cheapest_first(offer: Offer) -> tuple[bool, float, float, str, str]:
    per_gpu = offer.price_per_hour / offer.gpu_count if offer.gpu_count else offer.price_per_hour
    return (not offer.available, per_gpu, offer.price_per_hour, offer.provider, offer.region)


@click.command()
@common_options
@pass_app
def providers(app: App) -> None:
    """The provider plugins: which are configured, where their API is, what they can do, and broken ones.

    \b
    vm providers
    """
    views.providers(app.output, report_providers(app.session()))
