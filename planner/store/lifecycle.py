"""Batch and file lifecycle: void a batch, retract an ingested file (audited, reversible).

* **Void** a batch that will never come back (annotators gone, judge job
  abandoned): its unreturned items stop counting as pending, so ``next-batch``
  no longer plans around them. Judgments that do arrive later for its items are
  still stored and counted. ``undo`` makes it count again. Batches older than a
  number of days can be voided at once (``older_than_days``); a study can also
  set ``pending_expiry_days`` in ``study.json`` so that items of older batches
  stop counting as pending without an explicit void.
* **Retract** a file ingested by mistake: its judgments move to the
  ``retracted_judgments`` table (nothing is deleted) and stop counting; ``undo``
  moves them back. Every action is logged in the ``lifecycle`` table.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from planner.errors import DataError, UsageError, parameters_of, quote, shown
from planner.limits import check_optional_float
from planner.store.db import now, write
from planner.store.queries import Study

_JCOLS = ("seq, id, item, prompt, a, b, verdict, a_position, kind, annotator, reason, seconds, confidence, "
          "file, source_annotator")


@dataclass(frozen=True)
class VoidResult:
    """Batches voided (or restored with ``undo``) and the pending items that changed with them."""

    batches: tuple[int, ...]
    pending_items: int
    undo: bool

    def to_dict(self) -> dict:
        return {"batches": list(self.batches), "pending_items": self.pending_items, "undo": self.undo}


@dataclass(frozen=True)
class RetractResult:
    """A file retracted (or restored): its name, hash and the judgments moved."""

    file: str
    sha256: str
    judgments: int
    undo: bool

    def to_dict(self) -> dict:
        return {"file": self.file, "sha256": self.sha256, "judgments": self.judgments, "undo": self.undo}


def _log(con, action: str, target: str, detail: str | None) -> None:
    con.execute("INSERT INTO lifecycle (action, target, detail, at) VALUES (?, ?, ?, ?)",
                (action, target, detail, now()))


def void_batches(path, batches: Sequence[int] = (), *, older_than_days: float | None = None,
                 reason: str | None = None, undo: bool = False) -> VoidResult:
    """Void batches (by id, or every batch created more than ``older_than_days`` ago).

    Raises :class:`UsageError` for unknown batch ids, neither ids nor
    ``older_than_days``, or a negative/non-finite number of days.
    """
    ids = [int(b) for b in batches]
    if not ids and older_than_days is None:
        raise UsageError("`batches`: give batch ids or `older_than_days`; expected at least one",
                         parameters=('batches', 'older_than_days'))
    check_optional_float("older_than_days", older_than_days, 0.0, 1e5, high_open=True, unit="days")
    with Study.open(path) as study, write(study.connection) as con:
        known = {r[0]: r[1] for r in con.execute("SELECT id, created FROM batches")}
        bad = [b for b in ids if b not in known]
        if bad:
            raise UsageError(f"batch {bad[0]} does not exist; expected one of "
                             f"{', '.join(map(str, sorted(known))) or 'none (no batch issued yet)'}",
                             parameters=('batches',))
        if older_than_days is not None:
            cutoff = (_dt.datetime.now(_dt.UTC) - _dt.timedelta(days=older_than_days)).replace(
                microsecond=0).isoformat()
            ids += [b for b, created in known.items() if created <= cutoff and b not in ids]
        target = [b for b in sorted(set(ids))
                  if (con.execute("SELECT voided IS NOT NULL FROM batches WHERE id = ?", (b,)).fetchone()[0]) == undo]
        # the items status counts for these batches (issued - returned, every kind): one definition, one number
        unreturned = {b.id: b.issued - b.returned for b in study.batches()}
        pending = sum(unreturned[b] for b in target)
        for b in target:
            con.execute("UPDATE batches SET voided = ?, void_reason = ? WHERE id = ?",
                        (None, None, b) if undo else (now(), reason, b))
            _log(con, "unvoid" if undo else "void", f"batch {b}", reason)
    return VoidResult(tuple(target), int(pending), undo)


def _find_file(con, ref: str) -> tuple:
    """The files row named by ``ref``: a file name, a sha256 (or a unique prefix of >= 8 hex) or a path."""
    rows = con.execute("SELECT id, name, sha256, retracted FROM files").fetchall()
    hits = [r for r in rows if r[1] == ref or r[2] == ref]
    if not hits and len(ref) >= 8 and all(ch in "0123456789abcdef" for ch in ref.lower()):
        hits = [r for r in rows if r[2].startswith(ref.lower())]
    if not hits and Path(ref).is_file():
        h = hashlib.sha256(Path(ref).read_bytes()).hexdigest()
        hits = [r for r in rows if r[2] == h]
    if not hits:
        raise UsageError(f"file {quote(ref)} was never ingested into this study; expected a file name, "
                         "its sha256 (or a prefix of 8+ hex digits) or the file itself", parameters=('file',))
    if len(hits) > 1:
        raise UsageError(f"file {quote(ref)} names {len(hits)} ingested files "
                         f"({', '.join(r[2][:12] for r in hits[:4])}); give the sha256 instead", parameters=('file',))
    return hits[0]


def retract_file(path, ref: str, *, undo: bool = False) -> RetractResult:
    """Withdraw (or, with ``undo``, restore) every judgment one ingested file stored.

    Raises :class:`UsageError` when ``ref`` names no ingested file or several,
    and :class:`DataError` when restoring would collide with judgments stored
    since (the same ids or the same annotator and item).
    """
    with Study.open(path) as study, write(study.connection) as con:
        fid, name, sha, retracted = _find_file(con, str(ref))
        if undo:
            if retracted is None:
                raise UsageError(f"{shown(name)} is not retracted; nothing to restore", parameters=parameters_of(name))
            clash = con.execute(
                "SELECT r.id FROM retracted_judgments r JOIN judgments j ON j.id = r.id OR "
                "(r.item IS NOT NULL AND j.item = r.item AND coalesce(j.annotator, '') = coalesce(r.annotator, '')) "
                "WHERE r.file = ? LIMIT 1", (fid,)).fetchone()
            if clash:
                raise DataError(f"{shown(name)}: cannot restore: judgment {quote(clash[0])} has been stored "
                                f"again since "
                                "(from another file); retract that file first", parameters=parameters_of(name))
            n = con.execute(f"INSERT INTO judgments ({_JCOLS}) SELECT {_JCOLS} FROM retracted_judgments "
                            "WHERE file = ?", (fid,)).rowcount
            con.execute("DELETE FROM retracted_judgments WHERE file = ?", (fid,))
            con.execute("UPDATE files SET retracted = NULL WHERE id = ?", (fid,))
        else:
            if retracted is not None:
                raise UsageError(f"{shown(name)} was already retracted at {retracted}", parameters=parameters_of(name))
            at = now()
            n = con.execute(f"INSERT INTO retracted_judgments ({_JCOLS}, retracted) SELECT {_JCOLS}, ? "
                            "FROM judgments WHERE file = ?", (at, fid)).rowcount
            con.execute("DELETE FROM judgments WHERE file = ?", (fid,))
            con.execute("UPDATE files SET retracted = ? WHERE id = ?", (at, fid))
        _log(con, "restore" if undo else "retract", f"file {name}", f"{sha} ({n} judgments)")
    return RetractResult(name, sha, int(n), undo)
