"""Progress of a long command, on stderr: the one helper every command uses.

On a terminal: rich's bar (description, bar, done/total, elapsed), gone when the
command ends. Anywhere else (a pipe, a file, a CI log, ``nohup``): one plain line
every few seconds, so a long run is never silent::

    simulating: 12/140 runs (9%), 0:00:31 elapsed, about 0:05:31 left
    fitting with NUTS: 0:00:35 elapsed

The line comes when the count moves and at least ``every`` seconds passed since
the last line, and also without any update (a heartbeat thread) when a step takes
longer than that (one NUTS fit, one slow repetition), so the log shows the
command is alive. ``$PLANNER_PROGRESS_SECONDS`` sets the interval (default 5 s;
0 prints every update). A last line with the total time is printed when the
command printed any progress line before.
"""

from __future__ import annotations

import math
import os
import threading
import time
from datetime import timedelta
from typing import Any

from planner.escape import for_terminal

from .common import err

#: seconds between two progress lines off a terminal
DEFAULT_EVERY = 5.0


def interval() -> float:
    """The interval between progress lines: ``$PLANNER_PROGRESS_SECONDS`` or :data:`DEFAULT_EVERY`."""
    raw = os.environ.get("PLANNER_PROGRESS_SECONDS", "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_EVERY
    return value if value >= 0 and not math.isnan(value) else DEFAULT_EVERY


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=int(seconds)))


class Progress:
    """A context manager: ``with Progress("simulating", total=140, unit="runs") as p: p.update(12)``.

    ``total`` may be None (a count without an end, or no count at all: the line then
    says only the elapsed time). ``disable`` prints nothing (``--json`` for commands that
    keep stderr quiet then). ``terminal`` forces the choice of bar or lines (tests).
    """

    def __init__(self, description: str, total: int | None = None, unit: str = "", *, disable: bool = False,
                 terminal: bool | None = None, every: float | None = None, console=None):
        self.description, self.total, self.unit = description, total, unit
        self.disable = disable
        self.console = console if console is not None else err()
        self.terminal = self.console.is_terminal if terminal is None else terminal
        self.every = interval() if every is None else every
        self.done: int | None = None
        self.detail = ""
        self._start = self._last = 0.0
        self._printed = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None   # rich's Progress on a terminal
        self._task: Any = None

    # -- the context ------------------------------------------------------------------------------
    def __enter__(self) -> Progress:
        self._start = self._last = time.monotonic()
        if self.disable:
            return self
        if self.terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(for_terminal(self.description), total=self.total)
        elif self.every > 0:
            self._thread = threading.Thread(target=self._beat, name="planner-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.stop()
        elif not self.disable and self._printed and exc_type is None:
            self._line(final=True)

    # -- updates ----------------------------------------------------------------------------------
    def update(self, done: int | None = None, total: int | None = None, detail: str = "") -> None:
        """Record progress: ``done`` of ``total`` (kept when None), an optional short detail."""
        with self._lock:
            if total is not None:
                self.total = total
            if done is not None:
                self.done = done
            self.detail = detail or self.detail
        if self.disable:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done or 0, total=self.total,
                             description=for_terminal(self.description + (f" {self.detail}" if self.detail else "")))
            return
        if time.monotonic() - self._last >= self.every:
            self._line()

    def _beat(self) -> None:
        while not self._stop.wait(min(self.every, 1.0)):
            if time.monotonic() - self._last >= self.every:
                self._line()

    def text(self, final: bool = False) -> str:
        """The plain progress line as it is now."""
        elapsed = time.monotonic() - self._start
        parts = []
        if self.done is not None:
            unit = f" {self.unit}" if self.unit else ""
            if self.total:
                parts.append(f"{self.done:,}/{self.total:,}{unit} ({100 * self.done / self.total:.0f}%)")
            else:
                parts.append(f"{self.done:,}{unit}")
        if self.detail:
            parts.append(self.detail)
        parts.append(f"{_clock(elapsed)} {'in all' if final else 'elapsed'}")
        if not final and self.total and self.done and self.done < self.total:
            parts.append(f"about {_clock(elapsed * (self.total - self.done) / self.done)} left")
        return f"{self.description}: " + ", ".join(parts)

    def _line(self, final: bool = False) -> None:
        with self._lock:
            self._last = time.monotonic()
            self._printed += 1
            line = self.text(final)
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def heartbeat(description: str, unit: str = "") -> Progress:
    """Lines off a terminal while a step runs: its count when it reports one (NUTS draws), else the time.

    On a terminal it prints nothing: the step shows its own bar there (pymc's) or is quick.
    """
    return Progress(description, unit=unit, terminal=False, disable=err().is_terminal)


def due(every: float | None = None):
    """A throttle for callers with their own line format: ``due()`` is True at most once per interval."""
    gap = interval() if every is None else every
    state = {"last": time.monotonic()}

    def check() -> bool:
        now = time.monotonic()
        if now - state["last"] >= gap:
            state["last"] = now
            return True
        return False

    return check
