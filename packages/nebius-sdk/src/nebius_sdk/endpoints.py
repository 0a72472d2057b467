"""Where each Nebius service is, given the API domain, resolved as nebius pysdk does (`base/resolver.py`).

A service's address is `<api service name>.<domain>`: the domain is `api.nebius.cloud:443` unless configured
(pysdk's `DOMAIN`, its `NEBIUS_ENDPOINT`), and the API service name is the proto service's `api_service_name`
option, else the second part of its package (`nebius.compute.v1.InstanceService` -> `compute`):

    compute.api.nebius.cloud:443      nebius.compute.v1.* and nebius.common.v1.OperationService of compute
    tokens.iam.api.nebius.cloud:443   nebius.iam.v1.TokenExchangeService
    cpl.iam.api.nebius.cloud:443      nebius.iam.v1.ProjectService
    vpc.api.nebius.cloud:443          nebius.vpc.v1.*
    cpl.iam.api.nebius.cloud:443      nebius.iam.v1.TenantService
    api.calculator.billing-data-plane.api.nebius.cloud:443   nebius.billing.{v1,v1alpha1}.CalculatorService
    pricing-policies.billing-cpl.api.nebius.cloud:443        nebius.billing.v1.PricingPolicyService

A domain whose host is an IP address or `localhost` (a local server such as the mock clouds) serves every service
at that address itself. Standard library only; no network.
"""

from __future__ import annotations

import ipaddress

DEFAULT_DOMAIN = "api.nebius.cloud:443"

COMPUTE = "compute"
TOKENS = "tokens.iam"
IAM = "cpl.iam"
VPC = "vpc"
CALCULATOR = "api.calculator.billing-data-plane"
PRICING_POLICIES = "pricing-policies.billing-cpl"

# The `(api_service_name)` option of the services this SDK may call, where it differs from the package's second part.
_API_SERVICE_NAMES = {
    "nebius.iam.v1.TokenExchangeService": TOKENS,
    "nebius.iam.v1.ProjectService": IAM,
    "nebius.iam.v1.TenantService": IAM,
    "nebius.billing.v1.CalculatorService": CALCULATOR,
    "nebius.billing.v1alpha1.CalculatorService": CALCULATOR,
    "nebius.billing.v1.PricingPolicyService": PRICING_POLICIES,
}


def api_service_name(service: str) -> str:
    """The API service name of a fully qualified proto service (`nebius.iam.v1.TokenExchangeService` ->
    `tokens.iam`), or `service` itself when it is already one (`compute`). Raises ValueError for a proto name that
    is not `nebius.<name>....Service`."""
    if "." not in service or not service.startswith("nebius."):
        return service
    parts = service.split(".")
    if len(parts) < 3 or not parts[-1].endswith("Service"):
        raise ValueError(f"{service!r} is not a Nebius service name (nebius.<service>.<version>.<Name>Service)")
    return _API_SERVICE_NAMES.get(service, parts[1])


def service_address(service: str, domain: str = DEFAULT_DOMAIN) -> str:
    """The `host:port` of `service` (an API service name such as `compute`, or a proto service name) under `domain`
    (`host:port`; the port defaults to 443). A domain whose host is an IP address or `localhost` is returned as it is:
    such a server serves every service. Raises ValueError for an empty domain."""
    host, port = split_host_port(domain)
    if not host:
        raise ValueError(f"{domain!r} is not an API domain (host:port, e.g. {DEFAULT_DOMAIN})")
    if serves_everything(host):
        return domain
    return join_host_port(f"{api_service_name(service)}.{host}", port)


def serves_everything(host: str) -> bool:
    """Whether a domain's host is a single local server (an IP address or `localhost`) rather than a DNS zone."""
    if host.lower() == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def split_host_port(address: str, default_port: int = 443) -> tuple[str, int]:
    """`host:port`, `[v6]:port`, `host` or a gRPC target (`dns:///host:port`, `ipv4:1.2.3.4:5`) as (host, port).
    Raises ValueError for a port that is not a number."""
    rest = address.strip()
    for scheme in ("dns:///", "dns:", "ipv4:", "ipv6:"):
        if rest.startswith(scheme):
            rest = rest[len(scheme) :]
            break
    if rest.startswith("["):
        end = rest.find("]")
        host, tail = rest[1:end], rest[end + 1 :]
        port_text = tail[1:] if tail.startswith(":") else ""
    elif rest.count(":") > 1:  # a bare IPv6 address
        host, port_text = rest, ""
    else:
        host, _, port_text = rest.partition(":")
    if not port_text:
        return host, default_port
    if not port_text.isdigit():
        raise ValueError(f"{address!r}: the port must be a number")
    return host, int(port_text)


def join_host_port(host: str, port: int) -> str:
    """`host:port`, with an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
