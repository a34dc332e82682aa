"""The Typer application object that every command module registers on."""

import errno
import os
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
    from typer import _click as click
except ImportError:  # pragma: no cover
    import click

MESSAGE_LIMIT = 300  # a usage error quoting a 1 MB value is cut to this many characters

#: exit code when the reader of stdout (or stderr) went away (`planner status | head -1`): what a
#: shell reports for a program killed by SIGPIPE (128 + 13), so `set -o pipefail` scripts see the
#: same as with cat or grep, and never 1, which means the data failed validation
EXIT_BROKEN_PIPE = 141


def output_closed() -> bool:
    """Whether stdout or stderr is a pipe whose reader went away (poll reports an error on it)."""
    import select

    if not hasattr(select, "poll"):  # no poll (Windows): trust the EPIPE
        return True
    poller = select.poll()
    fds = []
    for stream in (sys.stdout, sys.stderr):
        try:
            fds.append(stream.fileno())
        except (OSError, ValueError, AttributeError):  # a stream without a file (a test runner)
            continue
    for fd in fds:
        poller.register(fd, select.POLLOUT)
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in poller.poll(0))


def closed_pipe() -> None:
    """Exit quietly with :data:`EXIT_BROKEN_PIPE` after a write to a closed pipe.

    Python flushes stdout once more at exit and would print a second traceback; stdout and
    stderr are pointed at the null device first (the recipe of the Python docs, signal module).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError, AttributeError):  # a stream without a file (a test runner)
                pass
    except OSError:
        pass
    sys.exit(EXIT_BROKEN_PIPE)


class _OneLineErrors(TyperGroup):
    """Click's usage errors (bad type, unknown option, missing argument) as one ``error:`` line, exit 2.

    Click prints a usage block, a hint and the error on three or more lines and
    echoes a bad value whole; planner prints one line naming the option and the
    command's --help, cut to :data:`MESSAGE_LIMIT` characters. Everything else
    (help, --version, exit codes raised by commands) is click's own behaviour.
    """

    def invoke(self, ctx):
        # click turns a broken pipe into exit 1 ("data failed validation" here): catch it first,
        # but only when it is our output that closed (a judge's socket can fail with EPIPE too)
        try:
            return super().invoke(ctx)
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
