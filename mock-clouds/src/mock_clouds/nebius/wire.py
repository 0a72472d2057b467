"""Strict decoding of request bytes.

betterproto2's parser is lenient: it accepts truncated fields, unknown wire types and wire types that do not
match the declared field type (a varint where a message is expected becomes an int). A real protobuf runtime
rejects those, so the mock validates the wire structure against the message schema first and answers
INVALID_ARGUMENT for anything malformed. Unknown field numbers are allowed, as in protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import betterproto2

from . import errors
from ._pb.google.rpc import Status

M = TypeVar("M", bound=betterproto2.Message)


def meta_of(cls: type[betterproto2.Message]) -> betterproto2.ProtoClassMetadata:
    """betterproto2's field metadata of a message class."""
    # betterproto2 types its classproperty for `type[Self]`, which mypy resolves to type[Never] here.
    return cls._betterproto  # type: ignore[arg-type]

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_MAX_DEPTH = 64


class WireError(ValueError):
    """The request bytes do not decode as the method's message (answered INVALID_ARGUMENT)."""


def decode(cls: type[M], data: bytes) -> M:
    """Parse `data` as `cls`, or raise ApiError(INVALID_ARGUMENT) if it is not a valid encoding."""
    try:
        check(cls, data)
        return cls.FromString(data)
    except Exception as exc:  # the parser may fail in many ways on hostile input
        raise errors.bad_request([("", f"request is not a valid {cls.__name__}: {exc}")]) from None


def check(cls: type[betterproto2.Message], data: bytes, depth: int = 0) -> None:
    """Raise WireError unless `data` is a well-formed encoding of `cls`."""
    if depth > _MAX_DEPTH:
        raise WireError("message nesting too deep")
    meta = meta_of(cls)
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        payload, pos = _field(data, pos, wire_type)
        name = meta.field_name_by_number.get(number)
        if name is not None:
            _check_field(cls, name, wire_type, payload, depth)


def _field(data: bytes, pos: int, wire_type: int) -> tuple[bytes, int]:
    """The payload of one field starting at `pos`, and the position after it."""
    if wire_type == _VARINT:
        start = pos
        _, pos = _varint(data, pos)
        return data[start:pos], pos
    if wire_type == _LEN:
        length, pos = _varint(data, pos)
        return _take(data, pos, length)
    if wire_type == _FIXED64:
        return _take(data, pos, 8)
    if wire_type == _FIXED32:
        return _take(data, pos, 4)
    raise WireError(f"unsupported wire type {wire_type}")


def _take(data: bytes, pos: int, length: int) -> tuple[bytes, int]:
    if pos + length > len(data):
        raise WireError("truncated field")
    return data[pos : pos + length], pos + length


def sole_message_field(data: bytes, number: int) -> bytes | None:
    """The payload of field `number` of a well-formed (`check`ed) encoding when it appears exactly once, length
    delimited; None when it is absent or repeated (protobuf merges repeats, so no one payload is the field)."""
    found: list[tuple[int, bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        payload, pos = _field(data, pos, key & 7)
        if key >> 3 == number:
            found.append((key & 7, payload))
    return found[0][1] if len(found) == 1 and found[0][0] == _LEN else None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(data):
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
    raise WireError("varint longer than 10 bytes")


def _check_field(
    cls: type[betterproto2.Message], name: str, wire_type: int, payload: bytes, depth: int
) -> None:
    meta = meta_of(cls).meta_by_field_name[name]
    proto_type = meta.proto_type
    if wire_type == _LEN and meta.repeated and proto_type in betterproto2.PACKED_TYPES:
        return _check_packed(proto_type, payload)
    if wire_type != _wire_type_of(proto_type):
        raise WireError(f"field {name}: wire type {wire_type} does not match {proto_type}")
    if proto_type == betterproto2.TYPE_STRING:
        payload.decode("utf-8")
    elif proto_type in (betterproto2.TYPE_MESSAGE, betterproto2.TYPE_MAP):
        nested = meta.unwrap() if meta.unwrap else meta_of(cls).cls_by_field[name]
        check(nested, payload, depth + 1)


def _check_packed(proto_type: str, payload: bytes) -> None:
    size = {_FIXED32: 4, _FIXED64: 8}.get(_wire_type_of(proto_type))
    if size is not None:
        if len(payload) % size:
            raise WireError("truncated packed field")
        return
    pos = 0
    while pos < len(payload):
        _, pos = _varint(payload, pos)


def _wire_type_of(proto_type: str) -> int:
    if proto_type in betterproto2.WIRE_VARINT_TYPES:
        return _VARINT
    if proto_type in betterproto2.WIRE_FIXED_32_TYPES:
        return _FIXED32
    if proto_type in betterproto2.WIRE_FIXED_64_TYPES:
        return _FIXED64
    return _LEN


# ------------------------------------------------------------------------------------------------ responses
# Speed only: responses made of instances that are already encoded (render.kept_or_unrendered) are framed here, not
# by betterproto2 message by message. An embedded message and a bytes field are the same on the wire, so each
# is byte for byte the response's encoding (mock-clouds/tests/test_nebius_wire_responses.py compares them).


@dataclass(frozen=True)
class Encoded:
    """A response message already encoded: `bytes()` of it is what goes on the wire."""

    data: bytes

    def __bytes__(self) -> bytes:
        return self.data


def list_instances_response(items: list[bytes], next_page_token: str) -> Encoded:
    """A `ListInstancesResponse`: `items` (1) are encoded Instances, then `next_page_token` (2) when set."""
    parts = [delimited(1, item) for item in items]
    if next_page_token:
        parts.append(delimited(2, next_page_token.encode()))
    return Encoded(b"".join(parts))


def batch_get_response(results: list[tuple[str, bytes | Status]]) -> Encoded:
    """A `BatchGetResponse`: its `items` map (1) as repeated entries of `key` (1) and a BatchGetResult `value`
    (2), whose oneof is an encoded Instance (`instance`, 1) or a `google.rpc.Status` (`error`, 2)."""
    parts = []
    for key, result in results:
        value = delimited(1, result) if isinstance(result, bytes) else delimited(2, bytes(result))
        parts.append(delimited(1, delimited(1, key.encode()) + delimited(2, value)))
    return Encoded(b"".join(parts))


def delimited(number: int, payload: bytes) -> bytes:
    """Field `number`, length-delimited (wire type 2), holding `payload`."""
    return _varint_bytes(number << 3 | _LEN) + _varint_bytes(len(payload)) + payload


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
