"""`vm images`, and the machine options `vm create` and `vm fleet create` share (`--image`, `--disk-size`,
`--startup-script`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import UsageError
from ..machine import MachineOptions
from .app import App, provider_option, with_app

F = TypeVar("F", bound=Callable[..., Any])
MAX_DISK_GIB = 1 << 20  # a sanity bound on the command line (1 PiB); each cloud's own bounds are checked by it


def read_startup_script(path: Path) -> str:
    """The text of a startup script file: UsageError when it cannot be read or is not UTF-8 text."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--startup-script {path}: cannot read it ({exc.strerror or exc})") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"--startup-script {path}: not UTF-8 text (byte {exc.start}); the clouds take text "
                         "user data") from exc
    if "\0" in text:
        raise UsageError(f"--startup-script {path}: holds NUL bytes; the clouds take text user data")
    return text


def disk_gib(value: int | None) -> int | None:
    """The `--disk-size` of the command line: UsageError outside 1..MAX_DISK_GIB."""
    if value is not None and not 1 <= value <= MAX_DISK_GIB:
        raise UsageError(f"--disk-size {value}: a size in GiB from 1 to {MAX_DISK_GIB} is needed")
    return value


def machine_options(command: F) -> F:
    """The three options, passed as `image`, `disk_size` and `startup_script` (a Path)."""
    command = click.option(
        "--startup-script", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
        help="Run this script (or cloud-init document) at first boot: Crusoe startup_script, Lambda user_data, "
             "Nebius cloud_init_user_data merged with the login user's cloud-config.")(command)
    command = click.option(
        "--disk-size", type=int, metavar="GIB",
        help="Boot disk size in GiB (Nebius; default 100, at least the image's minimum).")(command)
    command = click.option(
        "--image", metavar="NAME",
        help="Boot image: a Crusoe image name:tag, a Lambda image family or id, a Nebius image family or id "
             "(default: a GPU image with drivers per type; see `vm images`).")(command)
    return command


def machine_from(image: str | None, disk_size: int | None, startup_script: Path | None) -> MachineOptions:
    """The MachineOptions of the command line (UsageError for a bad size or an unreadable script)."""
    if image is not None and not image.strip():
        raise UsageError("--image must not be empty (leave it out for the default image)")
    return MachineOptions(image=image.strip() if image is not None else None, disk_gib=disk_gib(disk_size),
                          startup_script=read_startup_script(startup_script) if startup_script else None)


@click.command()
@provider_option()
@click.option("--gpu", metavar="TYPE[:N]", help="The machine: marks the image vm boots on it by default.")
@click.option("--region", metavar="REGION", help="Images of this region (default: the provider's first).")
@with_app
def images(app: App, provider: str, gpu: str | None, region: str | None) -> None:
    """The images a cloud offers for a machine, the one vm boots by default marked (DEFAULT: *).

    NAME is what `vm create --image` and `vm fleet create --image` take.

    \b
    vm images --provider crusoe --gpu H100:8
    vm images --provider nebius --gpu B200:8 -o json
    vm images --provider lambda --region us-east-1
    """
    from ..api.requests import ImagesRequest

    report = app.client().images(ImagesRequest(provider, gpu=gpu, region=region))
    if app.output.json:
        app.output.data(report.to_json())
        return
    app.output.table(("PROVIDER", "NAME", "DEFAULT", "MIN-DISK", "REGIONS", "DESCRIPTION"),
                     [(i.provider, i.name, "*" if i.default else "",
                       f"{i.min_disk_gib} GiB" if i.min_disk_gib else None, _regions(i.regions), i.description)
                      for i in report.images])


def _regions(regions: tuple[str, ...]) -> str:
    return ", ".join(regions) if len(regions) <= 3 else f"{', '.join(regions[:3])} +{len(regions) - 3}"
