"""The chaos soak: randomized fleet cycles through the real `vm` executable while the mock clouds misbehave.

Each cycle creates a fleet with a random GPU, size, minimum, strategy and provider set, then checks it, asks
for its status, and destroys it now or in a later cycle (so other fleets are around). Some cycles SIGKILL the
create or the destroy at a random moment, some reconcile. After every command the store is audited against the
clouds' inventory (audit.py); any finding fails the soak at once, naming the cycle and the seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vm_core.catalog import default_catalog

from .audit import Findings, audit
from .figures import Figures
from .home import PROVIDERS, Run, VmHome

GPUS = ("H100", "H100", "H100", "L40S", "L40S", "H200", "A100")
STRATEGIES = ("spread", "cheapest", "reserved-first", "packed")
KINDS = ("normal", "kill-create", "kill-destroy", "reconcile")
KIND_WEIGHTS = (5, 2, 1, 2)
# The fault mix: transient errors on 20% of calls, 10% failed operations, 5% dropped responses.
FAULTS = {"error_rate": 0.2, "op_failure_rate": 0.1, "drop_rate": 0.05, "latency_ms": 10}
CREATE_CODES = {0, 6, 7}  # created (maybe degraded); rolled back below the minimum; rollback incomplete
CHECK_CODES = {0, 7}  # status/reconcile/destroy: done; some members could not be checked or destroyed
DESTROY_ATTEMPTS = 10  # re-runs of `vm fleet destroy` under faults before the soak calls it a defect
KEEP_AT_MOST = 2  # fleets left alive across cycles


def sellers(gpu: str, gpu_count: int = 1) -> list[str]:
    """The providers whose shapes in vm's catalog (catalog.toml and each plugin's shapes) include `gpu_count` x
    `gpu` VMs; AssertionError when none does (the soak would ask for what no cloud sells)."""
    catalog = default_catalog()
    sold = [p for p in PROVIDERS if gpu_count in catalog.sizes(p, gpu)]
    assert sold, f"no provider sells {gpu}:{gpu_count} VMs: take it out of the soak's GPUS"
    return sold


@dataclass(frozen=True)
class FleetPlan:
    name: str
    gpu: str
    count: int
    min_count: int
    strategy: str
    providers: tuple[str, ...] | None

    def args(self) -> list[str]:
        args = ["fleet", "create", "--name", self.name, "--gpu", self.gpu, "--count", str(self.count),
                "--min-count", str(self.min_count), "--strategy", self.strategy, "-q", "-o", "json"]
        return args + (["--providers", ",".join(self.providers)] if self.providers else [])


@dataclass
class Soak:
    home: VmHome
    rng: random.Random
    figures: Figures
    seed: int
    users: set[str] = field(default_factory=set)  # the user's own VMs: must survive every fleet destroy
    fleets: list[str] = field(default_factory=list)  # every fleet name used
    kept: list[str] = field(default_factory=list)  # fleets alive across cycles
    cycle: int = 0

    def begin(self) -> None:
        """Start the clouds, create the user's own VM (no faults yet), then turn the faults on."""
        self.home.start()
        user = self.home.ok("create", "--provider", "crusoe", "--gpu", "L40S", "--name", "user-own-vm",
                            "-q", "-o", "json").json()
        self.users = {user["id"]}
        for index, provider in enumerate(PROVIDERS):
            self.home.set_faults(provider, seed=self.seed + index, **FAULTS)

    def run(self, cycles: int) -> None:
        """The first cycles take each kind once (in a seeded order), so even a short run covers them all."""
        first = self.rng.sample(KINDS, len(KINDS))
        for self.cycle in range(cycles):
            while len(self.kept) > KEEP_AT_MOST:
                self.destroy(self.kept.pop(0))
            plan = self.plan()
            kind = first[self.cycle] if self.cycle < len(first) else self.rng.choices(KINDS, KIND_WEIGHTS)[0]
            self.figures.add(f"cycles: {kind}")
            self._kinds()[kind](plan)
            self.figures.add("cycles")

    def count_faults(self) -> None:
        """Add the faults the clouds injected so far to the figures (call once, at the end)."""
        injected = self.home.faults_injected()
        self.figures.add("faults injected", sum(v for k, v in injected.items() if k != "latency"))
        for kind in ("error", "op_failure", "drop"):
            self.figures.add(f"faults injected: {kind}", injected.get(kind, 0))
        self.figures.add("calls delayed", injected.get("latency", 0))

    def finish(self) -> None:
        """Destroy what is left, then check that only the user's VM remains and the store is empty."""
        for name in list(self.kept):
            self.destroy(name)
        self.kept.clear()
        self.home.clear_faults()
        live = self.home.inventory()
        assert {vm["id"] for vm in live} == self.users, f"seed {self.seed}: left behind: {live}"
        left = self.home.store().fleets
        assert left == {}, f"seed {self.seed}: fleets left in the store: {left}"

    # ------------------------------------------------------------------------------------------ cycle kinds
    def _kinds(self) -> dict[str, Callable[[FleetPlan], None]]:
        return {"normal": self._normal, "kill-create": self._kill_create, "kill-destroy": self._kill_destroy,
                "reconcile": self._reconcile}

    def _normal(self, plan: FleetPlan) -> None:
        made = self.create(plan)
        self.status(plan.name)
        self._destroy_or_keep(plan.name, made)

    def _reconcile(self, plan: FleetPlan) -> None:
        made = self.create(plan)
        result = self.vm(CHECK_CODES, "fleet", "reconcile", plan.name, "-q", "-o", "json")
        self.check(settled=[plan.name] if result.code == 0 else [])
        self._destroy_or_keep(plan.name, made)

    def _kill_create(self, plan: FleetPlan) -> None:
        self.fleets.append(plan.name)
        self.home.kill_after(self.rng.uniform(0.05, 2.5), *plan.args())
        self.figures.add("processes killed")
        self.check()
        if self.home.store().fleets.get(plan.name) is None:
            return  # killed before the fleet was recorded: the audit just proved nothing of it exists
        status = self.status(plan.name)
        if status is not None:
            assert status["state"] != "creating", f"{self.where()}: a killed create still shows as creating"
        if self.rng.random() < 0.5:
            result = self.vm(CHECK_CODES, "fleet", "reconcile", plan.name, "-q", "-o", "json")
            self.check(settled=[plan.name] if result.code == 0 else [])
        self.destroy(plan.name)

    def _kill_destroy(self, plan: FleetPlan) -> None:
        if self.create(plan) is None:
            self.destroy(plan.name)  # rolled back: only the record is left to forget
            return
        self.home.kill_after(self.rng.uniform(0.05, 1.0), "fleet", "destroy", plan.name, "-q")
        self.figures.add("processes killed")
        self.check()
        self.destroy(plan.name)

    def _destroy_or_keep(self, name: str, made: Run | None) -> None:
        if made is not None and made.code == 0 and self.rng.random() < 0.4:
            self.kept.append(name)
        else:
            self.destroy(name)

    # ------------------------------------------------------------------------------------------ commands
    def plan(self) -> FleetPlan:
        """A fleet of one-GPU VMs (`--gpu TYPE`); named providers are one or two of those the catalog says sell
        that size, so every create is a request vm can serve (an impossible one is exit 2 before anything)."""
        count = self.rng.randint(1, 8)
        min_count = count if self.rng.random() < 0.5 else self.rng.randint(1, count)
        gpu = self.rng.choice(GPUS)
        providers = None
        if self.rng.random() < 0.3:
            sold = sellers(gpu)
            providers = tuple(sorted(self.rng.sample(sold, self.rng.randint(1, min(2, len(sold))))))
        return FleetPlan(f"c{self.cycle}", gpu, count, min_count, self.rng.choice(STRATEGIES), providers)

    def create(self, plan: FleetPlan) -> Run | None:
        """Create the fleet and audit it; None when the create failed (rolled back)."""
        self.fleets.append(plan.name)
        result = self.vm(CREATE_CODES, *plan.args())
        self.figures.add(f"creates exit {result.code}")
        self.check(settled=[plan.name] if result.code in (0, 6) else [])
        if result.code == 0:
            doc = result.json()
            self._check_report(doc, "create")
            running = sum(1 for m in doc["members"] if m["state"] == "running")
            below = [f"create of {plan.name} kept {running} VMs, below its minimum {plan.min_count}"]
            self.record(Findings(mismatched=below if running < plan.min_count else []))
        return result if result.code == 0 else None

    def status(self, name: str) -> dict[str, Any] | None:
        result = self.vm(CHECK_CODES, "fleet", "status", name, "-q", "-o", "json")
        if result.code != 0:
            return None
        doc = result.json()
        self._check_report(doc, "status")
        return doc

    def destroy(self, name: str) -> None:
        """`vm fleet destroy` until it says the fleet is gone; then nothing of it may exist."""
        for _ in range(DESTROY_ATTEMPTS):
            result = self.vm(CHECK_CODES | {3}, "fleet", "destroy", name, "-q", "-o", "json")
            self.figures.add("destroy runs")
            self.check()
            if result.code == 3:  # an earlier (killed) destroy finished first; the audit saw nothing left
                assert name not in self.home.store().fleets, f"{self.where()}: {result.describe()}"
                return
            if result.code == 0 and result.json()["forgotten"]:
                return
        raise AssertionError(f"{self.where()}: fleet {name} not destroyed after {DESTROY_ATTEMPTS} runs")

    def vm(self, codes: set[int], *args: str) -> Run:
        result = self.home(*args)
        assert result.code in codes and "Traceback" not in result.err, f"{self.where()}: {result.describe()}"
        return result

    # ------------------------------------------------------------------------------------------ checks
    def check(self, settled: list[str] | None = None) -> None:
        findings = audit(self.home.store(), self.home.inventory(), users=self.users, fleets=self.fleets,
                         settled=settled or [])
        self.record(findings)

    def record(self, findings: Findings) -> None:
        for key, value in findings.counts().items():
            self.figures.add(key, value)
        self.figures.add("audits")
        assert not findings, f"{self.where()}:\n{findings}"

    def _check_report(self, doc: dict[str, Any], what: str) -> None:
        """What vm printed agrees with the clouds: every member it calls running exists, and no more than
        requested run."""
        live = {(vm["provider"], vm["id"]) for vm in self.home.inventory()}
        running = [m for m in doc["members"] if m["state"] == "running"]
        findings = Findings(
            lost=[f"{what} of {doc['name']} shows {m['provider']} {m['id']} running; not in the clouds"
                  for m in running if (m["provider"], m["id"]) not in live],
            duplicated=[f"{what} of {doc['name']} shows {len(running)} running of {doc['count']}"]
            if len(running) > doc["count"] else [])
        self.record(findings)

    def where(self) -> str:
        return f"cycle {self.cycle} (seed {self.seed}; replay with VM_RELIABILITY_SEED={self.seed})"
