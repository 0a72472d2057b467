"""The SDK decodes the VM types Crusoe sells today (AMD MI300X, GB200 on arm64) from the mock over the wire."""

from __future__ import annotations

from crusoe_sdk import CrusoeClient


def test_mi300x_and_gb200_types_and_capacity(client: CrusoeClient) -> None:
    """`mi300x-192gb-ib.8x` and `gb200-186gb-nvl-ib.4x` (research crusoe.md §3 "VM types"), with the `gpu_type`
    strings gpuhunt maps (`MI300X-192GB`, `GB200-NVL-186GB`: gpuhunt/providers/crusoe.py GPU_TYPE_MAP) and
    `cpu_type` arm64 for Grace hosts (crusoe.md §3)."""
    types = {t.product_name: t for t in client.list_vm_types()}
    mi300x, gb200 = types["mi300x-192gb-ib.8x"], types["gb200-186gb-nvl-ib.4x"]
    assert (mi300x.gpu_type, mi300x.num_gpu) == ("MI300X-192GB", 8)
    assert (gb200.gpu_type, gb200.num_gpu, gb200.cpu_type) == ("GB200-NVL-186GB", 4, "arm64")
    capacity = list(client.list_capacities(types=["gb200-186gb-nvl-ib.4x"]))
    assert [(c.type, c.location) for c in capacity] == [("gb200-186gb-nvl-ib.4x", "us-southcentral1-a")]
