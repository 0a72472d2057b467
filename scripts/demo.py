"""The main job, on the embedded mock clouds: a 12-VM H100:8 fleet across Crusoe, Lambda and Nebius.

Runs the real `vm` executable with a fresh VM_HOME: `vm` starts its embedded mock clouds by itself, then the
demo shows the providers and offers, creates a fleet spread over the three clouds, shows its status and the
VMs, destroys it, and checks the clouds' own inventory to prove that nothing leaked.

    hatch run demo [--time-scale 0.05] [--count 12] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

VM = str(Path(sys.executable).parent / "vm")


def run(env: dict[str, str], *args: str, check: bool = True) -> str:
    print(f"\n$ vm {shlex.join(args)}", flush=True)
    done = subprocess.run([VM, *args], env=env, stdout=subprocess.PIPE, text=True, check=False)
    print(done.stdout, end="", flush=True)
    if check and done.returncode != 0:
        raise SystemExit(f"demo: `vm {shlex.join(args)}` exited {done.returncode}")
    return done.stdout


def leftovers(home: Path, env: dict[str, str], fleet: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "mock_clouds", "inventory", "--state-dir",
                           str(home / "mock-clouds"), "-o", "json"], env=env, capture_output=True, text=True,
                          check=True)
    return [i for i in json.loads(done.stdout) if i["name"].startswith(f"{fleet}-")]


def demo(home: Path, time_scale: float, count: int) -> int:
    # VM_PROFILE=local: the embedded mock clouds, even where the clouds' own credentials are set up
    env = {**os.environ, "VM_HOME": str(home), "VM_MOCK_TIME_SCALE": str(time_scale), "VM_PROFILE": "local"}
    try:
        run(env, "providers")
        run(env, "offers", "--gpu", "H100")
        # 8 GPUs per VM: the one H100 size that Crusoe (which sells H100 only as H100:8), Lambda and Nebius all sell
        # the demo's own public key (nobody holds its private half): a machine without ~/.ssh/id_ed25519.pub runs it too
        home.mkdir(parents=True, exist_ok=True)
        key = home / "demo_key.pub"
        key.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGgLAWC6bF3K8NqzCcSE0G4cqyBqV3zZkh9q6rUa0fB1 vm-demo\n")
        run(env, "fleet", "create", "--gpu", "H100:8", "--count", str(count), "--name", "demo", "--ssh-key", str(key))
        run(env, "fleet", "status", "demo")
        run(env, "list")
        run(env, "fleet", "destroy", "demo", "--yes")
        left = leftovers(home, env, "demo")
        print(f"\nclouds' inventory after destroy: {len(left)} VM(s) of fleet demo left"
              + (" - nothing leaked" if not left else f": {left}"))
        return 1 if left else 0
    finally:
        subprocess.run([sys.executable, "-m", "mock_clouds", "stop", "--state-dir", str(home / "mock-clouds")],
                       env=env, capture_output=True, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=0.05,
                        help="multiply the clouds' simulated durations (0.05: a 180 s Lambda boot takes 9 s)")
    parser.add_argument("--count", type=int, default=12, help="VMs in the fleet (default 12)")
    parser.add_argument("--keep", metavar="DIR", help="use (and keep) this VM_HOME instead of a temporary one")
    args = parser.parse_args()
    if args.time_scale <= 0 or args.count < 1:
        parser.error("--time-scale must be positive and --count at least 1")
    if args.keep:
        return demo(Path(args.keep), args.time_scale, args.count)
    with tempfile.TemporaryDirectory(prefix="vm-demo-") as tmp:
        return demo(Path(tmp), args.time_scale, args.count)


if __name__ == "__main__":
    sys.exit(main())
