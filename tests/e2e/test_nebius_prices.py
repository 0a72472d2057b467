"""`vm offers` prices Nebius offers with the billing calculator and says where each price comes from: the API
(`billing.v1.CalculatorService.EstimateBatch`, which SkyPilot's catalog fetcher calls, `fetch_nebius.py:281-283`),
vm's catalog when the calculator does not answer, or the capacity block's contract (real-clouds.md Part 2, D4 and
section 4: "Nebius list prices exist in the API")."""

from __future__ import annotations

from mock_clouds import control

from .conftest import VmHome


def _sources(vm: VmHome) -> dict[tuple[str, bool, bool], set[tuple[str, float]]]:
    """(shape, spot, reserved) -> {(price source, price)} of the Nebius H100 offers."""
    found: dict[tuple[str, bool, bool], set[tuple[str, float]]] = {}
    for o in vm.ok("offers", "--gpu", "H100", "-p", "nebius", "-o", "json").json():
        found.setdefault((o["shape"], o["spot"], o["reserved"]), set()).add((o["price_source"], o["price_per_hour"]))
    return found


def test_nebius_offers_say_which_price_is_live_and_fall_back_to_the_catalog(fresh_home: VmHome) -> None:
    """Live: on-demand and spot offers at the calculator's prices (the mock answers Nebius's published list and
    spot prices: $2.95 and $1.25 for one H100), blocks at their contract price. When the calculator refuses (as for
    credentials without a billing role: the mock's admin switch), the same offers at the catalog's list prices."""
    vm = fresh_home
    one, eight = "gpu-h100-sxm/1gpu-16vcpu-200gb", "gpu-h100-sxm/8gpu-128vcpu-1600gb"
    live = _sources(vm)
    assert live[(one, False, False)] == {("api", 2.95)}
    assert live[(one, True, False)] == {("api", 1.25)}
    assert live[(eight, False, False)] == {("api", 23.6)}
    assert {source for source, _ in live[(eight, False, True)]} == {"contract"}
    table = vm.ok("offers", "--gpu", "H100", "-p", "nebius")
    column = table.rows()[0].index("SOURCE")
    assert {r[column] for r in table.rows()[1:]} == {"api", "contract"}

    control.admin_call(vm.endpoints(), "POST", "/nebius/calculator", {"permitted": False})
    fallback = _sources(vm)
    assert fallback[(one, False, False)] == {("catalog", 2.95)}
    assert fallback[(one, True, False)] == {("catalog", 1.25)}
    assert fallback[(eight, False, True)] == live[(eight, False, True)]
    assert set(fallback) == set(live)
