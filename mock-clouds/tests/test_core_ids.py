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
