"""The mock clouds fuzzed with malformed and oversized requests, property-based: every answer is the cloud's own
4xx (Crusoe `{"code", "message"}`, Lambda `{"error": {"code", "message"}}`, a Nebius status other than INTERNAL
or UNKNOWN, with its rich details), never a 5xx, never an unhandled error in the server, and the clouds still
serve a normal request afterwards.

Requests are authenticated correctly (signed, for Crusoe), so they get past authentication into the handlers;
paths are the real routes with hostile path parameters, bodies are random JSON, random bytes, deeply nested or
over the size limit. HTTP framing garbage (bad Content-Length, chunked bodies) is sent over raw sockets.
"""

from __future__ import annotations

import logging
import re
import socket
import urllib.parse
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st
from mock_clouds.crusoe.server import ROUTES as CRUSOE_ROUTES
from mock_clouds.crusoe.testing import PREFIX as CRUSOE_PREFIX
from mock_clouds.crusoe.testing import CrusoeClient
from mock_clouds.lambda_cloud.app import PREFIX as LAMBDA_PREFIX
from mock_clouds.lambda_cloud.app import ROUTES as LAMBDA_ROUTES
from mock_clouds.nebius import testkit
from mock_clouds.nebius.server import SERVICES
from mock_clouds.runner import MockClouds
from reliability_kit import sizes
from reliability_kit.hostile import HOSTILE, LONG, SPECIAL, TEXT, examples

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                max_size=4), max_leaves=20)
FIELD_NAMES = ("name", "type", "location", "ssh_public_key", "image", "reservation_specification", "action",
               "region_name", "instance_type_name", "ssh_key_names", "instance_ids", "reservation_id", "quantity",
               "file_system_names", "user_data", "public_key", "id", "names")
OBJECTS = st.dictionaries(st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=12)), JSON, max_size=6)
# Big payloads by name, so that a failing example prints a word rather than megabytes.
BIG = {
    "nested": b"[" * 100_000 + b"]" * 100_000,  # 200 KB of nesting: under the size limit, deeper than parsers like
    "oversized": b'{"name": "' + b"x" * (2 << 20) + b'"}',  # over the 1 MiB limit
    "long-name": b'{"name": "' + b"x" * 500_000 + b'", "type": "l40s-48gb.1x", "location": "eu-iceland1-a"}',
}
BODIES = st.one_of(OBJECTS.map(lambda o: ("json", o)), JSON.map(lambda o: ("json", o)),
                   st.binary(max_size=200).map(lambda b: ("raw", b)),
                   st.sampled_from(sorted(BIG)).map(lambda k: ("big", k)),
                   st.sampled_from([("raw", b"{"), ("raw", b"\xff\xfe"), ("raw", b'{"name": "\\ud800"}')]))
PROTO_TEXT = st.one_of(TEXT, LONG, SPECIAL)  # protobuf strings are UTF-8: no lone surrogates
SEGMENT = st.one_of(HOSTILE, st.sampled_from(["..", ".", "%00", "%2F", "-1", "0" * 300]))
METHODS = st.sampled_from(["GET", "POST", "PATCH", "DELETE", "PUT"])


class _Unhandled(logging.Handler):
    """Counts errors the mock servers logged as unhandled (a bug behind a 500 or an INTERNAL)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def clouds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockClouds]:
    with MockClouds(tmp_path_factory.mktemp("wire"), time_scale=0.002) as running:
        yield running


@pytest.fixture
def unhandled() -> Iterator[_Unhandled]:
    handler = _Unhandled()
    logger = logging.getLogger("mock_clouds")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    assert [r.getMessage() for r in handler.records] == []


def fill(pattern: str, values: list[str], known: dict[str, str]) -> str:
    """The route with each {param} replaced by a hostile value (percent-encoded) or, sometimes, a real one."""
    parts = pattern.split("/")
    for index, part in enumerate(parts):
        if part.startswith("{"):
            value = values.pop() if values else ""
            text = known.get(part[1:-1], value) if value == "REAL" else value
            parts[index] = urllib.parse.quote(text, safe="", errors="surrogateescape")
    return "/".join(parts)


def payload(body: tuple[str, Any]) -> dict[str, Any]:
    """requests keyword arguments for a body drawn from BODIES."""
    kind, value = body
    if kind == "json":
        return {"json": value}
    return {"data": BIG[value] if kind == "big" else value, "headers": {"Content-Type": "application/json"}}


def send_crusoe(client: CrusoeClient, method: str, path: str, body: tuple[str, Any]) -> requests.Response:
    """Signed like Crusoe's Go client: over the decoded path (req.URL.Path), sent percent-encoded."""
    return client.request(method, path, signed_path=CRUSOE_PREFIX + urllib.parse.unquote(path), **payload(body))


def crusoe_shaped(response: requests.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("code"), str) and isinstance(body.get("message"), str), body


def lambda_shaped(response: requests.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        error = response.json()["error"]
        assert isinstance(error.get("code"), str) and isinstance(error.get("message"), str), error


# ---------------------------------------------------------------------------------------------- Crusoe
def check_crusoe(clouds: MockClouds, count: int) -> None:
    endpoint = clouds.endpoints["crusoe"]
    client = CrusoeClient(endpoint["url"].removesuffix("/v1alpha5"), endpoint["access_key_id"],
                          endpoint["secret_key"])
    known = {"project_id": endpoint["project_id"], "organization_id": endpoint["organization_id"]}
    routes = [(r.method, r.pattern) for r in CRUSOE_ROUTES]

    @examples(count)
    @given(st.sampled_from(routes), st.booleans(), METHODS, st.lists(st.one_of(SEGMENT, st.just("REAL")),
                                                                       min_size=3, max_size=3), BODIES)
    def check(route: tuple[str, str], same_method: bool, method: str, values: list[str],
              body: tuple[str, Any]) -> None:
        response = send_crusoe(client, route[0] if same_method else method, fill(route[1], values, known), body)
        crusoe_shaped(response)

    check()


# ---------------------------------------------------------------------------------------------- Lambda
def check_lambda(clouds: MockClouds, count: int) -> None:
    endpoint = clouds.endpoints["lambda"]
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {endpoint['api_key']}"
    routes = [(r.method, lambda_template(r.pattern.pattern)) for r in LAMBDA_ROUTES]

    @examples(count)
    @given(st.sampled_from(routes), st.booleans(), METHODS, st.lists(SEGMENT, min_size=1, max_size=1), BODIES)
    def check(route: tuple[str, str], same_method: bool, method: str, values: list[str],
              body: tuple[str, Any]) -> None:
        url = endpoint["url"] + fill(route[1], values, {})
        response = session.request(route[0] if same_method else method, url, timeout=30, **payload(body))
        lambda_shaped(response)

    check()


def lambda_template(regex: str) -> str:
    """"^/api/v1/instances/(?P<id>[^/]+)$" -> "/instances/{id}" (the Lambda mock keeps compiled routes)."""
    return re.sub(r"\(\?P<(\w+)>\[\^/\]\+\)", r"{\1}", regex.strip("^$")).removeprefix(LAMBDA_PREFIX)


# ---------------------------------------------------------------------------------------------- Nebius
NEBIUS_BAD = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DATA_LOSS,
              grpc.StatusCode.UNIMPLEMENTED}


def nebius_call(target: str, token: str, method: str, payload: bytes) -> grpc.RpcError | None:
    with grpc.insecure_channel(target, options=[("grpc.max_send_message_length", 16 << 20)]) as channel:
        call = channel.unary_unary(method)
        try:
            call(payload, metadata=[("authorization", f"Bearer {token}")], timeout=30)
        except grpc.RpcError as exc:
            return exc
    return None


def check_nebius(clouds: MockClouds, count: int) -> None:
    endpoint = clouds.endpoints["nebius"]
    methods = [f"/{service}/{name}" for service, rpcs in SERVICES.items() for name in rpcs]
    messages = st.one_of(st.binary(max_size=300), st.sampled_from([b"", b"\xff" * 64, b"\x0a\xff\xff\xff\xff\x0f",
                                                                   b"\x12" * 1000]),
                         st.just("5 MiB").map(lambda _: b"x" * (5 << 20)), nebius_messages(endpoint["project_id"]))

    @examples(count)
    @given(st.sampled_from(methods), messages)
    def check(method: str, payload: bytes) -> None:
        error = nebius_call(endpoint["target"], endpoint["token"], method, payload)
        if error is None:
            return
        code = error.code()  # type: ignore[attr-defined]
        assert code not in NEBIUS_BAD, (method, code, error.details())  # type: ignore[attr-defined]
        if code is not grpc.StatusCode.RESOURCE_EXHAUSTED or "larger than max" not in (error.details() or ""):
            status = testkit.rpc_status(error)
            assert status is not None and status.code == code.value[0], (method, code, error.details())

    check()


def nebius_messages(project: str) -> st.SearchStrategy[bytes]:
    """Well-formed messages with hostile field values (names, parents, ids, presets, labels)."""
    text = st.one_of(PROTO_TEXT, st.just(project))

    def create(name: str, parent: str, platform: str, preset: str, label: str) -> bytes:
        spec = testkit.instance_spec(platform=platform, preset=preset)
        return bytes(testkit.create_request(parent, name, spec, **{"k": label}))

    from mock_clouds.nebius._pb.nebius.common import v1 as common
    from mock_clouds.nebius._pb.nebius.compute import v1 as compute

    return st.one_of(
        st.builds(create, text, text, text, text, text),
        st.builds(lambda i: bytes(compute.GetInstanceRequest(id=i)), text),
        st.builds(lambda p, n: bytes(common.GetByNameRequest(parent_id=p, name=n)), text, text),
        st.builds(lambda p, s, t: bytes(compute.ListInstancesRequest(parent_id=p, page_size=s, page_token=t)),
                  text, st.integers(-(2**63), 2**63 - 1), text),
        st.builds(lambda i: bytes(common.GetOperationRequest(id=i)), text),
    )


# ---------------------------------------------------------------------------------------------- framing
FRAMING = [
    b"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{{}}",
    b"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    b"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{{}}",
    b"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n",
    b"GET {path}?%zz=%%% HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET {path}/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
]


def raw_status(port: int, request: bytes) -> int | None:
    """The status code of a raw request's answer, or None when the server closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request)
        answer = conn.recv(65536)
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None


def check_framing(clouds: MockClouds) -> None:
    for provider, path in (("crusoe", b"/v1alpha5/locations"), ("lambda", LAMBDA_PREFIX.encode() + b"/instances")):
        for template in FRAMING:
            status = raw_status(clouds.port(provider), template.replace(b"{path}", path).replace(b"{{}}", b"{}"))
            assert status is None or 400 <= status < 500, (provider, template, status)


def still_serving(clouds: MockClouds) -> None:
    ep = clouds.endpoints
    crusoe = CrusoeClient(ep["crusoe"]["url"].removesuffix("/v1alpha5"), ep["crusoe"]["access_key_id"],
                          ep["crusoe"]["secret_key"])
    assert crusoe.get("/locations").status_code == 200
    lam = requests.get(ep["lambda"]["url"] + "/instances", timeout=30,
                       headers={"Authorization": f"Bearer {ep['lambda']['api_key']}"})
    assert lam.status_code == 200
    assert nebius_call(ep["nebius"]["target"], ep["nebius"]["token"], "/nebius.compute.v1.InstanceService/List",
                       bytes(_list_request(ep["nebius"]["project_id"]))) is None


def _list_request(project: str) -> Any:
    from mock_clouds.nebius._pb.nebius.compute import v1 as compute

    return compute.ListInstancesRequest(parent_id=project)


def fuzz(clouds: MockClouds, count: int) -> None:
    check_framing(clouds)
    check_crusoe(clouds, count)
    check_lambda(clouds, count)
    check_nebius(clouds, count)
    still_serving(clouds)


def test_hostile_requests_fast(clouds: MockClouds, unhandled: _Unhandled, figures) -> None:
    fuzz(clouds, sizes.FAST.wire_examples)
    figures.add("hostile requests", 3 * sizes.FAST.wire_examples + 2 * len(FRAMING))


@pytest.mark.soak
def test_hostile_requests_soak(clouds: MockClouds, unhandled: _Unhandled, figures) -> None:
    fuzz(clouds, sizes.SOAK.wire_examples)
    figures.add("hostile requests", 3 * sizes.SOAK.wire_examples + 2 * len(FRAMING))
