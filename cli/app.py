"""The Typer application object that every command module registers on."""

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
)
