"""`vm events` and webhook notifications through the real executable, against the mock clouds: the fleet verbs
record their events, a webhook on 127.0.0.1 (tests/webhook_receiver.py) gets each one once with a valid
signature while the commands run, `vm events -o json` prints the documented JSONL, `--follow` prints new events
as they are recorded and stops on a real SIGINT with exit 130, and neither the webhook's URL nor its secret ever
shows in any output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from vm_core.events import delivery
from vm_core.events.signing import verify
from vm_core.events.webhooks import Webhook
from vm_core.fleet.location import store_at
from webhook_receiver import Receiver

if TYPE_CHECKING:
    from conftest import Run, VmHome

VM = str(Path(sys.executable).parent / "vm")
SECRET = "e2e-webhook-signing-secret"
KEYS = {"seq", "id", "at", "actor", "kind", "fleet", "provider", "instance_id", "details", "text"}
DEADLINE = 120.0  # seconds to wait for something that must happen; never a pass condition


def config(url: str, events: str = "") -> str:
    return f"""
default_profile = "local"
[profiles.local]
embedded = true
[[profiles.local.notify]]
url = "{url}"
secret = "{SECRET}"
{events}
"""


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture(scope="module")
def home(shared_home: VmHome, receiver: Receiver) -> VmHome:
    shared_home.config(config(receiver.url))
    return shared_home


def lines(run: Run) -> list[dict[str, object]]:
    return [json.loads(line) for line in run.out.splitlines()]


def clean(vm: VmHome, *runs: Run, url: str) -> None:
    """No output of `runs` shows the webhook's secret or URL, nor a cloud credential."""
    for run in runs:
        for secret in [SECRET, url, url.split("?")[1], *vm.secrets()]:
            assert secret not in run.out and secret not in run.err, run.err


def test_fleet_verbs_record_their_events_and_the_webhook_gets_each_once(home: VmHome, receiver: Receiver) -> None:
    vm = home
    runs = [vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "ev1", "--providers", "nebius"),
            vm.ok("fleet", "scale", "ev1", "--count", "3"),
            vm.ok("fleet", "destroy", "ev1", "--yes")]
    shown = vm.ok("events", "--fleet", "ev1", "-o", "json")
    events = lines(shown)
    assert [e["kind"] for e in events] == ["created", "scaled", "destroyed"]
    assert all(set(e) == KEYS for e in events) and [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    created, scaled, destroyed = events
    assert created["details"]["running"] == 2 and created["details"]["state"] == "active"
    assert scaled["details"]["from"] == 2 and scaled["details"]["to"] == 3
    assert destroyed["details"]["destroyed"] == 3 and str(destroyed["at"]).endswith("Z")
    assert all("@" in str(e["actor"]) and e["fleet"] == "ev1" for e in events)
    # delivered while each command ran: once each, signed, the body the JSON line without its seq
    mine = [(h, b) for h, b in receiver.accepted() if json.loads(b)["fleet"] == "ev1"]
    assert [json.loads(b)["id"] for _, b in mine] == [e["id"] for e in events]
    for (headers, body), event in zip(mine, events, strict=True):
        assert verify(SECRET, headers, body, now=time.time())
        assert json.loads(body) == {k: v for k, v in event.items() if k != "seq"}
    clean(vm, *runs, shown, url=receiver.url)


def test_the_table_the_filters_and_bad_input(home: VmHome, receiver: Receiver) -> None:
    vm = home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "ev2", "--providers", "nebius")
    table = vm.ok("events", "--fleet", "ev2")
    assert table.out.splitlines()[0].split() == ["AT", "KIND", "WHAT"]
    row = table.out.splitlines()[1]
    assert row.split()[1] == "created" and "fleet ev2 created: 1 of 1 VMs running (by " in row
    assert lines(vm.ok("events", "--fleet", "ev2", "--since", "1h", "-o", "json"))[0]["kind"] == "created"
    assert vm.ok("events", "--fleet", "ev2", "--since", "2999-01-01", "-o", "json").out == ""
    assert vm.ok("events", "--fleet", "no-such-fleet", "-o", "json").out == ""
    bad = vm("events", "--since", "yesterday")
    assert bad.code == 2 and "--since 'yesterday' is neither a date/time" in bad.err and bad.out == ""
    vm.ok("fleet", "destroy", "ev2", "--yes")
    clean(vm, table, bad, url=receiver.url)


def test_follow_prints_new_events_and_a_sigint_ends_it_with_130(home: VmHome) -> None:
    vm = home
    vm.ok("fleet", "list")  # the mock clouds run before the follower starts (not in its process group)
    follower = subprocess.Popen([VM, "events", "--follow", "--fleet", "ev3", "-o", "json"], env=vm.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    try:
        vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "ev3", "--providers", "nebius")
        assert follower.stdout is not None
        line = follower.stdout.readline()  # printed within a poll interval of the create's end
        assert json.loads(line)["kind"] == "created" and json.loads(line)["fleet"] == "ev3"
        assert follower.poll() is None  # still following
    finally:
        os.killpg(follower.pid, signal.SIGINT)  # what Ctrl-C on a terminal does: the whole foreground group
        _, err = follower.communicate(timeout=DEADLINE)
    assert follower.returncode == 130, err
    assert "stopped following events; nothing was changed" in err and "Traceback" not in err
    vm.ok("fleet", "destroy", "ev3", "--yes")


def test_only_the_kinds_a_webhook_asks_for_are_sent(fresh_home: VmHome) -> None:
    vm = fresh_home
    with Receiver() as only_destroyed:
        vm.config(config(only_destroyed.url, 'events = ["destroyed"]'))
        vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "ev4", "--providers", "nebius")
        vm.ok("fleet", "destroy", "ev4", "--yes")
    assert [json.loads(b)["kind"] for _, b in only_destroyed.accepted()] == ["destroyed"]
    assert [e["kind"] for e in lines(vm.ok("events", "-o", "json"))] == ["created", "destroyed"]


def test_a_receiver_failing_three_times_gets_the_event_once_after_the_command(fresh_home: VmHome) -> None:
    vm = fresh_home
    with Receiver(failures=3) as flaky:
        vm.config(config(flaky.url))
        made = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "ev5", "--providers", "nebius")
        assert made.code == 0 and "1 webhook delivery(ies) did not succeed (HTTP 500)" in made.err, made.err
        store = store_at(vm.env.get("VM_STORE_URL"), vm.path)  # what the watchdog does next, round by round
        (event,) = store.list_events(fleet="ev5")
        hook = Webhook(flaky.url, SECRET)
        (pending,) = store.deliveries(event.id)  # the command's one attempt failed: due again a second later
        assert (pending.attempts, pending.last_error) == (1, "HTTP 500")
        due = pending.next_attempt_at
        rounds = [delivery.deliver_pending(store, [hook], now=due + offset) for offset in (0, 2, 6, 60)]
    assert [len(r.delivered) for r in rounds] == [0, 0, 1, 0]
    assert [status for _, _, status in flaky.requests] == [500, 500, 500, 200] and flaky.seen() == [event.id]
    clean(vm, made, url=flaky.url)


@pytest.mark.parametrize(("table", "says"), [
    ('[profiles.local.notify]\nurl = "https://h.example/x"\nsecret = "s3cr3t-value"',
     "must be an array of tables"),
    ('[[profiles.local.notify]]\nurl = "ftp://h.example/hook-path-secret"\nsecret = "s3cr3t-value"',
     "url must be an http:// or https:// URL"),
    ('[[profiles.local.notify]]\nurl = "https://h.example/hook-path-secret"', "secret must be a non-empty string"),
    ('[[profiles.local.notify]]\nurl = "https://h.example/hook-path-secret"\nsecret = "s3cr3t-value"\n'
     'events = ["created", "exploded"]', "unknown event kind(s) exploded"),
    ('[[profiles.local.notify]]\nurl = "https://h.example/hook-path-secret"\nsecret = "s3cr3t-value"\nretries = 3',
     "unknown key(s) retries"),
])
def test_a_malformed_notify_table_is_a_config_error_that_repeats_no_secret(fresh_home: VmHome, table: str,
                                                                          says: str) -> None:
    vm = fresh_home
    vm.config(f'default_profile = "local"\n[profiles.local]\nembedded = true\n{table}\n')
    for args in (["events"], ["fleet", "create", "--gpu", "H100", "--count", "1", "--name", "nope"]):
        failed = vm(*args)
        assert failed.code == 4 and says in failed.err, failed.err
        assert "s3cr3t-value" not in failed.err and "hook-path-secret" not in failed.err
    assert not (vm.path / "vm.db").exists()  # nothing recorded
