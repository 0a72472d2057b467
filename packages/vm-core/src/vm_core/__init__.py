"""vm-core: the provider-neutral model, plugins, configuration and the `vm` CLI.

Importing this package is cheap: no SDK, requests or grpc is imported until a provider is used.
"""

__version__ = "0.1.0"
