"""Identifiers: each cloud's shape, and never the same one twice (also across a fork)."""

from __future__ import annotations

import os
import re

from mock_clouds.core import ids

NEBIUS_ID = re.compile(r"computeinstance-e00[0-9a-z]{15}")


def test_nebius_ids_have_the_real_shape_and_do_not_repeat() -> None:
    made = [ids.vm_id("nebius") for _ in range(2000)]
    assert all(NEBIUS_ID.fullmatch(i) for i in made)
    assert len(set(made)) == len(made)
    assert re.fullmatch(r"computeoperation-e00[0-9a-z]{15}", ids.operation_id("nebius"))
    assert {c for i in made for c in i[-15:]} == set("0123456789abcdefghijklmnopqrstuvwxyz")  # every digit drawn


def test_a_forked_child_draws_other_ids_than_its_parent() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first ids, to the parent
        os.close(read)
        os.write(write, " ".join(ids.vm_id("nebius") for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [ids.vm_id("nebius") for _ in range(5)]
    assert len(child) == 5 and not set(child) & set(parent)


def test_uuids_are_version_4_and_the_other_clouds_ids_keep_their_shapes() -> None:
    made = [ids.random_uuid() for _ in range(1000)]
    assert len(set(made)) == len(made) and {u.version for u in made} == {4}
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", ids.vm_id("crusoe"))
    assert re.fullmatch(r"[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}",
                        ids.operation_id("crusoe"))
    assert re.fullmatch(r"[0-9a-f]{32}", ids.vm_id("lambda")) and len(ids.random_bytes(5)) == 5
