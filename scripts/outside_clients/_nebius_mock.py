"""Points Nebius's own Python SDK (pysdk, `nebius` on PyPI) at the mock: the one patch every Nebius driver needs.

pysdk resolves each service to `{service}.api.nebius.cloud:443` over TLS (its default resolver). The mock serves
every service on one port, so the SDK gets `resolver=Constant(target)`; plaintext, it also gets the `INSECURE`
address option for that target; with TLS (`mock-clouds serve --tls`), channel credentials trusting the mock's CA
(pysdk trusts the system bundle only, `nebius/base/tls_certificates.py`, where a user would install the CA).
Nothing else changes: the credentials, the token exchange, every request and decode are the client's. Only the
standard library, grpcio and pysdk are used (this runs in the client's venv).
"""

from __future__ import annotations

import functools
from typing import Any


def sdk_class_for_mock(target: str, ca_file: str = "") -> Any:
    """Returns a drop-in for `nebius.sdk.SDK` that reaches `target` (host:port): plaintext, or TLS trusting
    `ca_file` when one is given."""
    from nebius.base.options import INSECURE
    from nebius.base.resolver import Constant
    from nebius.sdk import SDK

    if ca_file:
        import grpc

        with open(ca_file, "rb") as f:
            tls = grpc.ssl_channel_credentials(root_certificates=f.read())
        return functools.partial(SDK, resolver=Constant(target), tls_credentials=tls)
    return functools.partial(SDK, resolver=Constant(target), address_options={target: [(INSECURE, True)]})


def patch_pysdk(target: str, ca_file: str = "") -> Any:
    """Replaces `nebius.sdk.SDK` (as clients that import the module, like SkyPilot's adaptor, look it up)."""
    import nebius.sdk

    patched = sdk_class_for_mock(target, ca_file)
    nebius.sdk.SDK = patched  # type: ignore[misc]
    return patched
