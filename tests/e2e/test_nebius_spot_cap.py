"""`vm create --spot --max-price` on Nebius caps the VM's price with a pricing policy, as dstack caps spot prices
(`billing.v1.PricingPolicyService.Create`, `backends/nebius/resources.py:317`, the policy's id in
`spot_pricing_policy`, `resources.py:390-391`); real-clouds.md Part 2, section 4 ("spot pricing opt-in and price
caps"). The mock's spot price of one H100 is $1.25/h and its list price $2.95/h."""

from __future__ import annotations

from nebius_sdk import NebiusClient

from .conftest import VmHome


def _policies(vm: VmHome) -> list[tuple[str, str, str]]:
    endpoint = vm.endpoints()["nebius"]
    with NebiusClient(endpoint["token"], target=endpoint["target"], parent_id=endpoint["project_id"]) as client:
        found = []
        for p in client.list_pricing_policies():
            assert p.metadata is not None and p.spec is not None and p.spec.pricing is not None
            assert p.spec.pricing.max_price_v1 is not None
            found.append((p.metadata.id, p.metadata.name, p.spec.pricing.max_price_v1.max_price))
        return found


def test_a_capped_spot_vm_names_its_pricing_policy_which_later_creates_reuse(fresh_home: VmHome) -> None:
    vm = fresh_home
    first = vm.ok("create", "-p", "nebius", "--gpu", "H100", "--spot", "--max-price", "2", "--name", "capped-1",
                  "--region", "eu-north1", "-o", "json").json()
    assert first["spot"] is True and first["state"] == "running"
    [(policy_id, name, max_price)] = _policies(vm)
    assert (name, max_price) == ("vm-spot-gpu-h100-sxm-2.0000", "2.0000")
    raw = vm.ok("get", first["id"], "-p", "nebius", "--raw", "-o", "json").json()["native"]
    assert raw["spec"]["spotPricingPolicy"]["id"] == policy_id
    vm.ok("create", "-p", "nebius", "--gpu", "H100", "--spot", "--max-price", "2", "--name", "capped-2",
          "--region", "eu-north1")
    assert [p[0] for p in _policies(vm)] == [policy_id]  # one policy backs both


def test_caps_the_cloud_cannot_honour_are_refused_before_any_vm(fresh_home: VmHome) -> None:
    vm = fresh_home
    below = vm("create", "-p", "nebius", "--gpu", "H100", "--spot", "--max-price", "0.5", "--name", "low",
               "--region", "eu-north1", "-o", "json")
    assert below.code == 6 and "above the cap" in below.error()["message"], below.err
    above = vm("create", "-p", "nebius", "--gpu", "H100", "--spot", "--max-price", "100", "--name", "high",
               "--region", "eu-north1", "-o", "json")
    assert above.code == 2 and "max_price" in above.error()["message"], above.err
    no_spot = vm("create", "-p", "nebius", "--gpu", "H100", "--max-price", "2", "--name", "plain", "-o", "json")
    assert no_spot.code == 2 and "add --spot" in no_spot.error()["message"]
    elsewhere = vm("create", "-p", "crusoe", "--gpu", "H100:8", "--spot", "--max-price", "20", "--name", "c",
                   "-o", "json")
    assert elsewhere.code == 5
    assert vm.live("low") == [] and vm.live("high") == [] and vm.live("plain") == []
    assert _policies(vm) == []  # the blocked policy made for the low cap was deleted again
