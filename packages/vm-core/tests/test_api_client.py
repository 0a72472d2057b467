"""vm_core.api.Client in process, against the example third-party provider (a JSON-file cloud: fast, no mock
clouds): reports equal what `vm -o json` prints, problems are returned and errors raised as documented, questions
go to `confirm`, and a fleet is acted on through its own profile unless the caller named one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vm_core import api
from vm_core.cli.main import run
from vm_core.cli.spelling import render
from vm_core.errors import Cancelled, CapacityError, NotFound, UsageError
from vm_core.fleet.steps import Step, StepKind

TOKEN = "tok-3x4mpl3-s3cr3t-9qz7"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VM_HOME", str(tmp_path))
    monkeypatch.setenv("VM_NO_AUTOSTART", "1")
    for name in ("VM_PROFILE", "VM_EXAMPLE_PATH", "VM_EXAMPLE_TOKEN", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    cloud = tmp_path / "example-cloud.json"
    tables = "".join(f'\n[profiles.{p}.example]\npath = "{cloud}"\ntoken = "{TOKEN}"\nseconds = 0.05\ncapacity = 3\n'
                     for p in ("p", "q"))
    config = tmp_path / "config.toml"
    config.write_text('default_profile = "p"\n' + tables)
    config.chmod(0o600)
    return tmp_path


class Said:
    """The progress lines and warnings a client gave."""

    def __init__(self) -> None:
        self.progress: list[str] = []
        self.warnings: list[str] = []

    def client(self, profile: str | None = None) -> api.Client:
        return api.connect(profile, progress=lambda m: self.progress.append(str(m)), warn=self.warnings.append)


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    capsys.readouterr()
    assert run([*args, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _accrual_aside(doc: object) -> object:
    """A document without its accrued cost, which grows between two reads (the running rate stays)."""
    assert isinstance(doc, dict) and doc["accrued_usd"] >= 0
    return {k: v for k, v in doc.items() if k != "accrued_usd"}


def test_a_vm_from_create_to_destroy_reports_what_the_cli_prints(home: Path, capsys) -> None:
    said = Said()
    client = said.client()
    created = client.create(api.CreateRequest(provider="example", gpu="H100", name="box"))
    assert created.exit is api.ExitKind.OK and created.problem is None
    vm = created.instances[0]
    assert created.to_json() == vm.to_json() and vm.name == "box"  # one VM asked for: one object
    assert any("box: running" in line for line in said.progress)
    got = client.get(api.GetRequest(vm.id, "example")).to_json()
    assert _accrual_aside(got) == _accrual_aside(cli_json(capsys, "get", vm.id, "-p", "example"))
    assert client.list().to_json() == cli_json(capsys, "list")
    stopped = client.stop(api.ActionRequest("example", (vm.id,)))
    assert stopped.ok and stopped.to_json()["state"] == "stopped"
    gone = client.destroy(api.ActionRequest("example", (vm.id,)))
    assert gone.to_json() == {"provider": "example", "id": vm.id, "name": "box", "state": "terminated", "note": None}
    assert client.list(api.ListRequest(name="box")).instances == []


def test_some_vms_failing_is_a_problem_of_the_report(home: Path) -> None:
    report = Said().client().create(api.CreateRequest(provider="example", gpu="H100", count=4, name="many"))
    assert report.exit is api.ExitKind.PARTIAL and len(report.instances) == 3  # capacity 3: those are left running
    assert report.problem is not None and report.problem.error.message == "1 of 4 VMs failed"
    assert [type(e) for _, e in report.problem.failures] == [CapacityError]
    hint = render(report.problem.error.hint)
    assert "left running" in hint and all(i.id in hint for i in report.instances)


def test_what_does_nothing_raises(home: Path) -> None:
    client = Said().client()
    with pytest.raises(NotFound):
        client.get(api.GetRequest("ex-00000000", "example"))
    with pytest.raises(UsageError, match="count"):
        client.create(api.CreateRequest(provider="example", gpu="H100", count=0))
    with pytest.raises(NotFound):
        client.fleet_status(api.FleetNameRequest("nosuch"))
    with pytest.raises(UsageError, match="cannot be combined"):
        client.fleet_plan(api.FleetCreateRequest(gpu="H100", count=2, placement="cluster", strategy="spread"))


def test_a_refused_question_destroys_nothing(home: Path) -> None:
    client = Said().client()
    vm = client.create(api.CreateRequest(provider="example", gpu="H100", name="keep")).instances[0]
    asked: list[api.Confirmation] = []

    def refuse(question: api.Confirmation) -> None:
        asked.append(question)
        raise question.refusal()

    with pytest.raises(Cancelled, match="nothing was destroyed"):
        client.destroy(api.ActionRequest("example", (vm.id,)), confirm=refuse)
    assert asked[0].question == "Destroy 1 VM (running now: $1.25/h)?"
    assert any(vm.id in line and "$1.25/h" in line for line in asked[0].lines)
    assert render(asked[0].again) == f"vm destroy {vm.id} --provider example --yes"
    assert [i.id for i in client.list().instances] == [vm.id]
    assert client.destroy(api.ActionRequest("example", (vm.id,)), confirm=lambda _: None).ok


def test_a_fleet_from_plan_to_destroy(home: Path, capsys) -> None:
    client = Said().client()
    request = api.FleetCreateRequest(gpu="H100", count=2, name="pair")
    plan = client.fleet_plan(request)
    assert isinstance(plan, api.FleetPlanReport) and plan.ok and len(plan.placements) == 2
    too_many = client.fleet_plan(api.FleetCreateRequest(gpu="H100", count=5, name="five"))
    assert too_many.exit is api.ExitKind.CAPACITY and len(too_many.placements) == 3
    steps: list[str] = []
    created = client.fleet_create(request, progress=steps.append)
    assert created.ok and created.to_json()["state"] == "active"
    running = [s for s in steps if isinstance(s, Step) and s.kind is StepKind.RUNNING]
    assert sorted(s.slot for s in running) == [0, 1]
    status = client.fleet_status(api.FleetNameRequest("pair")).to_json()
    assert _accrual_aside(status) == _accrual_aside(cli_json(capsys, "fleet", "status", "pair"))
    below = client.fleet_scale(api.FleetScaleRequest("pair", count=3, dry_run=True))
    assert below.ok and below.to_json()["dry_run"] is True and below.to_json()["slots"] == [2]
    asked: list[api.Confirmation] = []
    destroyed = client.fleet_destroy(api.FleetDestroyRequest("pair"), confirm=asked.append)
    assert destroyed.ok and destroyed.to_json()["destroyed"] == 2 and destroyed.to_json()["forgotten"]
    assert asked[0].question.startswith("Destroy fleet pair (running now: $2.50/h)")
    again = client.fleet_destroy(api.FleetDestroyRequest("pair"))
    assert again.ok and not again.found  # safe to re-run
    assert client.fleet_list().to_json() == []


def test_a_fleet_is_acted_on_through_its_own_profile_unless_one_is_named(home: Path) -> None:
    made = Said().client("q").fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="inq"))
    assert made.ok and made.to_json()["profile"] == "q"
    default = Said().client()
    assert default.session.profile.name == "p"
    assert default.fleet_status(api.FleetNameRequest("inq")).ok
    assert default.session.profile.name == "q"  # the fleet's own
    named = Said().client("p")
    assert named.fleet_status(api.FleetNameRequest("inq")).ok
    assert named.session.profile.name == "p"  # named by the caller: kept
    assert named.fleet_destroy(api.FleetDestroyRequest("inq")).ok


def test_the_catalog_verbs(home: Path, capsys) -> None:
    client = Said().client()
    offers = client.offers(api.OffersRequest(gpu="H100"))
    assert offers.ok and offers.offers and offers.to_json() == cli_json(capsys, "offers", "--gpu", "H100")
    providers = client.providers(api.ProvidersRequest(timeout=30))
    assert providers.ok and providers.profile == "p" and providers.mock_clouds == ""
    assert [r["name"] for r in providers.to_json() if r["configured"]] == ["example"]
    config = client.config().to_json()
    assert config["profile"] == "p" and {"p", "q"} <= set(config["profiles"])
    assert TOKEN not in json.dumps(config)  # secrets only as <set>


def test_reconcile_repair_forget_and_reap(home: Path) -> None:
    client = Said().client()
    assert client.fleet_create(api.FleetCreateRequest(gpu="H100", count=2, name="kept")).ok
    reconciled = client.fleet_reconcile(api.FleetReconcileRequest("kept", dry_run=True))
    assert reconciled.ok and reconciled.to_json()["dry_run"] is True and "actions" in reconciled.to_json()
    repaired = client.fleet_repair(api.FleetRepairRequest("kept"))
    assert repaired.ok and repaired.to_json()["state"] == "active"
    forgotten = client.fleet_forget(api.FleetNameRequest("kept"))
    assert forgotten.to_json()["forgotten"] is True and len(forgotten.members) == 2
    assert len(client.list(api.ListRequest(state="running")).instances) == 2  # forget touches no VM
    client.destroy(api.ActionRequest("example", tuple(m["id"] for m in forgotten.members)))

    assert client.fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="brief", ttl=0.001)).ok
    preview = client.fleet_reap(api.FleetReapRequest(dry_run=True))
    assert preview.ok and [(f["name"], f["result"]) for f in preview.to_json()["fleets"]] == [
        ("brief", "would-destroy")]
    asked: list[api.Confirmation] = []
    reaped = client.fleet_reap(confirm=asked.append)
    assert reaped.ok and [(f["name"], f["result"]) for f in reaped.to_json()["fleets"]] == [("brief", "destroyed")]
    assert asked[0].question == "Destroy 1 expired fleet(s)?" and "brief" in asked[0].lines[1]
    assert client.fleet_reap().to_json() == {"dry_run": False, "fleets": []}


def test_a_fleet_is_created_from_another_thread_too(home: Path) -> None:
    """Signals reach only the main thread: from another one the create runs without installing handlers."""
    import threading

    results: list[api.FleetCreated] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(Said().client().fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="side")))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=120)
    assert errors == [] and results[0].ok
    assert Said().client().fleet_destroy(api.FleetDestroyRequest("side")).ok


def test_requests_wait_1800_seconds_by_default() -> None:
    assert api.CreateRequest(provider="p", gpu="H100").timeout == 1800
    assert api.FleetCreateRequest(gpu="H100", count=1).timeout == 1800
    assert api.ActionRequest("p", ("i",)).timeout == 1800
