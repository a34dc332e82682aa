"""A closed pipe (`planner status | head -1`): how the CLI sees it and the exit code it gives."""

import contextlib
import os
import sys

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
            with contextlib.suppress(OSError, ValueError, AttributeError):  # a stream without a file (a test runner)
                os.dup2(devnull, stream.fileno())
    except OSError:
        pass
    sys.exit(EXIT_BROKEN_PIPE)
