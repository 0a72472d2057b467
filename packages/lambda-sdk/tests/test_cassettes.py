"""Replays of calls recorded from the mock clouds with vcrpy (tests/cassettes/*.yaml).

By default the cassettes are only replayed (record_mode "none": a request that is not in the cassette fails,
so CI never records or reaches a network). `LAMBDA_SDK_RECORD=1` records them again from an in-process mock.
Authorization headers are dropped and secrets in bodies (API key, Jupyter tokens, private keys) are scrubbed
before anything is written; `test_cassettes_hold_no_secrets` checks the files.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vcr
from lambda_sdk import InstanceStatus, LambdaClient, PollPolicy

CASSETTES = Path(__file__).parent / "cassettes"
RECORDING = os.environ.get("LAMBDA_SDK_RECORD") == "1"
SECRET_KEYS = {"jupyter_token", "jupyter_url", "private_key"}
REDACTED = "REDACTED"


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if k in SECRET_KEYS else _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    body = response["body"]["string"]
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return response
    response["body"]["string"] = json.dumps(_scrub(data)).encode()
    response["headers"].pop("Content-Length", None)
    return response


def _json_body(r1: Any, r2: Any) -> None:
    assert json.loads(r1.body or b"null") == json.loads(r2.body or b"null")


def _recorder() -> vcr.VCR:
    recorder = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode="all" if RECORDING else "none",
        filter_headers=["authorization"],
        before_record_response=_scrub_response,
        match_on=["method", "scheme", "host", "path", "query", "json_body"],  # no port: the mock's is random
        decode_compressed_response=True,
    )
    recorder.register_matcher("json_body", _json_body)
    return recorder


@pytest.fixture
def cassette_client(request: pytest.FixtureRequest, make_client: Any) -> Iterator[LambdaClient]:
    """A client whose calls go to a fresh mock while recording, and to the cassette otherwise."""
    if RECORDING:
        clouds = request.getfixturevalue("mock_clouds_factory")(providers=("lambda",))
        client = make_client(clouds)
    else:
        client = LambdaClient("replay-key", base_url="http://127.0.0.1:9/api/v1", rate_limit=None,
                              poll=PollPolicy(initial=0.001, maximum=0.001))
    yield client
    client.close()


def test_catalog_reads(cassette_client: LambdaClient) -> None:
    with _recorder().use_cassette("catalog.yaml"):
        types = cassette_client.instance_types()
        regions = list(cassette_client.list_regions())
        images = list(cassette_client.list_images())
        keys = list(cassette_client.list_ssh_keys())
    assert types["gpu_1x_a10"].has_capacity("us-east-1")
    assert "us-east-1" in {r.name for r in regions}
    assert images and [k.name for k in keys] == ["default"]


def test_instance_lifecycle(cassette_client: LambdaClient) -> None:
    with _recorder().use_cassette("lifecycle.yaml"):
        op = cassette_client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                             ssh_key_names=["default"], name="cassette-1")
        active = op.result(timeout=60)
        renamed = cassette_client.rename_instance(op.instance_id, "cassette-renamed")
        terminated = cassette_client.terminate_instances([op.instance_id])
        again = cassette_client.terminate_instances([op.instance_id])
    assert active.status is InstanceStatus.ACTIVE and active.ip
    assert renamed.name == "cassette-renamed"
    assert [i.status for i in terminated] == [InstanceStatus.TERMINATING]
    assert again == []


def test_cassettes_hold_no_secrets() -> None:
    files = sorted(CASSETTES.glob("*.yaml"))
    assert files, "no cassettes recorded"
    secret_patterns = [
        re.compile(r"authorization", re.IGNORECASE),
        re.compile(r"Bearer\s"),
        re.compile(r"secret_mock_"),  # the mock's API key prefix
        re.compile(r"BEGIN [A-Z ]*PRIVATE KEY"),
        re.compile(r"token=(?!REDACTED)"),
    ]
    for path in files:
        text = path.read_text()
        for pattern in secret_patterns:
            assert not pattern.search(text), f"{path.name} matches {pattern.pattern}"
