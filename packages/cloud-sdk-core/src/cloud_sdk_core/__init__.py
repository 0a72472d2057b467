"""cloud-sdk-core: the long-running operation, lazy pager and retry policies that crusoe-sdk, lambda-sdk and
nebius-sdk subclass, keeping what is native to their API (README.md). Standard library only."""

from .operation import Operation
from .pager import Page, Pager
from .policy import Backoff, PollPolicy, RetryPolicy, parse_retry_after

__all__ = ["Backoff", "Operation", "Page", "Pager", "PollPolicy", "RetryPolicy", "parse_retry_after"]
