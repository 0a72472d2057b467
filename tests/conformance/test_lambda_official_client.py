"""Lambda's generated client (`lambda-ai-cloud-api-client`, from OpenAPI 1.8.3) against the Lambda mock."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from lambda_ai_cloud_api_client import AuthenticatedClient
from lambda_ai_cloud_api_client.api.firewalls import (
    create_firewall_ruleset,
    delete_firewall_ruleset,
    get_firewall_ruleset,
    get_global_firewall_ruleset,
)
from lambda_ai_cloud_api_client.api.instances import (
    get_instance,
    launch_instance,
    list_instance_types,
    list_instances,
    restart_instance,
    terminate_instance,
)
from lambda_ai_cloud_api_client.api.ssh_keys import add_ssh_key, delete_ssh_key, list_ssh_keys
from lambda_ai_cloud_api_client.models import (
    AddSSHKeyRequest,
    ApiErrorFirewallRulesetInUse,
    ApiErrorInvalidParameters,
    CreateFirewallRulesetResponse200,
    DeleteFirewallRulesetResponse400,
    FirewallRule,
    FirewallRulesetCreateRequest,
    GetFirewallRulesetResponse200,
    GetInstanceResponse200,
    GetInstanceResponse404,
    InstanceLaunchRequest,
    InstanceRestartRequest,
    InstanceStatus,
    InstanceTerminateRequest,
    LaunchInstanceResponse200,
    LaunchInstanceResponse400,
    ListInstancesResponse200,
    ListInstancesResponse401,
    NetworkProtocol,
    PublicRegionCode,
)
from mock_clouds.core.models import RateLimit, WorldState
from mock_clouds.lambda_cloud.testing import RESERVATION_ID
from mock_clouds.runner import MockClouds

DEADLINE = 30.0  # generous: the mock boots an instance in well under a second at the test time scale


class WaitOut429(httpx.HTTPTransport):
    """Waits out a 429 as Lambda's docs ask, then sends the request again: "Requests to the API are generally
    limited to one request per second. Requests to the /instance-operations/launch endpoint are limited to one
    request per 12 seconds". The documented intervals are multiplied by the mock's time scale."""

    def __init__(self, time_scale: float) -> None:
        super().__init__()
        self.time_scale = time_scale
        self.waited = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + DEADLINE
        while True:
            response = super().handle_request(request)
            if response.status_code != 429 or time.monotonic() > deadline:
                return response
            response.close()
            self.waited += 1
            documented = 12.0 if request.url.path.endswith("/instance-operations/launch") else 1.0
            time.sleep(documented * self.time_scale)


def _client(clouds: MockClouds, key: str | None = None, transport: WaitOut429 | None = None) -> AuthenticatedClient:
    endpoint = clouds.endpoints["lambda"]
    base_url = str(endpoint["url"]).removesuffix("/api/v1")  # the client's paths start with /api/v1
    transport = transport or WaitOut429(clouds.world.scaled(1.0))
    return AuthenticatedClient(
        base_url=base_url, token=key or str(endpoint["api_key"]), httpx_args={"transport": transport}
    )


@pytest.fixture
def lambda_client(mock_clouds_factory) -> Iterator[AuthenticatedClient]:
    with _client(mock_clouds_factory(providers=("lambda",))) as client:
        yield client


def _launch(
    client: AuthenticatedClient,
    region: PublicRegionCode = PublicRegionCode.US_EAST_1,
    instance_type: str = "gpu_1x_a10",
    **extra: object,
) -> str:
    body = InstanceLaunchRequest(region_name=region, instance_type_name=instance_type, ssh_key_names=["default"])
    body.additional_properties.update(extra)
    launched = launch_instance.sync(client=client, body=body)
    assert isinstance(launched, LaunchInstanceResponse200), launched
    (instance_id,) = launched.data.instance_ids
    return instance_id


def _wait_status(client: AuthenticatedClient, instance_id: str, status: InstanceStatus) -> GetInstanceResponse200:
    deadline = time.monotonic() + DEADLINE
    while True:
        got = get_instance.sync(instance_id, client=client)
        assert isinstance(got, GetInstanceResponse200), got
        if got.data.status == status or time.monotonic() > deadline:
            assert got.data.status == status
            return got
        time.sleep(0.02)


def test_full_lifecycle(lambda_client: AuthenticatedClient) -> None:
    types = list_instance_types.sync(client=lambda_client)
    assert "gpu_1x_a10" in types.data.additional_properties
    instance_id = _launch(lambda_client, name="conformance")
    active = _wait_status(lambda_client, instance_id, InstanceStatus.ACTIVE).data
    assert active.name == "conformance" and active.ip and active.region.name == PublicRegionCode.US_EAST_1
    listed = list_instances.sync(client=lambda_client)
    assert isinstance(listed, ListInstancesResponse200) and [i.id for i in listed.data] == [instance_id]

    restarted = restart_instance.sync(client=lambda_client, body=InstanceRestartRequest(instance_ids=[instance_id]))
    assert [i.id for i in restarted.data.restarted_instances] == [instance_id]
    _wait_status(lambda_client, instance_id, InstanceStatus.ACTIVE)

    body = InstanceTerminateRequest(instance_ids=[instance_id])
    terminated = terminate_instance.sync(client=lambda_client, body=body)
    assert terminated.data.terminated_instances[0].status == InstanceStatus.TERMINATING
    _wait_status(lambda_client, instance_id, InstanceStatus.TERMINATED)


def test_ssh_keys(lambda_client: AuthenticatedClient) -> None:
    added = add_ssh_key.sync(client=lambda_client, body=AddSSHKeyRequest(name="generated"))
    assert added.data.private_key.startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert {k.name for k in list_ssh_keys.sync(client=lambda_client).data} == {"default", "generated"}
    assert delete_ssh_key.sync_detailed(added.data.id, client=lambda_client).status_code == 200
    again = delete_ssh_key.sync_detailed(added.data.id, client=lambda_client)
    assert again.status_code == 404  # 1.10 declares ApiErrorNotFound; the 1.8.3 client leaves it unparsed
    assert again.parsed is None and b'"global/not-found"' in again.content


def test_bad_api_key_is_401(mock_clouds_factory) -> None:
    clouds = mock_clouds_factory(providers=("lambda",))
    with _client(clouds, key="secret_wrong_0123456789abcdef0123456789abcdef.x") as client:
        refused = list_instances.sync(client=client)
    assert isinstance(refused, ListInstancesResponse401) and refused.error.code == "global/invalid-api-key"


def test_unknown_instance_is_404(lambda_client: AuthenticatedClient) -> None:
    missing = get_instance.sync("0" * 32, client=lambda_client)
    assert isinstance(missing, GetInstanceResponse404) and missing.error.code == "global/object-does-not-exist"


def test_invalid_launch_is_400(lambda_client: AuthenticatedClient) -> None:
    body = InstanceLaunchRequest(
        region_name=PublicRegionCode.US_EAST_1,
        instance_type_name="gpu_1x_a10",
        ssh_key_names=["default"],
        hostname="Not_A_Hostname",
    )
    refused = launch_instance.sync(client=lambda_client, body=body)
    assert isinstance(refused, LaunchInstanceResponse400) and isinstance(refused.error, ApiErrorInvalidParameters)


def test_terminating_twice_is_a_400_the_spec_declares(lambda_client: AuthenticatedClient) -> None:
    instance_id = _launch(lambda_client)
    body = InstanceTerminateRequest(instance_ids=[instance_id])
    assert terminate_instance.sync_detailed(client=lambda_client, body=body).status_code == 200
    again = terminate_instance.sync_detailed(client=lambda_client, body=body)
    assert again.status_code == 400
    error = ApiErrorInvalidParameters.from_dict(_error_body(again.content))  # the 1.10 spec's 400 for terminate
    assert "already terminating" in error.message


def test_restarting_a_booting_instance_is_409(mock_clouds_factory) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=1.0)  # boots take 180 s: stays booting
    with _client(clouds) as client:
        instance_id = _launch(client)
        refused = restart_instance.sync_detailed(client=client, body=InstanceRestartRequest(instance_ids=[instance_id]))
    assert refused.status_code == 409 and _error_body(refused.content)["code"] == "global/conflict"


def test_launch_rate_limit_is_waited_out(mock_clouds_factory) -> None:
    """Two launches in a row: the second gets a 429 (one launch per 12 s, here scaled to 3 s) and succeeds
    once the documented interval has passed."""

    def configure(state: WorldState) -> None:
        state.providers["lambda"].rate_limit = RateLimit(request_interval=0.0, create_interval=12.0)

    clouds = mock_clouds_factory(providers=("lambda",), time_scale=0.25, configure=configure)
    transport = WaitOut429(clouds.world.scaled(1.0))
    with _client(clouds, transport=transport) as client:
        first, second = _launch(client), _launch(client)
    assert first != second and transport.waited >= 1


def test_reserved_launch_extension_passes_through_the_client(lambda_client: AuthenticatedClient) -> None:
    """`reservation_id` on launch and `is_reserved` are mock extensions (mock-clouds/README.md): the generated
    client carries them as additional properties."""
    instance_id = _launch(
        lambda_client, PublicRegionCode.US_SOUTH_2, "gpu_8x_h100_sxm5", reservation_id=RESERVATION_ID
    )
    instance = _wait_status(lambda_client, instance_id, InstanceStatus.ACTIVE).data
    assert instance.additional_properties["is_reserved"] is True
    plain = _wait_status(lambda_client, _launch(lambda_client), InstanceStatus.ACTIVE).data
    assert plain.additional_properties["is_reserved"] is False


def _error_body(content: bytes) -> dict[str, Any]:
    body = json.loads(content)
    assert set(body) == {"error"}
    return body["error"]


def test_a_preempted_instance_parses_as_preempted(mock_clouds_factory) -> None:
    """`preempted` (InstanceStatus since 1.8) as the client reads it; the mock's admin API preempts."""
    clouds = mock_clouds_factory(providers=("lambda",))
    with _client(clouds) as client:
        instance_id = _launch(client)
        _wait_status(client, instance_id, InstanceStatus.ACTIVE)
        admin = clouds.endpoints["admin"]
        preempted = httpx.post(
            f"{admin['url']}/preempt/lambda/{instance_id}", headers={"Authorization": f"Bearer {admin['token']}"}
        )
        assert preempted.status_code == 200
        assert _wait_status(client, instance_id, InstanceStatus.PREEMPTED).data.id == instance_id


def test_firewall_rulesets(lambda_client: AuthenticatedClient) -> None:
    rule = FirewallRule(
        protocol=NetworkProtocol.TCP, port_range=[22, 22], source_network="0.0.0.0/0", description="Allow SSH"
    )
    body = FirewallRulesetCreateRequest(name="web", region=PublicRegionCode.US_EAST_1, rules=[rule])
    created = create_firewall_ruleset.sync(client=lambda_client, body=body)
    assert isinstance(created, CreateFirewallRulesetResponse200), created
    ruleset_id = created.data.id
    instance_id = _launch(lambda_client, firewall_rulesets=[{"id": ruleset_id}])
    instance = _wait_status(lambda_client, instance_id, InstanceStatus.ACTIVE).data
    assert [entry.id for entry in instance.firewall_rulesets] == [ruleset_id]
    fetched = get_firewall_ruleset.sync(ruleset_id, client=lambda_client)
    assert isinstance(fetched, GetFirewallRulesetResponse200) and fetched.data.instance_ids == [instance_id]
    assert fetched.data.rules[0].port_range == [22, 22]
    in_use = delete_firewall_ruleset.sync(ruleset_id, client=lambda_client)
    assert isinstance(in_use, DeleteFirewallRulesetResponse400)
    assert isinstance(in_use.error, ApiErrorFirewallRulesetInUse)
    assert get_global_firewall_ruleset.sync(client=lambda_client).data.id == "global"
