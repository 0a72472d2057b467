"""The client-side limiter keeps a burst from threads under Lambda's limits; 429s are retried safely."""

from __future__ import annotations

import threading

import requests
from lambda_sdk import LambdaClient, RetryPolicy

TIME_SCALE = 0.05  # Lambda's 1 request/s -> 50 ms, 1 launch/12 s -> 600 ms
PATIENT_RETRY = RetryPolicy(max_attempts=30, initial=0.05, maximum=0.5)


def _launch_burst(client: LambdaClient, count: int) -> list[BaseException]:
    failures: list[BaseException] = []

    def one(n: int) -> None:
        try:
            client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                   ssh_key_names=["default"], name=f"burst-{n}")
            list(client.list_instances())
        except BaseException as exc:  # collected and asserted on by the test
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return failures


def _logged_session(statuses: list[int]) -> requests.Session:
    session = requests.Session()
    session.hooks["response"].append(lambda r, *a, **k: statuses.append(r.status_code))
    return session


def test_limiter_shared_by_threads_sees_no_429(mock_clouds_factory, make_client) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=TIME_SCALE)
    statuses: list[int] = []
    client = make_client(clouds, time_scale=TIME_SCALE, session=_logged_session(statuses),
                         retry=PATIENT_RETRY)
    assert _launch_burst(client, 4) == []
    assert len(list(client.list_instances())) == 4
    assert statuses and statuses.count(429) == 0


def test_without_limiter_429s_are_retried_and_nothing_is_launched_twice(mock_clouds_factory,
                                                                        make_client) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=TIME_SCALE)
    statuses: list[int] = []
    client = make_client(clouds, rate_limit=None, session=_logged_session(statuses), retry=PATIENT_RETRY)
    assert _launch_burst(client, 4) == []
    assert statuses.count(429) > 0  # the server pushed back...
    names = sorted(i.name for i in client.list_instances())
    assert names == [f"burst-{n}" for n in range(4)]  # ...and each launch happened exactly once


def test_launches_between_busy_reads_each_happen_once(mock_clouds_factory, make_client) -> None:
    """Launches that wait for general tokens behind other threads' reads all go out, each exactly once
    (counted on the wire and in the account). Whether the server
    saw a 429 on the way depends on how late this machine's scheduler sent a request after its slot, so this
    test does not count them; the spacing rule itself is proven on a fake clock in test_policy.py
    (test_a_launch_that_waited_for_a_general_token_spaces_the_next_launch_from_its_send)."""
    from lambda_sdk import RateLimit

    clouds = mock_clouds_factory(providers=("lambda",), time_scale=TIME_SCALE)
    calls: list[tuple[str, str, int]] = []
    session = requests.Session()
    session.hooks["response"].append(lambda r, *a, **k: calls.append((r.request.method, r.request.path_url,
                                                                       r.status_code)))
    client = make_client(clouds, time_scale=TIME_SCALE, session=session, retry=PATIENT_RETRY,
                         rate_limit=RateLimit(1.1 * TIME_SCALE, 1.1 * 12.0 * TIME_SCALE))
    launching = threading.Event()
    launching.set()

    def read() -> None:
        while launching.is_set():
            client.instance_types()

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        assert _launch_burst(client, 5) == []
    finally:
        launching.clear()
        for t in readers:
            t.join(timeout=60)
    launched = [status for method, path, status in calls
                if path.endswith("/instance-operations/launch") and status == 200]
    assert len(launched) == 5
    assert sorted(i.name for i in client.list_instances()) == [f"burst-{n}" for n in range(5)]


def test_an_aborted_launch_is_never_sent_even_while_it_waits_for_its_slot(lambda_clouds, make_client) -> None:
    """With a real launch interval (12 s), a launch queued behind another waits; setting `abort` ends the wait
    at once with Aborted (a RequestNotSent) and nothing reaches Lambda: the account has only the first one."""
    from lambda_sdk import Aborted, RateLimit, RequestNotSent

    client = make_client(lambda_clouds, rate_limit=RateLimit(request_interval=0.0, launch_interval=12.0))
    abort = threading.Event()

    def launch(name: str) -> object:
        return client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                      ssh_key_names=["default"], name=name, abort=abort)

    launch("first")  # takes the slot; the next one is 12 s away
    raised: list[BaseException] = []
    queued = threading.Thread(target=lambda: raised.extend(_caught(lambda: launch("queued"))))
    queued.start()
    abort.set()
    queued.join(timeout=5)  # far less than the 12 s it would wait
    assert not queued.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], Aborted) and isinstance(raised[0], RequestNotSent)
    assert sorted(i.name for i in client.list_instances()) == ["first"]
    try:
        launch("after")  # abort is still set: not sent, and at once
    except Aborted:
        pass
    else:
        raise AssertionError("a launch with abort set was sent")
    assert sorted(i.name for i in client.list_instances()) == ["first"]


def _caught(call) -> list[BaseException]:
    try:
        call()
    except BaseException as exc:  # handed to the test's thread
        return [exc]
    return []


def test_back_to_back_calls_within_the_burst_go_at_once_without_429(mock_clouds_factory, make_client) -> None:
    """Lambda's "generally one request per second" (spec 1.10 info) is an average: gpuhunt reads GET /images
    then GET /instance-types (gpuhunt providers/lambdalabs.py:37-39) and dstack's create sends three calls in a
    row (backends/lambdalabs/compute.py:65-69), both without 429 handling (research real-clouds.md Part 2, D2).
    The client spends the same inferred burst (5) as the mock: at time scale 30 a token takes 45 s here, so five
    calls answered 200 with no 429 and no retry (one attempt) went out back to back."""
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=30.0)
    statuses: list[int] = []
    client = make_client(clouds, time_scale=30.0, session=_logged_session(statuses),
                         retry=RetryPolicy(max_attempts=1))
    list(client.list_images())
    client.instance_types()
    list(client.list_ssh_keys())
    list(client.list_regions())
    list(client.list_instances())
    assert statuses == [200] * 5


def test_two_unpaced_calls_as_gpuhunt_makes_them_both_succeed(mock_clouds_factory, make_client) -> None:
    """gpuhunt's catalog (GET /images, then GET /instance-types, no retry: gpuhunt providers/lambdalabs.py:37-39)
    is built this way against the live API, so the mock's default scenario must answer both (research
    real-clouds.md Part 2, D2: a burst of 1 answered the second with 429)."""
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=30.0)
    statuses: list[int] = []
    client = make_client(clouds, rate_limit=None, session=_logged_session(statuses),
                         retry=RetryPolicy(max_attempts=1))
    list(client.list_images())
    client.instance_types()
    assert statuses == [200, 200]
