"""`import nebius_sdk` must stay cheap: no grpc, no generated code, no requests until first use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

CHECK = """
import sys
import nebius_sdk
from nebius_sdk import errors, NebiusError, NotFound, Backoff, Pager
heavy = {'grpc', 'requests', 'betterproto2', 'nebius_sdk._pb', 'nebius_sdk.client'} & set(sys.modules)
assert not heavy, heavy
nebius_sdk.NebiusClient  # first use loads the client
assert 'grpc' in sys.modules and 'nebius_sdk._pb' in sys.modules
print('ok')
"""


def test_import_is_cheap() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
