"""The one error family that crosses the library/CLI boundary.

Every error the library raises on purpose is a :class:`PlannerError`. The CLI
catches it, prints ``str(error)`` as one line on stderr and exits with
``error.exit_code``:

* :class:`DataError` (exit 1): input data failed validation (bad rows, unknown
  ids, duplicates, already-ingested files). ``problems`` may hold up to 20
  one-line messages, each naming ``file:line``.
* :class:`UsageError` (exit 2): a bad option value (out of range, unknown
  choice, inconsistent combination).

The library speaks in parameter names, not command-line flags: an error about
an option names the parameter in backquotes (```batch_size` (0) must be an
integer >= 1``) and lists it in ``parameters``. :meth:`PlannerError.lines` given a ``flags`` mapping
names each listed parameter as the caller knows it; the CLI passes its flags,
so the same error reads ``--batch-size (0) must be an integer >= 1`` there
(:func:`flag_for` is the default spelling, ``batch_size`` → ``--batch-size``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class PlannerError(Exception):
    """Base class of all deliberate planner errors."""

    exit_code = 1

    def __init__(self, message: str, problems: list[str] | tuple[str, ...] = (), *,
                 parameters: str | Sequence[str] = ()):
        super().__init__(message)
        self.message = message
        self.problems = tuple(problems)
        self.parameters = (parameters,) if isinstance(parameters, str) else tuple(parameters)

    def render(self, flags: Mapping[str, str] | bool | None = None) -> str:
        """The message with each of ``parameters`` named as the caller knows it.

        ``flags`` is ``None`` (the message as written: parameter names), ``True``
        (every parameter as its default flag, :func:`flag_for`) or a mapping
        from parameter to flag (parameters it does not list get the default).
        """
        return _rename(self.message, self.parameters, flags)

    def lines(self, flags: Mapping[str, str] | bool | None = None) -> list[str]:
        """The message followed by each listed problem (at most 20); see :meth:`render` for ``flags``."""
        out = [self.render(flags)]
        out.extend(_rename(p, self.parameters, flags) for p in self.problems[:20])
        if len(self.problems) > 20:
            out.append(f"... and {len(self.problems) - 20} more problems")
        return out


class DataError(PlannerError, ValueError):
    """Input data failed validation. Exit code 1."""

    exit_code = 1


class UsageError(PlannerError, ValueError):
    """An option value is out of range or inconsistent. Exit code 2."""

    exit_code = 2


def flag_for(parameter: str) -> str:
    """The command-line spelling of a parameter: ``batch_size`` → ``--batch-size``."""
    return "--" + parameter.replace("_", "-")


def _rename(text: str, parameters: tuple[str, ...], flags) -> str:
    """``text`` with each listed parameter, written `like_this`, replaced by its flag."""
    if not parameters or flags is None or flags is False:
        return text
    table = flags if isinstance(flags, Mapping) else {}
    for name in parameters:
        text = text.replace(f"`{name}`", table.get(name) or flag_for(name))
    return text


def shown(name: str) -> str:
    """A parameter as a message names it: `name` in backquotes (an identifier), else as given."""
    return f"`{name}`" if name.isidentifier() else name


def check_range(name: str, value: float, low: float, high: float, *,
                low_open: bool = True, high_open: bool = True) -> float:
    """Raise :class:`UsageError` unless ``value`` lies in the given interval.

    The message names the parameter, the value and the allowed range, e.g.
    ```effect` (0.7) must be in (0, 0.5)`` (``--effect`` on the command line).
    """
    import math

    ok = not (isinstance(value, float) and math.isnan(value))
    if ok:
        ok = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        raise UsageError(f"{shown(name)} ({value:g}) must be in {lb}{low:g}, {high:g}{rb}",
                         parameters=parameters_of(name))
    return value


def parameters_of(name: str) -> tuple[str, ...]:
    """``name`` as the parameter an error names, when it is an identifier (``seed``, not ``--seed``)."""
    return (name,) if name.isidentifier() else ()


QUOTE_LIMIT = 80


def quote(value, limit: int = QUOTE_LIMIT) -> str:
    """A user value as it may appear in a one-line message.

    ``None`` reads "missing" (never Python's ``None``); anything else is shown
    with :func:`repr` (strings quoted, control characters, NUL bytes and lone
    surrogates escaped) and cut to about ``limit`` characters with ``…`` and the
    full length, so a 1 MB bad value never floods a terminal::

        >>> quote(None)
        'missing'
        >>> quote("x" * 1000)[-22:]
        "xxxx…' (1000 characters)"
    """
    if value is None:
        return "missing"
    try:
        small = not isinstance(value, int) or abs(value) < 10 ** 60
        text = repr(value) if small else f"an integer of {len(str(abs(value)))} digits"
    except (ValueError, RecursionError):  # int too large for str(), or a self-referencing structure
        text = f"a {type(value).__name__} too large to show"
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, (str, bytes, list, dict, tuple)) else None
    unit = "characters" if isinstance(value, str) else "items" if size is not None else ""
    tail = f" ({size} {unit})" if size is not None else ""
    return text[: limit - 1] + "…" + (text[0] if text[:1] in "'\"" else "") + tail
