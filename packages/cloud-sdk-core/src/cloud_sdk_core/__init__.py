"""cloud-sdk-core: the long-running operation, lazy pager and retry policies of the SDKs of this repository.

Standard library only. Each SDK (crusoe-sdk, lambda-sdk, nebius-sdk) subclasses these classes and keeps only what
is native to its API: how to read its operations, its exceptions and messages, its defaults (README.md).
"""

from .operation import Operation
from .pager import Page, Pager
from .policy import Backoff, PollPolicy, RetryPolicy, parse_retry_after

__all__ = ["Backoff", "Operation", "Page", "Pager", "PollPolicy", "RetryPolicy", "parse_retry_after"]
