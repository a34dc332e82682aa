"""The Typer application object that every command module registers on."""

import errno
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from .common import call
from .pipes import closed_pipe, output_closed

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer import _click as click
except ImportError:  # pragma: no cover
    import click  # type: ignore[no-redef]

MESSAGE_LIMIT = 300  # a usage error quoting a 1 MB value is cut to this many characters


class _OneLineErrors(TyperGroup):
    """Click's usage errors (bad type, unknown option, missing argument) as one ``error:`` line, exit 2.

    Click prints a usage block, a hint and the error on three or more lines and
    echoes a bad value whole; planner prints one line naming the option and the
    command's --help, cut to :data:`MESSAGE_LIMIT` characters. Everything else
    (help, --version, exit codes raised by commands) is click's own behaviour.
    """

    def invoke(self, ctx):
        # click turns a broken pipe into exit 1 ("data failed validation" here): catch it first,
        # but only when it is our output that closed (a judge's socket can fail with EPIPE too).
        # The command runs through common.call, the one place a PlannerError becomes its line and exit
        # code: an option object that refuses its values as the command builds it (before the command's
        # own `call(workflow, ...)`) reads like any other usage error, never a traceback.
        try:
            return call(super().invoke, ctx)
        except OSError as exc:
            if exc.errno != errno.EPIPE or not output_closed():
                raise
            closed_pipe()

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # `planner` alone: the help text
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            from planner.escape import for_terminal

            text = for_terminal(" ".join(exc.format_message().split()))
            if len(text) > MESSAGE_LIMIT:
                text = text[:MESSAGE_LIMIT - 1] + f"… ({len(text):,} characters)"
            ctx = getattr(exc, "ctx", None)
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            sys.stderr.write(f"error: {text}{hint}\n")
            sys.stderr.flush()
            sys.exit(exc.exit_code)
        except typer.Abort:  # Ctrl-C outside a command's own handling: 130, as a shell reports SIGINT
            sys.stderr.write("error: interrupted\n")
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)

app = typer.Typer(
    name="planner",
    help=(
        "Plan, run and analyse pairwise-comparison evaluations of AI systems.\n\n"
        "Exit codes: 0 success; 1 data failed validation; 2 usage error (bad option value); "
        "130 interrupted (Ctrl-C); 141 the reader of the output went away (a closed pipe)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=_OneLineErrors,
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
    version: Annotated[bool | None, typer.Option(
        "--version", "-V", callback=_version, is_eager=True, help="Print the planner version and exit.")] = None,
) -> None:
    """Plan, run and analyse pairwise-comparison evaluations of AI systems.

    Exit codes: 0 success; 1 data failed validation; 2 usage error (bad option value); 130
    interrupted (Ctrl-C); 141 the reader of the output went away (a closed pipe).
    """
