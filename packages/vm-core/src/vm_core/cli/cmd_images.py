"""`vm images`, and the machine options `vm create` and `vm fleet create` share (`--image`, `--disk-size`,
`--startup-script`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..catalog import default_catalog
from ..errors import Unsupported, UsageError
from ..machine import MachineOptions, SupportsMachineOptions
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


def fleet_machine(connected: dict[str, Any], spec: Any, *, explicit: bool,
                  warn: Callable[[str], None]) -> tuple[dict[str, Any], Any]:
    """The providers a new fleet with machine options may use, and its spec (before anything is recorded or
    created): each provider that sells the size checks the options (`machine.check`, reads only). One that refuses
    them is left out, said once on stderr, and the spec names the others (so scale and repair keep to them), unless
    the providers were named (`explicit`) or none is left: then UsageError (exit 2) with each refusal."""
    from dataclasses import replace

    from ..machine import check

    if spec.machine.is_default:
        return connected, spec
    catalog = default_catalog()
    kept: dict[str, Any] = {}
    refused: list[tuple[str, UsageError]] = []
    for name, target in connected.items():
        if catalog.shapes_for(name, spec.gpu, spec.gpu_count) or not isinstance(target, SupportsMachineOptions):
            try:
                check(target, name, spec.gpu, spec.gpu_count, spec.region, spec.machine)
            except UsageError as exc:
                refused.append((name, exc))
                continue
        kept[name] = target
    sells = [n for n in kept if catalog.shapes_for(n, spec.gpu, spec.gpu_count)]
    if refused and (explicit or not sells):
        if len(refused) == 1:
            raise refused[0][1]
        raise UsageError("; ".join(f"{name}: {error.message}" for name, error in refused),
                         suggestion="name the providers whose images these are with --providers, or see "
                                    "`vm images --provider P`")
    for name, error in refused:
        warn(f"{name} is not used: {error.message}")
    return kept, (replace(spec, providers=tuple(kept)) if refused else spec)


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
    request = default_catalog().parse(gpu, any_size=True) if gpu else None
    target = app.session().provider(provider)
    if not isinstance(target, SupportsMachineOptions):
        raise Unsupported(f"{provider} does not list images", provider=provider)
    found = target.images(request.gpu if request else None, request.gpu_count if request else None, region)
    if app.output.json:
        app.output.data([i.to_json() for i in found])
        return
    app.output.table(("PROVIDER", "NAME", "DEFAULT", "MIN-DISK", "REGIONS", "DESCRIPTION"),
                     [(i.provider, i.name, "*" if i.default else "",
                       f"{i.min_disk_gib} GiB" if i.min_disk_gib else None, _regions(i.regions), i.description)
                      for i in found])


def _regions(regions: tuple[str, ...]) -> str:
    return ", ".join(regions) if len(regions) <= 3 else f"{', '.join(regions[:3])} +{len(regions) - 3}"
