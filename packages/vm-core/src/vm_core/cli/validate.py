"""The checks of user input (vm_core.api.validate), under the name the CLI's callers have always used."""

from __future__ import annotations

from ..api.validate import (
                            MAX_COUNT,
                            NAME_HELP,
                            NAME_RULE,
                            RESERVATION_PROBLEMS,
                            count,
                            gpu,
                            instance_id,
                            names,
                            offered_region,
                            region,
                            reservation,
                            vm_name,
)

__all__ = ["MAX_COUNT", "NAME_HELP", "NAME_RULE", "RESERVATION_PROBLEMS", "count", "gpu", "instance_id", "names",
           "offered_region", "region", "reservation", "vm_name"]
