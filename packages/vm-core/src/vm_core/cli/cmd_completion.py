"""`vm completion bash|zsh|fish`: click's shell completion script for vm."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

COMPLETE_VAR = "_VM_COMPLETE"


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the completion script of SHELL (commands, options, provider names).

    \b
    eval "$(vm completion bash)"                        # in ~/.bashrc
    eval "$(vm completion zsh)"                         # in ~/.zshrc
    vm completion fish > ~/.config/fish/completions/vm.fish
    """
    from .main import cli

    complete = get_completion_class(shell)
    assert complete is not None  # click ships bash, zsh and fish
    click.echo(complete(cli, {}, "vm", COMPLETE_VAR).source())
