"""vcrpy cassettes recorded from the mock: a few reads and a VM lifecycle, replayed offline.

Replay (the default, also in CI) needs no server: record_mode "none" fails on any request not in the
cassette. Re-record against a fresh in-process mock with `CRUSOE_SDK_RECORD=1` (see the README). Secret
headers are filtered and bodies scrubbed before anything is written; a test scans the files.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import vcr
from crusoe_sdk import CrusoeClient, InstanceState, NotFound, OnDemand
from crusoe_testkit import DEFAULT_PROJECT, FAST_POLL, FAST_RETRY, SSH_KEY, client_for

CASSETTES = Path(__file__).parent / "cassettes"
RECORDING = os.environ.get("CRUSOE_SDK_RECORD") == "1"
REPLAY_URL = "http://127.0.0.1:9/v1alpha5"  # nothing listens there; vcr answers (ports are not matched)
REPLAY_SECRET = "cmVwbGF5LW9ubHktc2VjcmV0"  # b64url("replay-only-secret")
SECRET_HEADERS = ["authorization", "x-crusoe-timestamp"]
REDACTED = "REDACTED"


def json_body(r1: Any, r2: Any) -> None:
    """vcr matcher: JSON bodies equal regardless of key order (raises AssertionError on a mismatch)."""
    assert json.loads(r1.body or b"null") == json.loads(r2.body or b"null")


def scrubber(secrets: list[str]) -> tuple[Callable[[Any], Any], Callable[[dict], dict]]:
    def scrub(data: Any) -> Any:
        for secret in secrets:
            if isinstance(data, bytes):
                data = data.replace(secret.encode(), REDACTED.encode())
            elif isinstance(data, str):
                data = data.replace(secret, REDACTED)
        return data

    def request(req: Any) -> Any:
        req.body = scrub(req.body)
        req.uri = scrub(req.uri)
        return req

    def response(resp: dict) -> dict:
        resp["body"]["string"] = scrub(resp["body"]["string"])
        return resp

    return request, response


def recorder(secrets: list[str]) -> vcr.VCR:
    before_request, before_response = scrubber(secrets)
    recorder = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode="all" if RECORDING else "none",
        filter_headers=SECRET_HEADERS,
        match_on=["method", "scheme", "host", "path", "query", "json_body"],
        before_record_request=before_request,
        before_record_response=before_response,
        decode_compressed_response=True,
    )
    recorder.register_matcher("json_body", json_body)
    return recorder


@pytest.fixture
def recorded(mock_clouds_factory: Any) -> Iterator[tuple[CrusoeClient, vcr.VCR]]:
    """(client, vcr): against a fresh mock when recording, against nothing when replaying."""
    if RECORDING:
        clouds = mock_clouds_factory(providers=("crusoe",))
        endpoint = clouds.endpoints["crusoe"]
        assert endpoint["project_id"] == DEFAULT_PROJECT  # cassettes name the default scenario's project
        client = client_for(clouds)
        secrets = [endpoint["secret_key"], endpoint["access_key_id"]]
    else:
        client = CrusoeClient("REPLAYKEY", REPLAY_SECRET, base_url=REPLAY_URL, project_id=DEFAULT_PROJECT,
                              poll=FAST_POLL, retry=FAST_RETRY)
        secrets = []
    with client:
        yield client, recorder(secrets)


def test_catalogue_reads(recorded: tuple[CrusoeClient, vcr.VCR]) -> None:
    client, cassettes = recorded
    with cassettes.use_cassette("catalogue.yaml") as cassette:
        assert client.get_project().name == "default"
        assert "us-east1-a" in client.list_locations().to_list()
        assert {t.product_name for t in client.list_vm_types()} >= {"h100-80gb-sxm-ib.8x", "l40s-48gb.1x"}
        assert [c.type for c in client.list_capacities(types=["l40s-48gb.1x"])] == ["l40s-48gb.1x"]
        assert {r.product_line for r in client.list_reservations()} == {"h100"}
    assert RECORDING or cassette.all_played


def test_instance_lifecycle(recorded: tuple[CrusoeClient, vcr.VCR]) -> None:
    client, cassettes = recorded
    with cassettes.use_cassette("instance_lifecycle.yaml") as cassette:
        op = client.begin_create_instance(
            name="cassette-vm", type="l40s-48gb.1x", location="eu-iceland1-a", ssh_public_key=SSH_KEY,
            image="ubuntu22.04:latest", reservation_specification=OnDemand(),
        )
        vm = op.result(timeout=120)
        assert (vm.name, vm.state, vm.reservation_id) == ("cassette-vm", InstanceState.RUNNING, "")
        assert client.begin_stop_instance(vm.id).result(timeout=120).state is InstanceState.STOPPED
        assert client.begin_start_instance(vm.id).result(timeout=120).state is InstanceState.RUNNING
        assert client.find_instance("cassette-vm") == client.get_instance(vm.id)
        client.delete_instance(vm.id, timeout=120)
        with pytest.raises(NotFound):
            client.get_instance(vm.id)
    assert RECORDING or cassette.all_played


KEY_ID_SHAPE = re.compile(r"(?<![0-9A-F-])[0-9A-F]{20}(?![0-9A-F-])")  # Crusoe access key ids


def leaks(text: str) -> list[str]:
    """What in a cassette's text looks like a credential: auth headers, signatures, access key ids."""
    found = [marker for marker in ("authorization", "bearer", "x-crusoe-timestamp") if marker in text.lower()]
    return found + KEY_ID_SHAPE.findall(text)


def test_the_leak_scanner_catches_credentials() -> None:
    assert leaks("Authorization:\n- Bearer 1.0:0A1B2C3D4E5F60718293:sig") == [
        "authorization", "bearer", "0A1B2C3D4E5F60718293",
    ]
    assert leaks("operation_id: B4518778-DDEE-48E8-9C2C-EAA9A089AA8E") == []


def test_cassettes_hold_no_secrets() -> None:
    files = sorted(CASSETTES.glob("*.yaml"))
    assert len(files) >= 2
    for path in files:
        assert leaks(path.read_text()) == [], path.name
