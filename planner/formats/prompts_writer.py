"""The chosen prompts of ``allocate --out``, written as a prompts file (CSV or JSONL) that ``init --prompts`` reads."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import UsageError

if TYPE_CHECKING:
    from planner.allocation.result import Allocation

#: the prompts-file format (``id, text, stratum, weight, frozen``: ``planner init --prompts`` reads it back)
#: plus the allocation's ``order`` and ``gap``
OUT_FIELDS = ("id", "text", "stratum", "weight", "frozen", "order", "gap")
_OUT_ATTR = {"id": "prompt"}


def write_prompts(result: Allocation, path: str | os.PathLike, *, force: bool = False) -> None:
    """Write the chosen prompts as CSV or JSONL (by extension), atomically.

    Columns / keys: ``id, text, stratum, weight, frozen, order, gap`` — a
    prompts file ``planner init --prompts`` accepts (``weight`` = the sampling
    weight, so per-stratum sums are proportional to the population). Refuses to
    overwrite an existing file unless ``force``. Written to a temporary file in
    the same directory (mode 0o666 minus the umask), then ``os.replace``d into
    place. CSV text cells that begin with ``= + - @``, a tab or a carriage
    return get a leading ``'`` (OWASP CSV injection; the same rule as batch
    files, :func:`planner.csvcell.neutralize_cell`); numbers are
    written as numbers.
    """
    from planner.csvcell import neutralize_cell
    from planner.errors import quote

    p = check_out(path, force)
    if p.is_dir():
        raise UsageError(f"`out`: {quote(str(p))} is a directory; give a file name", parameters=('out',))
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            rows = [{k: getattr(c, _OUT_ATTR.get(k, k)) for k in OUT_FIELDS} for c in result.prompts]
            if p.suffix.lower() == ".csv":
                # CRLF rows (RFC 4180): csv quotes a cell holding a CR only when CR is in the terminator
                w = csv.DictWriter(fh, fieldnames=OUT_FIELDS, lineterminator="\r\n")
                w.writeheader()
                for r in rows:
                    w.writerow({k: neutralize_cell(v) if isinstance(v, str) else _cell(v) for k, v in r.items()})
            else:
                for r in rows:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        os.replace(tmp, p)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UsageError(f"`out`: cannot write {quote(str(p))} ({exc.strerror or exc})",
                             parameters=('out',)) from None
        raise


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def check_out(path: str | os.PathLike, force: bool) -> Path:
    """The ``--out`` path, checked before any work: a .csv/.jsonl name, not there unless ``force``, in a directory."""
    p = Path(path)
    if p.suffix.lower() not in (".csv", ".jsonl"):
        raise UsageError(f"`out` ({path}) must end in .csv or .jsonl", parameters=('out',))
    if p.exists() and not force:
        raise UsageError(f"`out` ({path}) exists; pass `force` to overwrite it", parameters=('out', 'force'))
    if not p.parent.is_dir():
        raise UsageError(f"`out` ({path}): directory {p.parent} does not exist", parameters=('out',))
    return p
