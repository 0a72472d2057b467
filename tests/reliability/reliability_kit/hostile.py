"""Hypothesis building blocks shared by the hostile-input tests: argument text of every kind, and settings."""

from __future__ import annotations

import os
from collections.abc import Callable

from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st

from . import sizes

TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40)
UNDECODABLE = st.binary(min_size=1, max_size=16).filter(lambda b: b"\x00" not in b).map(os.fsdecode)
LONG = st.integers(200, 20000).map(lambda n: "x" * n)
SPECIAL = st.sampled_from(["", " ", "-", "--", "--count", "-o", "--help", "nan", "inf", "-1", "0", "1e999", "0x10",
                           "../../etc/passwd", "$(reboot)", "; rm -rf /", "H100:", ":8", "H100:0", "H100:65",
                           "%s%n", "\u202e", "H100:٨", "١٢", "1_0", " 3 ", "crusoe,,aws", "lambda, lambda"])
HOSTILE = st.one_of(TEXT, UNDECODABLE, LONG, SPECIAL, st.integers().map(str), st.floats().map(str))
OPTIONS = ("--gpu", "--count", "--min-count", "--name", "--strategy", "--providers", "--timeout", "--region",
           "--reservation")


def examples(count: int) -> Callable[..., object]:
    """Hypothesis settings of this suite: a bounded number of examples, no deadline, the run's seed."""
    def apply(test: Callable[..., object]) -> Callable[..., object]:
        return seed(sizes.seed())(settings(max_examples=count, deadline=None, database=None, suppress_health_check=[
            HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])(test))
    return apply
