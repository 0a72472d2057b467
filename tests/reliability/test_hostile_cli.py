"""Hostile command lines, property-based: every refusal is exit 2 (or the documented code) with an error line,
never a traceback or an internal error, and nothing changes in the clouds, the store or the config file.

The commands run in-process (`vm_core.cli.main.run`, what the `vm` script calls) so hypothesis can try hundreds
of them; values include text of every Unicode category, undecodable argv bytes (as Python decodes them: lone
surrogates), huge numbers and long strings. Fleet creates always carry --dry-run, so a valid one changes
nothing either.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from mock_clouds.scenario import load_scenario
from reliability_kit import sizes
from reliability_kit.home import PROVIDERS, VmHome
from reliability_kit.hostile import HOSTILE, OPTIONS, examples
from reliability_kit.inprocess import State, assert_clean_failure, vm
from vm_core.catalog import default_catalog
from vm_core.errors import UsageError
from vm_core.fleet.naming import check_fleet_name

STRATEGIES = ("spread", "cheapest", "reserved-first", "packed")
# Every region of the default scenario's clouds (random text is never one, but the filter makes sure).
KNOWN_REGIONS = {region for provider in load_scenario(None).providers.values() for region in provider.regions}


@pytest.fixture(scope="module")
def cli_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmHome]:
    """Running mock clouds and one real fleet (`keep`), which no refused command may touch."""
    home = VmHome(tmp_path_factory.mktemp("hostile-cli") / "home")
    home.start()
    home.ok("fleet", "create", "--gpu", "L40S", "--count", "1", "--name", "keep", "-q")
    yield home
    home.stop()


# ---------------------------------------------------------------------------------------------- validity oracles
def _int_in(value: str, low: int, high: int) -> bool:
    try:
        return low <= int(value) <= high
    except ValueError:
        return False


def _gpu_valid(value: str) -> bool:
    try:
        default_catalog().parse(value)
    except UsageError:
        return False
    return True


def _name_valid(value: str) -> bool:
    try:
        check_fleet_name(value)
    except UsageError:
        return False
    return True


def _timeout_valid(value: str) -> bool:
    try:
        number = float(value)
    except ValueError:
        return False
    return math.isfinite(number) and number > 0


def _providers_valid(value: str) -> bool:
    names = [n.strip() for n in value.split(",") if n.strip()]
    return bool(names) and all(n in PROVIDERS for n in names)


def _valid(option: str, value: str, count: str, strict: bool) -> bool:
    """Whether `vm fleet create` must accept this value."""
    checks: dict[str, Callable[[], bool | None]] = {
        "--gpu": lambda: _gpu_valid(value),
        "--count": lambda: _int_in(value, 1, 1000),
        "--min-count": lambda: _int_in(value, 1, int(count)) if _int_in(count, 1, 1000) else True,
        "--name": lambda: _name_valid(value),
        "--strategy": lambda: value in STRATEGIES,
        "--providers": lambda: _providers_valid(value),
        "--timeout": lambda: _timeout_valid(value),
        "--region": lambda: False,  # only hostile regions are drawn (test_region_must_sell_the_gpu: real ones)
        "--reservation": lambda: bool(value.strip()) and not (strict and value.strip().lower() == "none"),
    }
    return checks[option]()


# ---------------------------------------------------------------------------------------------- strategies
@st.composite
def create_lines(draw: st.DrawFn) -> tuple[list[str], bool]:
    """(argv of a `vm fleet create --dry-run`, whether it must be accepted). Each option is absent, valid or
    hostile; at least one is hostile."""
    values = {"--gpu": "H100", "--count": "2", "--name": "fuzzed"}
    for option in OPTIONS:
        if draw(st.booleans()) or option in values:
            values[option] = draw(HOSTILE.filter(_no_region) if option == "--region" else
                                  st.one_of(HOSTILE, _valid_value(option)))
    forced = draw(st.sampled_from(OPTIONS))
    values[forced] = draw(HOSTILE.filter(_no_region) if forced == "--region" else HOSTILE)
    strict = draw(st.booleans())
    accepted = all(_valid(option, value, values["--count"], strict) for option, value in values.items())
    argv = ["fleet", "create", "--dry-run", "-q"] + [part for item in values.items() for part in item]
    return argv + (["--strict"] if strict else []), accepted


def _valid_value(option: str) -> st.SearchStrategy[str]:
    return {
        "--gpu": st.sampled_from(["H100", "H100:8", "L40S", "A100", "h200"]),
        "--count": st.integers(1, 12).map(str),
        "--min-count": st.just("1"),
        "--name": st.from_regex(r"\A[a-z][a-z0-9]{0,10}\Z"),
        "--strategy": st.sampled_from(STRATEGIES),
        "--providers": st.sampled_from(["crusoe", "lambda,nebius", "crusoe,lambda,nebius"]),
        "--timeout": st.sampled_from(["1", "60.5", "1800"]),
        "--reservation": st.sampled_from(["auto", "none", "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"]),
    }[option]


COMMANDS = [["list"], ["get"], ["offers"], ["providers"], ["config", "show"], ["fleet", "list"],
            ["fleet", "status"], ["fleet", "destroy"], ["fleet", "reconcile"], ["destroy"], ["stop"], ["start"],
            ["reboot"], ["completion"], ["fleet", "create", "--dry-run"], ["fleet"], ["config"], []]
VOCABULARY = st.sampled_from(["--provider", "-p", "crusoe", "lambda", "nebius", "aws", "--gpu", "H100", "--count",
                              "-n", "--name", "-o", "json", "table", "yaml", "-q", "--debug", "--profile", "local",
                              "--timeout", "--no-wait", "--region", "--reservation", "--strict", "--raw", "--hard",
                              "--help", "-V", "keep", "bash", "--output=json", "-ojson", "--"])


# ---------------------------------------------------------------------------------------------- properties
def check_create_lines(home: VmHome, count: int) -> None:
    @examples(count)
    @given(create_lines())
    def check(line: tuple[list[str], bool]) -> None:
        argv, accepted = line
        before = State.of(home)
        result = vm(home, argv)
        assert_clean_failure(result, {0} if accepted else {2})
        assert State.of(home) == before

    check()


def check_fleet_names(home: VmHome, count: int) -> None:
    @examples(count)
    @given(st.sampled_from(["status", "destroy", "reconcile"]), HOSTILE)
    def check(command: str, name: str) -> None:
        assume(name not in ("keep", "-h", "--help"))
        before = State.of(home)
        result = vm(home, ["fleet", command, name])
        assert_clean_failure(result, _fleet_name_exits(command, name))
        if result.code == 0:
            assert "nothing to destroy" in result.err, result.err
        assert State.of(home) == before

    check()


def _fleet_name_exits(command: str, name: str) -> set[int]:
    """The exits of `vm fleet COMMAND NAME` for a name that is no fleet: destroying a fleet that is not there is
    idempotent (0, with a note) for any name a fleet can have, a usage error (2) for one no fleet can have;
    status and reconcile say not found (3) or refuse the name (2)."""
    if command == "destroy":
        return {0} if _name_valid(name) else {2}
    return {2, 3}


def check_any_line(home: VmHome, count: int) -> None:
    @examples(count)
    @given(st.sampled_from(COMMANDS), st.lists(st.one_of(VOCABULARY, HOSTILE), max_size=8))
    def check(command: list[str], tokens: list[str]) -> None:
        before = State.of(home)
        result = vm(home, command + tokens)
        assert_clean_failure(result, {0, 2, 3, 4, 5, 6, 7, 8, 9})
        assert State.of(home) == before

    check()


def test_hostile_fleet_create_fast(cli_home: VmHome, figures) -> None:
    check_create_lines(cli_home, sizes.FAST.cli_examples)
    figures.add("hostile command lines", sizes.FAST.cli_examples)


def test_hostile_fleet_names_fast(cli_home: VmHome, figures) -> None:
    check_fleet_names(cli_home, sizes.FAST.cli_examples)
    figures.add("hostile command lines", sizes.FAST.cli_examples)


def test_hostile_command_lines_fast(cli_home: VmHome, figures) -> None:
    check_any_line(cli_home, sizes.FAST.cli_examples)
    figures.add("hostile command lines", sizes.FAST.cli_examples)


@pytest.mark.soak
def test_hostile_command_lines_soak(cli_home: VmHome, figures) -> None:
    for check in (check_create_lines, check_fleet_names, check_any_line):
        check(cli_home, sizes.SOAK.cli_examples)
        figures.add("hostile command lines", sizes.SOAK.cli_examples)


# ---------------------------------------------------------------------------------------------- CLI defects found
# Each was found by this suite (an internal error, or a bad value silently accepted) and fixed in the code.
def test_gpu_count_in_other_digits_is_a_usage_error(cli_home: VmHome) -> None:
    for gpu in ("H100:²", "H100:①", "H100:٨"):
        assert_clean_failure(vm(cli_home, ["fleet", "create", "--gpu", gpu, "--count", "1", "--dry-run"]), {2})


def test_timeouts_that_are_not_finite_are_usage_errors(cli_home: VmHome) -> None:
    for timeout in ("nan", "inf", "-inf", "1e999"):
        result = vm(cli_home, ["fleet", "create", "--gpu", "H100", "--count", "1", "--timeout", timeout, "--dry-run"])
        assert_clean_failure(result, {2})


def test_region_must_sell_the_gpu(cli_home: VmHome) -> None:
    """A region where no provider sells the GPU is refused before anything is recorded, by a real create and by
    its dry run alike; a region that sells it is where the plan puts the VMs."""
    before = State.of(cli_home)
    names = ("typo-a", "typo-b", "typo-c")
    try:
        for name, region in zip(names, ("nowhere", "", "us-south-2"), strict=True):
            for dry in ([], ["--dry-run"]):
                result = vm(cli_home, ["fleet", "create", "--gpu", "L40S", "--count", "1", "--region", region,
                                       "--name", name, "-q", *dry])
                assert_clean_failure(result, {2})
        assert State.of(cli_home) == before
    finally:
        for name in names:
            vm(cli_home, ["fleet", "destroy", name, "-q"])
    plan = vm(cli_home, ["fleet", "create", "--gpu", "L40S", "--count", "2", "--region", "eu-north1", "--dry-run",
                         "-o", "json"])
    assert plan.code == 0 and {p["region"] for p in plan.json()["placements"]} == {"eu-north1"}


def _no_region(value: str) -> bool:
    return value not in KNOWN_REGIONS
