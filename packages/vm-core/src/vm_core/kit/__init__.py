"""The provider kit: what every cloud adapter needs and writes once here.

- `ErrorTable` + `translated`: SDK exception type -> vm-core error, by type (kit.errors);
- `setting`, `settings_of`, `parse_settings`: typed settings declared once per plugin, and parsers of their values
  (`positive_number`, `seconds`, `table`, `texts`...) (kit.settings);
- `poll_until` + `Backoff`: the one polling loop with a deadline (kit.polling);
- `OperationPending`, `PolledPending`, `Finished`, `Noted`: Pending building blocks (kit.pending);
- `destroy_many`, `batch_call`, `read_many`, `chunks`: actions and reads on many ids at once (kit.batch);
- `AccountKeys`: the account SSH key a launch names, added when missing, and `key_fingerprint`, the account of
  an API key (kit.keys);
- `Memo`: a lookup made once (or once per time-to-live) per key, one at a time (kit.memo);
- `follow`, `still_running`, `gave_up`: the hints and Timeouts of an action that goes on in the cloud (kit.ongoing);
- `scaled`: an SDK backoff policy times a plugin's time_scale (kit.polling);
- `ShapesFile`, `GpusFile`: a plugin's catalog rows and GPU types from a TOML file next to it, read on first
  use; `offer` (the Offer of one row) and `GivenCatalog` (the catalog a provider was given, or the default one)
  (kit.shapes);
- `id_check`: the check of an instance id against the plugin's pattern, before any call (kit.ids).

Importing the kit imports no SDK.
"""

from .batch import batch_call, chunks, destroy_many, read_many
from .errors import ErrorTable, capacity, rate_limited, rule, translated
from .ids import id_check
from .keys import AccountKeys, key_fingerprint
from .memo import Memo
from .ongoing import follow, gave_up, still_running
from .pending import Finished, Noted, OperationPending, PolledPending
from .polling import Backoff, poll_until, scaled
from .settings import (
    optional_text,
    parse_settings,
    positive_number,
    seconds,
    setting,
    settings_of,
    table,
    text,
    texts,
)
from .shapes import GivenCatalog, GpusFile, ShapesFile, offer

__all__ = [
    "AccountKeys", "Backoff", "ErrorTable", "Finished", "GivenCatalog", "GpusFile", "Memo", "Noted",
    "OperationPending", "PolledPending", "ShapesFile", "batch_call", "capacity", "chunks",
    "destroy_many", "follow", "gave_up", "id_check", "key_fingerprint", "offer", "optional_text", "parse_settings",
    "poll_until", "positive_number", "rate_limited", "read_many", "rule", "scaled", "seconds", "setting",
    "settings_of", "still_running", "table", "text", "texts", "translated",
]
