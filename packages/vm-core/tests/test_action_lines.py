"""A fleet command's line per VM says each thing once: the member's name, its verb, then why."""

from __future__ import annotations

from vm_core.fleet.members import Outcome
from vm_core.fleet.report import Action, Verb
from vm_core.fleet.store import MemberRecord, MemberState


def member(state: MemberState, error: str = "") -> MemberRecord:
    return MemberRecord("nf", 1, 0, "crusoe", "nf--abc-1", state=state, instance_id="i-1", error=error)


def test_a_detail_that_repeats_the_verb_is_not_printed() -> None:
    never = Outcome(member(MemberState.FAILED, "never created"), True).action
    assert never.line() == "crusoe: nf--abc-1 (i-1): never created"
    assert never.to_json()["detail"] is None
    assert Action(Verb.NEVER_CREATED, "crusoe", "x", detail="never created").line(dry_run=True) == \
        "crusoe: x: would mark never created"


def test_a_failure_names_the_member_once() -> None:
    failed = Outcome(member(MemberState.RUNNING), False, "Crusoe rate limit: 429").action
    assert failed.line() == "crusoe: nf--abc-1 (i-1): failed: Crusoe rate limit: 429"
