"""What the Nebius front end keeps in the core records' `native` dicts (persisted with the world)."""

from __future__ import annotations

import base64
import functools
from typing import Any

import betterproto2
import msgspec

from ..core.models import VM, Operation
from ._pb.google.protobuf import Any as AnyMessage
from ._pb.message_pool import default_message_pool
from ._pb.nebius.compute import v1 as compute


def _resolve_type_hints_once() -> None:
    """Speed only: betterproto2 resolves a message class's type hints (typing.get_type_hints, which compiles each
    annotation) on every `to_dict` and `from_dict`, and for every nested message: half of the CPU time of a
    Create here (proto-JSON of the spec). A class's hints do not change once its module is loaded, so they are
    resolved once per class (a failed resolution is not kept). A betterproto2 without that classmethod is left
    as it is: the mock is then slower, never wrong."""
    method = betterproto2.Message.__dict__.get("_type_hints")
    if isinstance(method, classmethod) and not hasattr(method.__func__, "cache_info"):
        resolved: Any = functools.cache(method.__func__)
        setattr(betterproto2.Message, "_type_hints", classmethod(resolved))  # noqa: B010 - replaces a method


def _cache_name_casing() -> None:
    """Speed only: betterproto2 turns every field name from snake case to camel case (`to_dict`) and back
    (`from_dict`) with regular expressions, on every call and for every field: most of what remains of a
    Create's proto-JSON. Those are pure functions of the name, so each name is converted once. A betterproto2
    without them is left as it is."""
    for name in ("camel_case", "snake_case", "safe_snake_case"):
        function = getattr(betterproto2, name, None)
        if callable(function) and not hasattr(function, "cache_info"):
            setattr(betterproto2, name, functools.cache(function))


_resolve_type_hints_once()
_cache_name_casing()


class InstanceRecord(msgspec.Struct, kw_only=True):
    spec: dict[str, Any] = {}  # InstanceSpec in proto-JSON form
    labels: dict[str, str] = {}
    resource_version: int = 1
    starts: int = 0  # completed Start calls: a dynamic public IP changes on every start

    def instance_spec(self) -> compute.InstanceSpec:
        return compute.InstanceSpec.from_dict(self.spec)

    @classmethod
    def of(cls, vm: VM) -> InstanceRecord:
        return msgspec.convert(vm.native, cls)

    def save(self, vm: VM) -> None:
        vm.native.update(msgspec.to_builtins(self))


class OperationRecord(msgspec.Struct, kw_only=True):
    request_type_url: str = ""
    request: str = ""  # base64 of the request message that started the operation
    request_headers: dict[str, list[str]] = {}
    request_id: str = ""
    preset: str = ""  # what a NotEnoughResources violation names as requested
    quota: str = ""
    quota_limit: int = 0
    quota_requested: int = 0
    aborted_by: str = ""

    @classmethod
    def of(cls, op: Operation) -> OperationRecord:
        return msgspec.convert(op.native, cls)

    def save(self, op: Operation) -> None:
        op.native.update(msgspec.to_builtins(self))

    def request_any(self) -> AnyMessage | None:
        if not self.request_type_url:
            return None
        return AnyMessage(type_url=self.request_type_url, value=base64.b64decode(self.request))

    @staticmethod
    def packed(message: betterproto2.Message, encoded: bytes = b"") -> dict[str, str]:
        """The fields that record `message` as an Operation's request; `encoded`, when given, is its encoding
        as received (not encoded again)."""
        type_url = default_message_pool.type_to_url[type(message)]
        return {"request_type_url": type_url, "request": base64.b64encode(encoded or bytes(message)).decode()}
