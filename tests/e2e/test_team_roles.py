"""Team mode with two real PostgreSQL roles, through the real `vm` executable: the owner role (alice) creates the
store's tables, a user role (bob) without grants is told, as a configuration error (exit 4), which grants he needs
and the psql command that gives them; `vm list` still lists the VMs with a warning; once that command has run, bob
uses the team's fleets. A role that may not create tables opening an empty database is told that only the owner
creates them. The clouds' inventory is the ground truth."""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
from dataclasses import dataclass
from typing import Any

import pytest

from .conftest import VmHome

_roles = itertools.count(1)
TABLES = "fleets, members, leases, schema_version, ledger_vms, ledger_intervals, events, deliveries"


@dataclass(frozen=True)
class Roles:
    """alice, a plain role owning a fresh database, and bob, a plain role with no grants; `url(role)` is the
    store URL of a role."""

    alice: str
    bob: str
    base: str

    def url(self, role: str) -> str:
        return self.base.format(role)

    def env(self, role: str) -> dict[str, str]:
        return {"VM_STORE_URL": self.url(role)}


@pytest.fixture
def roles(postgres_cluster: Any) -> Roles:
    import psycopg

    n = f"{os.getpid()}_{next(_roles)}"
    alice, bob, database = f"alice_{n}", f"bob_{n}", f"team_{n}"
    with psycopg.connect(postgres_cluster.url(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {alice} LOGIN")
        admin.execute(f"CREATE ROLE {bob} LOGIN")
        admin.execute(f"CREATE DATABASE {database} OWNER {alice}")
    return Roles(alice, bob, f"postgresql://{{}}@127.0.0.1:{postgres_cluster.port}/{database}")


def tables_of(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]


def hint_of(err: str) -> str:
    return next(line.removeprefix("hint: ") for line in err.splitlines() if line.startswith("hint: "))


def run_psql_hint(hint: str) -> None:
    """Run the psql command line the hint gives, as printed (psql from PATH, else the cluster's binaries)."""
    import subprocess

    import pgcluster

    argv = shlex.split(hint.split("run: ", 1)[1])
    assert argv[0] == "psql", hint
    argv[0] = shutil.which("psql") or str(pgcluster.BIN / "psql")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "GRANT" in done.stdout, done.stderr


def test_a_user_role_without_grants_is_told_the_grants_and_lists_vms_with_a_warning(
        fresh_home: VmHome, roles: Roles) -> None:
    vm = fresh_home
    alice, bob = roles.env(roles.alice), roles.env(roles.bob)

    early = vm("fleet", "list", env=bob)  # an empty database: bob may not create the tables
    assert early.code == 4 and early.out == "", early.err
    assert "only the store's owner role" in early.err and "creates and migrates its tables" in early.err
    owner_url = roles.url(roles.alice)
    assert hint_of(early.err) == f"run `vm fleet list` once as {roles.alice}, with VM_STORE_URL={owner_url}"
    assert tables_of(roles.url(roles.alice)) == []  # bob's attempt created nothing

    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--name", "alices", "--providers", "crusoe",
                 "-o", "json", env=alice).json()
    assert sorted(tables_of(roles.url(roles.alice))) == sorted(TABLES.split(", "))

    refused = vm("fleet", "list", "-o", "json", env=bob)
    assert refused.code == 4 and refused.out == "", refused.err
    error = refused.error()
    assert error["code"] == "config" and "internal error" not in error["message"], error
    assert f"refuses role {roles.bob}" in error["message"], error
    assert f"SELECT, INSERT, UPDATE, DELETE on its tables {TABLES}" in error["message"], error
    assert "Traceback" not in refused.err

    listed = vm("list", "-o", "json", env=bob)  # the VMs still, without their fleet names
    assert listed.code == 0, listed.err
    assert made["members"][0]["id"] in {i["id"] for i in listed.json()}
    assert "fleet names not shown" in listed.err and "refuses role" in listed.err

    plain = vm("fleet", "list", env=bob)
    run_psql_hint(hint_of(plain.err))  # the owner runs the hint, as printed
    shared = vm.ok("fleet", "list", "-o", "json", env=bob).json()
    assert [f["name"] for f in shared] == ["alices"]
    mine = vm.ok("list", "--fleet", "alices", "-o", "json", env=bob).json()
    assert [i["id"] for i in mine] == [made["members"][0]["id"]]
    vm.ok("fleet", "destroy", "alices", env=bob)  # bob's grants suffice to change the team's fleets
    assert [i for i in vm.inventory() if i["name"].startswith("alices--") and i["state"] != "terminated"] == []
