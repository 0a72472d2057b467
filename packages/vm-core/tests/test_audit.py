"""`vm audit`'s classes: a recorded member, a VM the ledger says vm created, a VM carrying a recorded fleet's id
without a member record, and the rest; with the running rate of each class."""

from __future__ import annotations

from vm_core.fleet.naming import FleetIdentity
from vm_core.model import Instance, InstanceState
from vm_core.spend.audit import Owner, StoreFacts, audit, totals
from vm_core.spend.ledger import LedgerVm, Pricing

TRAIN = FleetIdentity("train", "abcdefgh")


def _vm(instance_id: str, name: str, state: InstanceState = InstanceState.RUNNING, price: float | None = 2.0,
        labels: dict[str, str] | None = None) -> Instance:
    return Instance("nebius", instance_id, name, state, "H100", 1, "eu-north1", "gpu-h100-sxm/1gpu-16vcpu-200gb",
                    price_per_hour=price, labels=labels or {})


def _ledger(instance_id: str, fleet: str = "") -> LedgerVm:
    return LedgerVm("nebius", "projects p", instance_id, instance_id, "", "", "H100", 1, Pricing.ON_DEMAND, "",
                    fleet, "", "local", "ana@box", 1000.0)


FACTS = StoreFacts(members={("nebius", "m-0"): "train"}, fleets=[TRAIN],
                   ledger={("nebius", "m-0"): _ledger("m-0", "train"), ("nebius", "single"): _ledger("single")})


def test_each_vm_is_classified_by_what_proves_whose_it_is() -> None:
    vms = [_vm("m-0", "train--abcdefgh-0"), _vm("single", "solo"), _vm("stray", "train--abcdefgh-1"),
           _vm("labelled", "renamed", labels={"vm-fleet-id": "abcdefgh"}), _vm("alike", "train-1"),
           _vm("other-id", "train--zzzzzzzz-0"), _vm("gone", "x", InstanceState.TERMINATING)]
    found = {v.instance.id: (v.owner, v.fleet, v.created_by) for v in audit(vms, FACTS)}
    assert found == {
        "m-0": (Owner.FLEET, "train", "ana@box"), "single": (Owner.CREATED, "", "ana@box"),
        "stray": (Owner.ADOPTABLE, "train", ""), "labelled": (Owner.ADOPTABLE, "train", ""),
        "alike": (Owner.OTHER, "", ""), "other-id": (Owner.OTHER, "", ""),
    }


def test_a_label_naming_another_id_overrides_a_matching_name() -> None:
    [vm] = audit([_vm("x", "train--abcdefgh-3", labels={"vm-fleet-id": "zzzzzzzz"})], FACTS)
    assert vm.owner is Owner.OTHER


def test_totals_count_every_class_and_only_what_bills_now() -> None:
    vms = audit([_vm("m-0", "train--abcdefgh-0", price=3.0), _vm("single", "solo", InstanceState.STOPPED),
                 _vm("a", "a", price=None), _vm("b", "b", price=1.5)], FACTS)
    assert [(t.owner, t.vms, t.running, t.rate_per_hour, t.unpriced) for t in totals(vms)] == [
        (Owner.FLEET, 1, 1, 3.0, 0), (Owner.CREATED, 1, 0, 0.0, 0), (Owner.ADOPTABLE, 0, 0, 0.0, 0),
        (Owner.OTHER, 2, 2, 1.5, 1)]
