"""Points Nebius's own Python SDK (pysdk, `nebius` on PyPI) at the mock: the one patch every Nebius driver needs.

pysdk resolves each service to `{service}.api.nebius.cloud:443` over TLS (its default resolver). The mock serves
every service on one plaintext port, so the SDK gets `resolver=Constant(target)` and the `INSECURE` address
option for that target, and nothing else changes: the credentials, the token exchange, every request and decode
are the client's. Only the standard library and pysdk are used (this runs in the client's venv).
"""

from __future__ import annotations

import functools
from typing import Any


def sdk_class_for_mock(target: str) -> Any:
    """Returns a drop-in for `nebius.sdk.SDK` that reaches `target` (host:port, plaintext)."""
    from nebius.base.options import INSECURE
    from nebius.base.resolver import Constant
    from nebius.sdk import SDK

    return functools.partial(SDK, resolver=Constant(target), address_options={target: [(INSECURE, True)]})


def patch_pysdk(target: str) -> Any:
    """Replaces `nebius.sdk.SDK` (as clients that import the module, like SkyPilot's adaptor, look it up)."""
    import nebius.sdk

    patched = sdk_class_for_mock(target)
    nebius.sdk.SDK = patched  # type: ignore[misc]
    return patched
