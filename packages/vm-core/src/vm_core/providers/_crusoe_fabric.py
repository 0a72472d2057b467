"""IB partitions for `--placement cluster` fleets: the Crusoe placement group (`SupportsPlacementGroups`).

An 8-GPU InfiniBand type (`<family>-ib.8x`, e.g. `h100-80gb-sxm-ib.8x`) joins a fabric through the create's
`host_channel_adapters: [{ib_partition_id}]`; a partition lives on the IB network of one location whose
`capacities[].slice_type` names the type, as dstack's cluster placement picks it (backends/crusoe/compute.py
create_placement_group; research real-clouds.md D8). Crusoe partitions have no labels, so the fleet's one
partition per location is named `<fleet>--<fleet id>-ib-<location>` (the fleet identity's `--<id>` that no plain
name can hold) and only a name of that form is the fleet's: the fleet's destroy deletes those and leaves any
other partition, saying so when its name looks like the fleet's.

Every call blocks (the partition calls are synchronous); errors are vm_core errors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from ..errors import Transient
from ..fleet.naming import ID_LABEL, NAME_LABEL
from ._crusoe_map import translated

log = logging.getLogger(__name__)

CLUSTER_GPUS = 8


def joins_fabric(vm_type: str, gpu_count: int) -> bool:
    """Whether VMs of `vm_type` join an IB partition in a cluster fleet: 8-GPU `-ib` types."""
    return vm_type.partition(".")[0].endswith("-ib") and gpu_count == CLUSTER_GPUS


def partition_name(labels: Mapping[str, str], location: str) -> str | None:
    """The name of the fleet's partition in `location`; None for a fleet without an id (its name proves
    nothing)."""
    fleet, fleet_id = labels.get(NAME_LABEL), labels.get(ID_LABEL)
    return f"{fleet}--{fleet_id}-ib-{location}" if fleet and fleet_id else None


def ensure(client: Any, labels: Mapping[str, str], location: str, vm_type: str) -> str | None:
    """The id of the fleet's partition in `location` for `vm_type`: the one of its name, else a new one on the
    location's IB network that hosts the type; None when no such network exists (or the fleet has no id)."""
    name = partition_name(labels, location)
    if name is None:
        return None
    with translated():
        found = _named(client, name)
        if found is not None:
            return found
        network = next((n for n in client.list_ib_networks() if n.location == location and n.hosts(vm_type)), None)
        if network is None:
            return None
    try:
        with translated():
            return str(client.create_ib_partition(name=name, ib_network_id=network.id).id)
    except Transient:  # no answer or a retried fault: the create may have been handled, and the name says
        with translated():
            made = _named(client, name)
        if made is None:
            raise
        return made


def delete_all(client: Any, labels: Mapping[str, str]) -> list[str]:
    """Delete the partitions named as the fleet's (a missing one counts as deleted); the ids deleted. A
    partition whose name starts like the fleet's without its id is left, with a warning."""
    fleet, fleet_id = labels.get(NAME_LABEL), labels.get(ID_LABEL)
    if not fleet or not fleet_id:
        return []
    ours = re.compile(rf"^{re.escape(fleet)}--{re.escape(fleet_id)}-ib-[a-z0-9-]+$")
    deleted = []
    with translated():
        for partition in list(client.list_ib_partitions()):
            if ours.match(partition.name):
                client.delete_ib_partition(partition.id)
                deleted.append(str(partition.id))
            elif partition.name.startswith(f"{fleet}-"):
                log.warning("vm: warning: crusoe: IB partition %s (%s) was left alone: its name does not carry the "
                            "id of fleet %s", partition.name, partition.id, fleet)
    return deleted


def _named(client: Any, name: str) -> str | None:
    return next((str(p.id) for p in client.list_ib_partitions() if p.name == name), None)
