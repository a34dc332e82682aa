"""Advisory locks in a study directory: two planner processes never work on one batch (or project) at once.

``with hold(study, "judge-batch-3", "batch 3 (planner judge)"):`` takes an
exclusive ``flock`` on ``STUDY/locks/judge-batch-3.lock`` and writes who holds it
(``{"pid", "host", "since", "command"}``). A second process that asks for the same
lock gets a :class:`~planner.errors.DataError` naming the holder (pid, host,
since) and exits non-zero; it waits for nothing and sends nothing.

The kernel drops an ``flock`` when its process dies, ``kill -9`` included, so a
lock left by a dead process is free: the next process takes it over (and is
told whose it was: :attr:`Held.previous`). No pid is ever guessed dead.
Creating ``STUDY/locks/`` is also the first write a paid command makes: a
read-only study is refused here, before any request is sent.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from planner.errors import DataError, quote

LOCK_DIR = "locks"

try:
    import fcntl
except ImportError:  # pragma: no cover  (Windows)
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Held:
    """A lock this process holds; ``previous`` the holder record a dead process left (None if clean)."""

    path: str
    previous: dict | None


def _holder_text(rec: dict | None) -> str:
    if not isinstance(rec, dict):
        return "another planner process"
    pid, host, since = rec.get("pid"), rec.get("host"), rec.get("since")
    cmd = rec.get("command")
    return (f"planner process {pid} on {quote(host)}" + (f" ({quote(cmd, 60)})" if cmd else "")
            + (f", since {since}" if since else ""))


def _read(fd: int) -> dict | None:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 4096)
    try:
        rec = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def _try_lock(fd: int) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
    import msvcrt  # pragma: no cover

    try:  # pragma: no cover
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return True
    except OSError:  # pragma: no cover
        return False


def _open(study_path, name: str) -> tuple[int, Path]:
    folder = Path(study_path) / LOCK_DIR
    path = folder / f"{name}.lock"
    try:
        folder.mkdir(exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644), path
    except OSError as exc:
        raise DataError(f"cannot write the study directory {quote(str(study_path))} "
                        f"({exc.strerror or exc.__class__.__name__}); nothing was sent") from None


def _command() -> str:
    """``planner <command>`` when run from the command line, else the program's name."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    if prog in ("planner", "__main__.py") and len(sys.argv) > 1:
        return f"planner {sys.argv[1][:40]}"
    return prog[:40]


@contextmanager
def hold(study_path, name: str, what: str) -> Iterator[Held]:
    """Hold the study's lock ``name`` (letters, digits, ``-``) while the block runs; see the module docstring.

    ``what`` names the locked thing for the refusal: "batch 3 is in use by …".
    """
    fd, path = _open(study_path, name)
    try:
        if not _try_lock(fd):
            holder = _read(fd)
            raise DataError(f"{what} is in use by {_holder_text(holder)}; wait for it to finish (or stop it), "
                            "then run this again")
        previous = _read(fd)
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "since": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
              "command": _command()}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(me).encode("utf-8"))
        try:
            yield Held(str(path), previous)
        finally:
            os.ftruncate(fd, 0)  # released cleanly: no holder record left behind
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def holder_note(held: Held, what: str) -> str | None:
    """A note when ``held`` took over a lock a process left behind (it ended without releasing it)."""
    if held.previous is None:
        return None
    return f"{what}: took over the lock left by {_holder_text(held.previous)}, which is no longer running"
