"""Hints are data in the core (vm_core.hints) and words only in the CLI (vm_core.cli.spelling); the default timeout
has one source (vm_core.calls.DEFAULT_TIMEOUT)."""

from __future__ import annotations

import inspect
import json

import click
import pytest
from vm_core.calls import DEFAULT_TIMEOUT
from vm_core.cli.main import cli
from vm_core.cli.output import JSON, TABLE, Output
from vm_core.cli.spelling import render, to_json
from vm_core.errors import UsageError, VmError
from vm_core.fleet.create import FleetCreator
from vm_core.fleet.destroy import FleetDestroyer
from vm_core.fleet.reconcile import FleetReconciler
from vm_core.hints import Command, Hint
from vm_core.session import CHECK_TIMEOUT

STATUS = Command.of("fleet", "status", "train")


def test_a_hint_that_is_a_command_prints_as_the_command() -> None:
    assert render(Hint.run("fleet", "scale", "train", "--count", 3)) == "vm fleet scale train --count 3"


def test_commands_in_prose_are_backticked_in_order() -> None:
    hint = Hint.say("see {}, then {} if it is gone", STATUS, Command.of("fleet", "forget", "train"))
    assert render(hint) == "see `vm fleet status train`, then `vm fleet forget train` if it is gone"


def test_commands_joined_by_and_print_as_a_shell_line() -> None:
    hint = Hint("{} && {}", (Command.of("stop", "i-1"), Command.of("start", "i-1")))
    assert render(hint) == "vm stop i-1 && vm start i-1"


def test_arguments_are_quoted_for_a_shell() -> None:
    assert render(Hint.run("get", "my vm", "--provider", "x;y")) == "vm get 'my vm' --provider 'x;y'"


def test_plain_text_is_kept_as_it_is() -> None:
    assert render(Hint("chmod 600 {}")) == "chmod 600 {}"
    assert VmError("x", suggestion="upgrade vm-core").suggestion == "upgrade vm-core"


def test_marks_and_commands_must_agree() -> None:
    with pytest.raises(ValueError, match="2 marks for 1 commands"):
        Hint("{} or {}", (STATUS,))


def test_json_gives_the_text_and_each_command_as_argv() -> None:
    assert to_json(Hint.say("see {}", STATUS)) == {"suggestion": "see `vm fleet status train`",
                                                   "next": [["vm", "fleet", "status", "train"]]}
    assert to_json(Hint("upgrade vm-core")) == {"suggestion": "upgrade vm-core"}
    assert to_json(None) == {}


def test_errors_print_their_hint_rendered(capsys) -> None:
    error = UsageError("taken", suggestion=Hint.say("see {}, or pick another name", STATUS))
    Output(TABLE).error(error)
    assert capsys.readouterr().err == "vm: error: taken\nhint: see `vm fleet status train`, or pick another name\n"
    Output(JSON).error(error, [("a", UsageError("bad", suggestion=Hint.run("fleet", "repair", "a")))])
    body = json.loads(capsys.readouterr().err)["error"]
    assert body["next"] == [["vm", "fleet", "status", "train"]]
    assert body["failures"][0]["suggestion"] == "vm fleet repair a"
    assert body["failures"][0]["next"] == [["vm", "fleet", "repair", "a"]]


def _timeouts(group: click.Group, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    found: dict[tuple[str, ...], object] = {}
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        if isinstance(command, click.Group):
            found |= _timeouts(command, (*path, name))
        elif command is not None:
            found |= {(*path, name): p.default for p in command.params if p.name == "timeout"}
    return found


def test_every_wait_defaults_to_the_one_default_timeout() -> None:
    defaults = _timeouts(cli)
    assert defaults.pop(("providers",)) == CHECK_TIMEOUT  # the credential checks, not a cloud action
    assert len(defaults) > 8 and set(defaults.values()) == {DEFAULT_TIMEOUT}, defaults
    for engine in (FleetCreator, FleetDestroyer, FleetReconciler):
        assert inspect.signature(engine).parameters["timeout"].default == DEFAULT_TIMEOUT


def test_a_bad_reservation_request_is_data_and_the_cli_words_it() -> None:
    from vm_core.cli import validate
    from vm_core.model import ReservationError, ReservationProblem, ReservationRequest

    with pytest.raises(ReservationError) as err:
        ReservationRequest.parse("none", strict=True)
    assert err.value.problem is ReservationProblem.STRICT_WITHOUT_RESERVATION
    with pytest.raises(UsageError, match="^--reservation needs auto, none or a reservation id$"):
        validate.reservation(" ", False)
    assert set(validate.RESERVATION_PROBLEMS) == set(ReservationProblem)


def test_settings_are_data_in_the_core_and_options_in_the_cli() -> None:
    """A Setting names an input of the command; the core reads it in words, the CLI spells it as its option."""
    from vm_core.cli.spelling import option, words
    from vm_core.hints import Setting, Words

    assert option(Setting("max_price", "4.00")) == "--max-price 4.00"
    assert option(Setting("allow_unterminable")) == "--allow-unterminable"
    reason = Words("reserved (", Setting("reservation", "none"), ")")
    assert reason == "reserved (reservation none)" and words(reason) == "reserved (--reservation none)"
    assert str(Setting("max_price", "4.00", plain="$4.00/h")) == "$4.00/h"
    hint = Hint.say("raise {}, or see {} for cheaper places", Setting("max_price"), Command.of("offers"))
    assert render(hint) == "raise --max-price, or see `vm offers` for cheaper places"
    assert to_json(hint)["next"] == [["vm", "offers"]] and not hint.is_command_line
    assert VmError("x", suggestion=Hint.say("drop {}", Setting("max_price"))).suggestion is None  # the CLI's to spell


def test_words_keep_their_settings_when_joined() -> None:
    from vm_core.cli.spelling import words
    from vm_core.hints import Setting, Words, joined, phrase

    strict = Words("on-demand (", Setting("strict"), ")")
    line = phrase("left out: ", joined("; ", ["no capacity: 1", phrase(strict, ": 2")]))
    assert isinstance(line, Words) and line == "left out: no capacity: 1; on-demand (strict): 2"
    assert words(line) == "left out: no capacity: 1; on-demand (--strict): 2"
    assert phrase("a", "b") == "ab" and not isinstance(phrase("a", "b"), Words)
    assert joined(", ", ["a", "b"]) == "a, b"


def test_errors_and_notes_print_their_settings_as_options(capsys) -> None:
    from vm_core.errors import BudgetError
    from vm_core.hints import Setting, Words

    error = BudgetError(Words("above the cap ", Setting("max_price", "0.50", plain="of $0.50/h")))
    assert error.message == "above the cap of $0.50/h"
    out = Output(TABLE)
    out.error(error)
    out.progress(Words("skipped (", Setting("strict"), ")"))
    assert capsys.readouterr().err == "vm: error: above the cap --max-price 0.50\nskipped (--strict)\n"
    Output(JSON).error(error, [("a", error)])
    body = json.loads(capsys.readouterr().err)["error"]
    assert body["message"] == body["failures"][0]["message"] == "above the cap --max-price 0.50"
