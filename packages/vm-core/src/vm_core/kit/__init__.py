"""The provider kit: what every cloud adapter needs and writes once here.

- `ErrorTable` + `translated`: SDK exception type -> vm-core error, by type (kit.errors);
- `setting`, `settings_of`, `parse_settings`: typed settings declared once per plugin (kit.settings);
- `poll_until` + `Backoff`: the one polling loop with a deadline (kit.polling);
- `OperationPending`, `PolledPending`, `Finished`: Pending building blocks (kit.pending);
- `ShapesFile`: a plugin's catalog rows from a TOML file next to it, read on first use (kit.shapes).

Importing the kit imports no SDK.
"""

from .errors import ErrorTable, capacity, rate_limited, rule, translated
from .pending import Finished, OperationPending, PolledPending
from .polling import Backoff, poll_until
from .settings import optional_text, parse_settings, positive_number, seconds, setting, settings_of, text
from .shapes import ShapesFile

__all__ = [
    "Backoff", "ErrorTable", "Finished", "OperationPending", "PolledPending", "ShapesFile", "capacity", "optional_text",
    "parse_settings", "poll_until", "positive_number", "rate_limited", "rule", "seconds", "setting", "settings_of",
    "text", "translated",
]
