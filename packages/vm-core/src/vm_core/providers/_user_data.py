"""A startup script merged with the cloud-config that creates the login user (Nebius, whose images get their
user and key from cloud-init user data alone).

- A shell script (`#!...`) goes into the login cloud-config itself: `write_files` puts it at `SCRIPT_PATH`
  (0755, its text as a JSON string, which is a YAML string) and `runcmd` runs it once, on the first boot, after
  the user exists. One `#cloud-config` document, so nothing in it replaces the user.
- Any other cloud-init format (`#cloud-config`, `#cloud-boothook`, `#include`) makes a MIME multi-part message:
  the login cloud-config first, the user's part after it, each with the `Merge-Type` header
  `list(append)+dict(no_replace,recurse_list)+str()`, so the user's `users:` are added to the login user and
  never replace it (cloud-init's merging of parts).
- Without a login cloud-config (no key), the script is the user data as it is.
"""

from __future__ import annotations

import json

from ..errors import UsageError

SCRIPT_PATH = "/var/lib/vm/startup-script"
MERGE_TYPE = "list(append)+dict(no_replace,recurse_list)+str()"
BOUNDARY = "==vm-user-data=="
_TYPES = {  # first line -> the MIME type cloud-init reads it as
    "#cloud-config": "text/cloud-config",
    "#cloud-boothook": "text/cloud-boothook",
    "#include": "text/x-include-url",
}


def merged(login: str, script: str | None) -> str:
    """The user data of a VM whose login user is made by the cloud-config `login` ("" for none) and that runs
    `script` (None for none). UsageError for a script cloud-init would not run."""
    if script is None:
        return login
    if not login:
        return script
    if script.startswith("#!"):
        return (f"{login.rstrip(chr(10))}\nwrite_files:\n  - path: {SCRIPT_PATH}\n    permissions: \"0755\"\n"
                f"    content: {json.dumps(script)}\nruncmd:\n  - [{json.dumps(SCRIPT_PATH)}]\n")
    first = script.split("\n", 1)[0].strip()
    kind = next((mime for prefix, mime in _TYPES.items() if first.startswith(prefix)), None)
    if kind is None:
        raise UsageError("--startup-script: cloud-init runs a shell script (#!...) or a #cloud-config, "
                         f"#cloud-boothook or #include document; this one starts with {first[:40]!r}")
    parts = [("text/cloud-config", login), (kind, script)]
    body = "".join(
        f"--{BOUNDARY}\nContent-Type: {mime}; charset=\"utf-8\"\nMIME-Version: 1.0\n"
        f"Content-Transfer-Encoding: 8bit\nMerge-Type: {MERGE_TYPE}\n\n{text.rstrip(chr(10))}\n"
        for mime, text in parts
    )
    return f"Content-Type: multipart/mixed; boundary=\"{BOUNDARY}\"\nMIME-Version: 1.0\n\n{body}--{BOUNDARY}--\n"
