"""Update semantics: full replace, where default values keep the current value unless reset (research §7).

"Fields with default values are ignored unless named in X-ResetMask; lists and maps are replaced wholesale."
Sub-messages are merged field by field; setting one member of a oneof clears the others.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypeVar, cast

import betterproto2

from . import validate
from ._pb.nebius.compute import v1 as compute
from .fieldmask import Mask
from .validate import Violation
from .wire import meta_of

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

M = TypeVar("M", bound=betterproto2.Message)

# IMMUTABLE fields of InstanceSpec (research §4).
_IMMUTABLE: tuple[tuple[str, str], ...] = (
    ("spec.resources.platform", "resources.platform"),
    ("spec.service_account_id", "service_account_id"),
    ("spec.gpu_cluster", "gpu_cluster"),
    ("spec.recovery_policy", "recovery_policy"),
    ("spec.preemptible", "preemptible"),
)


def merge(current: M, update: betterproto2.Message, mask: Mask, path: str) -> M:
    """`update` applied onto a copy of `current` under the reset mask `mask`."""
    result = current.__class__.FromString(bytes(current))
    meta = meta_of(type(update))
    # every generated message class is a dataclass (betterproto2 declares Message itself as a plain class)
    for field in dataclasses.fields(cast("DataclassInstance", update)):
        field_path = f"{path}.{field.name}"
        value = getattr(update, field.name)
        if _is_default(value) and not mask.resets(field_path):
            continue
        old = getattr(result, field.name)
        both_messages = isinstance(value, betterproto2.Message) and isinstance(old, betterproto2.Message)
        if both_messages and not mask.resets(field_path):
            value = merge(old, value, mask, field_path)
        group = meta.meta_by_field_name[field.name].group
        if group is not None and value is not None:
            for sibling in meta.oneof_field_by_group[group]:
                setattr(result, sibling.name, None)
        setattr(result, field.name, value)
    return result


def _is_default(value: object) -> bool:
    return value is None or (not isinstance(value, betterproto2.Message) and not value)


def immutable_changes(old: compute.InstanceSpec, new: compute.InstanceSpec) -> list[Violation]:
    """Changed IMMUTABLE fields; a preemptible VM also cannot become a regular one or vice versa, whether
    through `preemptible` or the `pricing_model` oneof."""
    changed = [
        (path, "field is immutable")
        for path, attr in _IMMUTABLE
        if _fingerprint(old, attr) != _fingerprint(new, attr)
    ]
    if not changed and validate.is_preemptible(old) != validate.is_preemptible(new):
        changed.append(("spec.pricing_model", "a preemptible instance cannot become regular or vice versa"))
    return changed


def _fingerprint(spec: compute.InstanceSpec, attr: str) -> object:
    value: object = spec
    for part in attr.split("."):
        value = getattr(value, part, None) if value is not None else None
    return bytes(value) if isinstance(value, betterproto2.Message) else value
