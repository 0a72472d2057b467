"""`vm offers` and `vm providers` (vm_core.api: Client.offers, Client.providers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..session import CHECK_TIMEOUT
from . import views
from .app import SECONDS, App, completes, provider_option, with_app

if TYPE_CHECKING:
    from ..api.reports import ProviderList


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
    from ..api.requests import OffersRequest

    report = app.client().offers(OffersRequest(gpu, provider=provider, region=region, show_all=show_all))
    if report.answered:
        views.offers(app.output, report)
    app.conclude(report, as_warnings=True)


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
    from ..api.requests import ProvidersRequest

    report = app.client().providers(ProvidersRequest(timeout=timeout))
    app.output.progress(profile_line(report))
    views.providers(app.output, report)
    app.conclude(report)


def profile_line(report: ProviderList) -> str:
    """Which profile the command acts on and why, saying so when it is the embedded mock clouds."""
    why = f" ({report.chosen_by})" if report.chosen_by else ""
    mocks = f": {report.mock_clouds}, not real clouds" if report.mock_clouds else ""
    return f"vm: profile {report.profile}{why}{mocks}"
