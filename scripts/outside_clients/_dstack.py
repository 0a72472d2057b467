"""What the three dstack drivers share: dstack 0.22.5's offer catalog fed from the mock, and the server's loops.

dstack's server builds offers from gpuhunt: `get_catalog_offers` reads `gpuhunt.default_catalog()`, which downloads
dstack's published catalog of the "offline" providers (Lambda and Nebius: collected by gpuhunt against the real
clouds, then published to S3) and queries the "online" ones (Crusoe) live. The published catalog describes the
real clouds, not the mock, so `offline_catalog` collects it the way dstack's publishing job does, with gpuhunt's
own provider against the mock, and puts it where `default_catalog()` would have loaded it. That is the only
change: the offers, their availability and everything after are dstack's code.

`terminate` is the server's loop around `Compute.terminate_instance`, which raises `NotYetTerminated` until
the VM is gone (dstack's `process_instances` task calls it again later).
"""

from __future__ import annotations

import time
from typing import Any

# dstack's server runs offers, provisioning and termination as separate background tasks, seconds apart; the
# drivers pause between those phases instead of sending them in one burst no dstack server sends.
PHASE_PAUSE = 2.0
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f dstack@outside-clients"


def pause() -> None:
    time.sleep(PHASE_PAUSE)


def offline_catalog(provider_name: str, items: list[Any]) -> Any:
    """Makes `gpuhunt.default_catalog()` (as dstack's offers module calls it) answer `items` for
    `provider_name`, as if dstack's published catalog had been loaded. Returns the catalog."""
    import gpuhunt
    from dstack._internal.core.backends.base import offers
    from gpuhunt._internal.catalog import ProviderCatalog

    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    catalog.catalog[provider_name] = ProviderCatalog(version="mock", items=items)
    catalog.loaded_at = time.monotonic()
    offers.gpuhunt.default_catalog = lambda: catalog  # type: ignore[attr-defined]
    return catalog


def validate_backend(report: Any, configurator: Any, good: Any, bad: Any) -> None:
    """What `dstack` does when a user adds the backend: `Configurator.validate_config` must accept the mock's
    credentials and refuse wrong ones with dstack's invalid-credentials error (not an unexpected exception)."""
    from dstack._internal.core.errors import BackendInvalidCredentialsError

    report.run("backend config accepted (Configurator.validate_config)",
               lambda: configurator.validate_config(good, default_creds_enabled=False), lambda _: "valid")

    def refused() -> str:
        try:
            configurator.validate_config(bad, default_creds_enabled=False)
        except BackendInvalidCredentialsError as e:
            return f"refused: {e.msg[:150]}"
        raise AssertionError("wrong credentials were accepted")

    report.run("wrong credentials refused as invalid (Configurator.validate_config)", refused, str)


def instance_config(name: str) -> Any:
    from dstack._internal.core.models.instances import InstanceConfiguration, SSHKey

    return InstanceConfiguration(project_name="oc", instance_name=name, user="tester",
                                 ssh_keys=[SSHKey(public=PUBLIC_KEY)])


def placement_group(name: str, backend: Any, region: str) -> Any:
    from dstack._internal.core.models.placement import (
        PlacementGroup,
        PlacementGroupConfiguration,
        PlacementStrategy,
    )

    return PlacementGroup(name=name, project_name="oc", configuration=PlacementGroupConfiguration(
        backend=backend, region=region, placement_strategy=PlacementStrategy.CLUSTER))


def provisioned(compute: Any, data: Any, timeout: float = 180) -> str:
    """The server's `update_provisioning_data` loop: until the instance has a hostname."""
    deadline = time.monotonic() + timeout
    while data.hostname is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no hostname after {timeout:.0f}s")
        compute.update_provisioning_data(data, PUBLIC_KEY, "")
        if data.hostname is None:
            time.sleep(1)
    return f"hostname {data.hostname}, internal {data.internal_ip}"


def terminate(compute: Any, data: Any, timeout: float = 180) -> str:
    """Calls terminate_instance until it stops raising NotYetTerminated; returns how many calls it took."""
    from dstack._internal.core.errors import NotYetTerminated

    deadline = time.monotonic() + timeout
    calls = 0
    while True:
        calls += 1
        try:
            compute.terminate_instance(data.instance_id, data.region, data.backend_data)
            return f"terminated after {calls} call(s)"
        except NotYetTerminated:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def pick(offers: list[Any], name: str, region: str, spot: bool = False) -> Any:
    for offer in offers:
        if offer.instance.name == name and offer.region == region and offer.instance.resources.spot == spot:
            return offer
    raise LookupError(f"no offer {name} in {region} (spot={spot}) among {len(offers)}")
