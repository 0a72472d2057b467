"""The X-ResetMask syntax: every form the official SDK writes, and refusals of malformed masks."""

from __future__ import annotations

import pytest
from mock_clouds.nebius.fieldmask import MaskSyntaxError, parse


@pytest.mark.parametrize(
    ("mask", "reset", "kept"),
    [
        ("spec.hostname, metadata.labels", ["spec.hostname", "metadata.labels.team"], ["spec.resources"]),
        ("spec.(a,b.(c,d))", ["spec.a", "spec.a.x", "spec.b.c", "spec.b.d"], ["spec.b", "spec.b.e", "spec"]),
        ("spec.network_interfaces.*.(name)", ["spec.network_interfaces.0.name"], ["spec.network_interfaces"]),
        ('metadata."labels"', ["metadata.labels"], ["metadata.name"]),
        ("spec,spec.hostname", ["spec.anything"], ["metadata"]),
        ("", [], ["spec"]),
    ],
)
def test_paths_named_by_a_mask(mask: str, reset: list[str], kept: list[str]) -> None:
    parsed = parse(mask)
    assert all(parsed.resets(path) for path in reset)
    assert not any(parsed.resets(path) for path in kept)


@pytest.mark.parametrize("mask", ["spec.(a", "spec.()", "spec..a", "spec.a)", "spec a", "spec.-x", ",spec"])
def test_malformed_masks_are_refused(mask: str) -> None:
    with pytest.raises(MaskSyntaxError, match="invalid X-ResetMask"):
        parse(mask)
