"""Security: credentials never leak (output, --debug logs, exception texts, recorded traffic, state files), private
files are private, unsafe configs are refused, and the mock clouds enforce their clouds' authentication and
scoping: wrong keys, tampered or replayed Crusoe signatures, another organisation's project, another tenant's
or account's instances."""

from __future__ import annotations

import os
import stat
import subprocess
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import vcr
from crusoe_sdk import AuthError as CrusoeAuthError
from crusoe_sdk import CrusoeClient
from crusoe_sdk import PermissionDenied as CrusoePermissionDenied
from lambda_sdk import AuthError as LambdaAuthError
from lambda_sdk import LambdaClient
from lambda_sdk import NotFound as LambdaNotFound
from mock_clouds.core.models import Faults, Provider
from mock_clouds.crusoe.testing import CrusoeClient as SigningClient
from mock_clouds.crusoe.testing import now_rfc3339
from mock_clouds.runner import MockClouds
from nebius_sdk import AuthError as NebiusAuthError
from nebius_sdk import NebiusClient
from nebius_sdk import PermissionDenied as NebiusPermissionDenied
from reliability_kit.home import VM, VmHome
from reliability_kit.secrets import leaks
from vm_core.embedded import settings_from_endpoints
from vm_core.errors import VmError
from vm_core.model import CreateSpec, ReservationMode, ReservationRequest
from vm_core.plugins import provider_plugins

REPO = Path(__file__).resolve().parents[2]
WRONG = {"crusoe": "d3JvbmctY3J1c29lLXNlY3JldC1rZXktMDAwMDAw", "lambda": "secret_mock_wrongwrongwrongwrong.0000",
         "nebius": "ne1wrongwrongwrongwrongwrongwrongwrongwrong0000"}
OTHER_NEBIUS_TENANT = "tenant-e00zz9yy8xx7ww6vv5"
OTHER_LAMBDA_ACCOUNT = "acct-0a1b2c3d"


@pytest.fixture(scope="module")
def clouds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockClouds]:
    with MockClouds(tmp_path_factory.mktemp("security"), time_scale=0.002) as running:
        yield running


def every_secret(clouds: MockClouds) -> list[str]:
    """Every credential of every owner in the mock clouds, the admin token, and the wrong ones tests use."""
    found = [c.secret for creds in clouds.world.state.credentials.values() for c in creds]
    return [*found, str(clouds.world.state.extra_state["admin_token"]), *WRONG.values()]


# ---------------------------------------------------------------------------------------------- vm's output
def bad_profile(endpoints: dict[str, Any]) -> str:
    """A profile pointing at the running mocks with a wrong credential for each cloud."""
    crusoe, lam, neb = endpoints["crusoe"], endpoints["lambda"], endpoints["nebius"]
    return f"""
[profiles.bad.crusoe]
access_key_id = "{crusoe['access_key_id']}"
secret_key = "{WRONG['crusoe']}"
project_id = "{crusoe['project_id']}"
api_endpoint = "{crusoe['url']}"
time_scale = 0.002
[profiles.bad.lambda]
api_key = "{WRONG['lambda']}"
api_endpoint = "{lam['url']}"
request_interval = 0.002
launch_interval = 0.024
time_scale = 0.002
[profiles.bad.nebius]
token = "{WRONG['nebius']}"
endpoint = "{neb['target']}"
project_id = "{neb['project_id']}"
time_scale = 0.002
[profiles.local]
embedded = true
"""


def commands(ids: dict[str, str]) -> list[list[str]]:
    return [
        ["providers"], ["config", "show"], ["config", "show", "-o", "json"], ["offers", "--gpu", "H100"],
        ["list", "-o", "json"], ["get", ids["crusoe"], "-p", "crusoe", "--raw", "-o", "json"],
        ["get", ids["lambda"], "-p", "lambda", "--raw", "-o", "json"],
        ["get", ids["nebius"], "-p", "nebius", "--raw", "-o", "json"],
        ["stop", ids["nebius"], "-p", "nebius"], ["start", ids["nebius"], "-p", "nebius"],
        ["reboot", ids["crusoe"], "-p", "crusoe"], ["stop", ids["lambda"], "-p", "lambda"],
        ["get", "00000000-0000-4000-8000-000000000000", "-p", "crusoe"],
        ["fleet", "create", "--gpu", "H100", "--count", "3", "--name", "sec"], ["fleet", "status", "sec"],
        ["fleet", "reconcile", "sec", "-o", "json"], ["fleet", "list"], ["fleet", "destroy", "sec"],
        ["fleet", "create", "--gpu", "H100", "--count", "40", "--name", "toolarge"],
        ["destroy", ids["crusoe"], "-p", "crusoe"], ["destroy", ids["lambda"], "-p", "lambda"],
        ["destroy", ids["nebius"], "-p", "nebius"],
    ]


def test_no_credential_in_any_output_or_debug_log(home: VmHome, figures) -> None:
    secrets = home.secrets() + list(WRONG.values())
    home.config(bad_profile(home.endpoints()))
    outputs: list[str] = []

    def vm(*args: str) -> Any:
        result = home(*args, "--debug")
        outputs.extend([result.out, result.err])
        return result

    ids = {p: vm("create", "-p", p, "--gpu", "L40S" if p != "lambda" else "A100", "--name", f"sec-{p}", "-o",
                 "json").json()["id"] for p in ("crusoe", "lambda", "nebius")}
    for command in commands(ids):
        vm(*command)
    for provider in ("crusoe", "lambda", "nebius"):  # error paths: injected faults, then wrong credentials
        home.set_faults(provider, error_rate=0.5, drop_rate=0.1, seed=3)
    for command in (["offers", "--gpu", "H100"], ["fleet", "create", "--gpu", "L40S", "--count", "2", "--name",
                                                    "faulty"], ["fleet", "destroy", "faulty"], ["list"]):
        vm(*command)
    home.clear_faults()
    home("fleet", "destroy", "faulty")
    for command in (["providers"], ["config", "show"], ["list"], ["offers", "--gpu", "H100"],
                    ["create", "-p", "crusoe", "--gpu", "L40S"], ["create", "-p", "nebius", "--gpu", "L40S"],
                    ["create", "-p", "lambda", "--gpu", "A100"], ["fleet", "create", "--gpu", "H100", "--count",
                                                                  "1", "--name", "badcreds"]):
        assert vm("--profile", "bad", *command).code in (0, 4, 6), outputs[-1]
    figures.add("outputs scanned for secrets", len(outputs) // 2)
    assert leaks("\n".join(outputs), secrets) == []
    assert "<redacted>" not in "\n".join(outputs)  # vm redacts what it prints; here nothing even tried
    stored = b"".join(p.read_bytes() for p in home.path.glob("vm.db*"))
    assert leaks(stored.decode("utf-8", "replace"), secrets) == []


def test_auth_errors_name_the_problem_not_the_key(home: VmHome) -> None:
    home.config(bad_profile(home.endpoints()))
    for provider, gpu in (("crusoe", "L40S"), ("lambda", "A100"), ("nebius", "L40S")):
        result = home("--profile", "bad", "create", "-p", provider, "--gpu", gpu, "-o", "json")
        assert result.code == 4 and result.error()["code"] == "auth", result.describe()
        assert leaks(result.out + result.err, WRONG.values()) == []


# ---------------------------------------------------------------------------------------------- exception texts
def exception_texts(exc: BaseException) -> str:
    """Everything an exception could show: message, repr, args, attributes and the whole formatted chain."""
    parts = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [str(current), repr(current), repr(current.args), repr(vars(current))]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def provoke(provider: Any) -> list[BaseException]:
    """Failures of one provider: whatever each call raises."""
    calls: list[Callable[[], object]] = [
        lambda: list(provider.list_instances()), lambda: provider.offers("H100", None),
        lambda: provider.get_instance("computeinstance-e00doesnotexist0" if provider.name == "nebius" else
                                      "00000000000000000000000000000000" if provider.name == "lambda" else
                                      "00000000-0000-4000-8000-000000000000"),
        lambda: provider.begin_create(CreateSpec(name="sec-err", gpu="H100", reservation=ReservationRequest(
            ReservationMode.NONE))).wait(30),
        lambda: provider.find_instance("sec-err"),
    ]
    raised = []
    for call in calls:
        try:
            call()
        except VmError as exc:
            raised.append(exc)
    return raised


# new VMs need a public key; nobody holds the private half of this one
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGgLAWC6bF3K8NqzCcSE0G4cqyBqV3zZkh9q6rUa0fB1 tests@vm-core"


def connect(clouds: MockClouds, name: str, **overrides: Any) -> Any:
    plugin = provider_plugins().get(name)
    return plugin.connect({**settings_from_endpoints(clouds.endpoints, name), "ssh_public_key": KEY, **overrides})


def test_no_credential_in_exception_texts(clouds: MockClouds, figures) -> None:
    wrong = {"crusoe": {"secret_key": WRONG["crusoe"]}, "lambda": {"api_key": WRONG["lambda"]},
             "nebius": {"token": WRONG["nebius"]}}
    raised = []
    for name, overrides in wrong.items():
        raised += provoke(connect(clouds, name, **overrides))
    for provider in Provider:
        clouds.world.configure_faults(provider, Faults(error_rate=0.6, op_failure_rate=0.5, drop_rate=0.2, seed=5))
    try:
        for name in wrong:
            raised += provoke(connect(clouds, name))
    finally:
        for provider in Provider:
            clouds.world.configure_faults(provider, Faults())
    assert len(raised) >= 10
    figures.add("exceptions scanned for secrets", len(raised))
    assert leaks("\n".join(exception_texts(exc) for exc in raised), every_secret(clouds)) == []
    for name in wrong:  # nor in a client's repr
        assert leaks(repr(connect(clouds, name)) + repr(vars(connect(clouds, name))), every_secret(clouds)) == []


# ---------------------------------------------------------------------------------------------- recorded traffic
def test_credentials_travel_only_in_auth_headers(clouds: MockClouds, tmp_path: Path) -> None:
    """Everything but the Authorization (and Crusoe timestamp) headers of a VM's life on the REST clouds, recorded
    like the SDKs' cassettes are: no credential in any URL, body or other header."""
    recorder = vcr.VCR(cassette_library_dir=str(tmp_path), record_mode="all",
                       filter_headers=["authorization", "x-crusoe-timestamp"], decode_compressed_response=True)
    with recorder.use_cassette("traffic.yaml"):
        for name, gpu in (("crusoe", "L40S"), ("lambda", "A100")):
            provider = connect(clouds, name)
            provider.offers(gpu, None)
            made = provider.begin_create(CreateSpec(name=f"tape-{name}", gpu=gpu)).wait(60)
            provider.get_instance(made.id)
            list(provider.list_instances())
            provider.begin_destroy(made.id).wait(60)
    text = (tmp_path / "traffic.yaml").read_text()
    assert "tape-crusoe" in text and "tape-lambda" in text
    assert leaks(text, every_secret(clouds)) == []


def test_committed_cassettes_hold_no_credentials() -> None:
    cassettes = sorted(REPO.glob("packages/*/tests/cassettes/*.yaml"))
    assert cassettes
    markers = ("authorization", "bearer ", "x-crusoe-timestamp", "secret_mock_", "x-api-key")
    for path in cassettes:
        text = path.read_text().lower()
        assert [m for m in markers if m in text] == [], path


# ---------------------------------------------------------------------------------------------- files
def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_state_files_are_private_even_with_a_permissive_umask(tmp_path: Path) -> None:
    home = VmHome(tmp_path / "fresh" / "vm-home")  # no directory exists yet: vm creates them all
    try:
        done = subprocess.run([VM, "fleet", "create", "--gpu", "H100", "--count", "1", "--name", "modes", "-q"],
                              env=home.env, capture_output=True, text=True, timeout=300, check=False,
                              preexec_fn=lambda: os.umask(0))  # noqa: PLW1509 - the point of the test
        assert done.returncode == 0, done.stderr
        files = [p for p in home.path.rglob("*")]
        assert {p.name for p in files} >= {"vm.db", "mock-clouds", "endpoints.json", "state.json"}
        exposed = [f"{p} {stat.S_IMODE(p.stat().st_mode):04o}" for p in [home.path, *files] if not private(p)]
        assert exposed == []
    finally:
        home.stop()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o666, 0o777])
def test_config_that_others_may_read_is_refused(tmp_path: Path, mode: int) -> None:
    home = VmHome(tmp_path / "vm-home")
    home.path.mkdir(mode=0o700)
    home.config(bad_profile({"crusoe": {"access_key_id": "K", "project_id": "p", "url": "http://127.0.0.1:9"},
                             "lambda": {"url": "http://127.0.0.1:9"},
                             "nebius": {"target": "127.0.0.1:9", "project_id": "p"}}), mode=mode)
    for args in (["config", "show"], ["--profile", "bad", "list"], ["fleet", "list"]):
        result = home(*args)
        assert result.code == 4 and "chmod 600" in result.err, result.describe()
        assert leaks(result.out + result.err, WRONG.values()) == []
    assert stat.S_IMODE((home.path / "config.toml").stat().st_mode) == mode  # vm never "fixes" it silently
    assert not (home.path / "mock-clouds").exists() and not (home.path / "vm.db").exists()


# ---------------------------------------------------------------------------------------------- the mocks' auth
def test_wrong_keys_are_rejected_by_every_cloud(clouds: MockClouds) -> None:
    ep = clouds.endpoints
    with pytest.raises(CrusoeAuthError) as crusoe:
        CrusoeClient(ep["crusoe"]["access_key_id"], WRONG["crusoe"], base_url=ep["crusoe"]["url"],
                     project_id=ep["crusoe"]["project_id"]).get_project()
    assert crusoe.value.status == 401
    with pytest.raises(LambdaAuthError), LambdaClient(WRONG["lambda"], base_url=ep["lambda"]["url"]) as client:
        list(client.list_instances())
    with pytest.raises(NebiusAuthError), NebiusClient(WRONG["nebius"], target=ep["nebius"]["target"],
                                                      parent_id=ep["nebius"]["project_id"]) as client:
        list(client.list_instances())


def signing_client(clouds: MockClouds) -> SigningClient:
    ep = clouds.endpoints["crusoe"]
    return SigningClient(ep["url"].removesuffix("/v1alpha5"), ep["access_key_id"], ep["secret_key"])


def test_tampered_crusoe_signatures_are_rejected(clouds: MockClouds) -> None:
    client = signing_client(clouds)
    project = clouds.endpoints["crusoe"]["project_id"]
    path = f"/projects/{project}/compute/vms/instances"
    assert client.get(path).status_code == 200
    good = client.get(path).request.headers["Authorization"]
    flipped = good[:-1] + ("A" if good[-1] != "A" else "B")
    for response in (
        client.get(path, authorization=flipped),  # one character of the signature changed
        client.get(path, signed_path="/v1alpha5/locations"),  # signed for another path
        client.get(path, params={"names": "x"}, signed_query=""),  # query added after signing
        client.request("DELETE", f"{path}/00000000-0000-4000-8000-000000000000", signed_method="GET"),
    ):
        assert response.status_code == 401, response.text
        assert response.json()["code"] == "bad_credential"


def test_replayed_crusoe_request_is_rejected_once_stale(clouds: MockClouds) -> None:
    """The exact bytes of a signed request, sent again: accepted within Crusoe's ±5 minute window (the real API
    has no nonce either), refused once the timestamp is stale."""
    client = signing_client(clouds)
    stamp = now_rfc3339()
    first = client.get("/locations", stamp=stamp)
    assert first.status_code == 200
    headers = dict(first.request.headers)

    def replay() -> requests.Response:
        return requests.get(first.request.url, headers=headers, timeout=30)

    assert replay().status_code == 200
    world = clouds.world
    real_now = world.now
    world.now = lambda: real_now() + 6 * 60  # type: ignore[method-assign]
    try:
        stale = replay()
    finally:
        world.now = real_now  # type: ignore[method-assign]
    assert stale.status_code == 401
    assert stale.json() == {"code": "bad_credential",
                            "message": "bad credential: X-Crusoe-Timestamp is too far from the current time"}
    assert client.get("/locations", stamp=now_rfc3339(-301)).status_code == 401


def test_crusoe_key_cannot_touch_another_organisations_project(clouds: MockClouds) -> None:
    ep = clouds.endpoints["crusoe"]
    projects = clouds.world.state.providers[Provider.CRUSOE].projects
    foreign = next(p.id for p in projects if p.owner != ep["organization_id"])
    client = CrusoeClient(ep["access_key_id"], ep["secret_key"], base_url=ep["url"], project_id=foreign)
    before = len(clouds.world.vms(Provider.CRUSOE))
    for call in (client.get_project, lambda: list(client.list_instances()), lambda: list(client.list_vm_types()),
                 lambda: client.begin_create_instance(name="intruder", type="l40s-48gb.1x",
                                                      location="eu-iceland1-a", ssh_public_key="ssh-ed25519 AAAA x")):
        with pytest.raises(CrusoePermissionDenied) as denied:
            call()
        assert denied.value.status == 403
    assert len(clouds.world.vms(Provider.CRUSOE)) == before


def test_nebius_token_cannot_see_another_tenants_project(clouds: MockClouds) -> None:
    ep = clouds.endpoints["nebius"]
    projects = clouds.world.state.providers[Provider.NEBIUS].projects
    theirs = next(p.id for p in projects if p.owner == OTHER_NEBIUS_TENANT)
    other_token = next(c.secret for c in clouds.world.state.credentials[Provider.NEBIUS]
                       if c.owner == OTHER_NEBIUS_TENANT)
    with NebiusClient(other_token, target=ep["target"], parent_id=theirs) as them:
        made = them.begin_create_instance("theirs", "gpu-l40s-a", "1gpu-8vcpu-32gb",
                                          subnet_id="vpcsubnet-e00defaultsubnet01").result(30)
    with NebiusClient(ep["token"], target=ep["target"], parent_id=ep["project_id"]) as me:
        for call in (lambda: list(me.list_instances(parent_id=theirs)), lambda: me.get_instance(made.metadata.id),
                     lambda: me.find_instance("theirs", parent_id=theirs),
                     lambda: me.begin_create_instance("intruder", "gpu-l40s-a", "1gpu-8vcpu-32gb",
                                                      parent_id=theirs)):
            with pytest.raises(NebiusPermissionDenied):
                call()
        assert "theirs" not in {i.metadata.name for i in me.list_instances()}


def test_lambda_key_sees_only_its_own_account(clouds: MockClouds) -> None:
    ep = clouds.endpoints["lambda"]
    other_key = next(c.secret for c in clouds.world.state.credentials[Provider.LAMBDA]
                     if c.owner == OTHER_LAMBDA_ACCOUNT)
    with LambdaClient(other_key, base_url=ep["url"], rate_limit=None) as them:
        theirs = them.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                      ssh_key_names=["default"], name="theirs").instance_id
    with LambdaClient(ep["api_key"], base_url=ep["url"], rate_limit=None) as me:
        assert theirs not in {i.id for i in me.list_instances()}
        with pytest.raises(LambdaNotFound):
            me.get_instance(theirs)
        assert me.terminate_instances([theirs]) == []  # missing_ok: nothing of theirs is touched
    assert clouds.world.vm(Provider.LAMBDA, theirs) is not None
