"""The Typer application object that every command module registers on."""

from typing import Annotated, Optional

import typer

app = typer.Typer(
    name="planner",
    help=(
        "Plan, run and analyse pairwise-comparison evaluations of AI systems.\n\n"
        "Exit codes: 0 success; 1 data failed validation; 2 usage error (bad option value)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # -h works like --help on planner and on every command
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from planner import __version__

        typer.echo(f"planner {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the planner version and exit.")] = None,
) -> None:
    """Plan, run and analyse pairwise-comparison evaluations of AI systems.

    Exit codes: 0 success; 1 data failed validation; 2 usage error (bad option value).
    """
