"""Decoding that survives what a real (Go) Crusoe server may send, through the wire against the Crusoe mock:
quota counters as strings, `null` for empty slices, timestamps that are not RFC 3339, and a 429 on a create."""

from __future__ import annotations

from typing import Any

import msgspec
from crusoe_sdk import CrusoeClient, Instance, RetryPolicy
from crusoe_testkit import client_for, create, crusoe_config


def test_quota_counters_written_as_strings_read_as_numbers(client: CrusoeClient) -> None:
    """dstack backends/crusoe/compute.py:174-175: "The API documents counters as integers but returns them as
    strings" (research real-clouds.md Part 2 D9); the mock writes strings by default."""
    quotas = {q.programmatic_name: q for q in client.list_quotas()}
    assert (quotas["h100"].max, quotas["h100"].used, quotas["h100"].available) == (256, 0, 256)


def test_null_slices_do_not_break_a_listing(mock_clouds_factory: Any) -> None:
    """A Go server writes a nil slice without `omitempty` as `null` (client-go
    swagger/v1alpha5/model_instance_v1_alpha5.go @e23c062 has no omitempty on `host_channel_adapters`;
    research real-clouds.md Part 3 R1): the VM decodes with an empty list, and the listing holds every VM."""

    def nil_slices(state: Any) -> None:
        crusoe_config(state).extra["nil_slices"] = True

    client = client_for(mock_clouds_factory(providers=("crusoe",), configure=nil_slices))
    made = [create(client, f"nil-{i}").result(timeout=120) for i in range(2)]
    listed = client.list_instances().to_list()
    assert sorted(vm.id for vm in listed) == sorted(vm.id for vm in made)
    assert all(vm.host_channel_adapters == [] for vm in listed)
    assert client.get_instance(made[0].id).reservation_id == ""


def test_timestamps_kept_as_given_when_not_rfc3339() -> None:
    """The swagger declares `created_at`/`updated_at` plain strings (research real-clouds.md Part 3, risk 3): a
    form other than RFC 3339 never fails the decode; the text is kept and the time is None."""
    vm = msgspec.convert({"id": "x", "name": "n", "type": "t", "location": "l",
                          "created_at": "2021-12-03 19:58:34 +0000 UTC", "updated_at": "2021-12-03T19:58:34.5+01:00"},
                         Instance)
    assert vm.created_at is None and vm.created_at_text == "2021-12-03 19:58:34 +0000 UTC"
    assert vm.updated_at is not None and vm.updated_at.utcoffset() is not None and vm.updated_at.hour == 19


def test_a_create_answered_429_was_not_applied_and_is_retried(mock_clouds_factory: Any) -> None:
    """A 429 comes from the rate limiter before the request is handled (research real-clouds.md 3.3 "Retries
    and 429": "Treat a 429 on POST as not applied and retry it"): the second of two back-to-back creates waits
    for Retry-After and goes through once."""

    def one_create_per_interval(state: Any) -> None:
        crusoe_config(state).rate_limit.create_interval = 20.0  # 1 s at the test scale

    clouds = mock_clouds_factory(providers=("crusoe",), configure=one_create_per_interval)
    client = client_for(clouds, retry=RetryPolicy(max_attempts=8, initial=0.01, maximum=0.05, max_retry_after=30.0))
    first, second = create(client, "paced-1"), create(client, "paced-2")
    assert first.resource_id != second.resource_id
    names = [vm.name for vm in client.list_instances()]
    assert sorted(names) == ["paced-1", "paced-2"]
