"""Ingest: take judgments back into a study — idempotent, incremental, audited.

Re-running ``ingest`` on anything already stored is safe:

* a row whose judgment is already stored with the same verdict and reason is
  **already stored**: counted, not stored again (cumulative Label Studio
  exports, a re-run after a crash, the same annotation in another export type);
* a row whose judgment is stored with a *different* verdict or reason was
  **changed at the source** (an annotation edited in Label Studio, a judge
  re-run): by default the whole file is refused and the changes are listed;
  with ``accept_changes`` they replace the stored values and every replacement
  is kept in the ``judgment_edits`` audit table (old and new verdict and
  reason, file, time);
* rows without a verdict (blank CSV cells, skipped/cancelled annotations) are
  **skipped** and counted, never refused;
* a judge request that failed in transport (error file, HTTP error, expiry)
  leaves its item **unanswered** — stored in ``failures``, re-issuable with
  ``next-batch --retry-failed`` — never an invalid verdict.

All-or-nothing still holds for *invalid content*: one malformed row (unknown
item/system/prompt, a bad label, a duplicate inside the file) refuses the whole
file, and nothing from it is stored. A file is read whole and consistently: it
is hashed before and after reading and refused if it changed in between. A file
with exactly the content of an earlier one is a no-op.

Annotator identity: a source's own identity (a Label Studio user's email or
``ls-user:<id>``) is mapped to the study's annotator names (``--annotators``) by
the ``annotator_aliases`` table: explicit (``annotator_map``, also relabelling
what is stored), by name (the identity carries a planned name), learned from the
plan (its judgments in a file are all on items planned for one annotator) — a
learned mapping only when no other identity claims or already holds the name —
or as another identity of one user (see :mod:`planner.store.identity`). The raw
identity is kept in ``source_annotator``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from planner.errors import DataError, UsageError, quote
from planner.formats.jsonsafe import GZIP_MAGIC
from planner.store.db import now, write
from planner.store.identity import apply_explicit
from planner.store.ingest_rows import Change, Validator, classify, inserts
from planner.store.queries import Study

CHUNK = 5000
INGEST_CACHE = -32768  # sqlite page cache during ingest (negative = KiB): 32 MiB
CHANGE_EXAMPLES = 5


# ------------------------------------------------------------------ results
@dataclass(frozen=True)
class FileIngest:
    """What one file gave (or would give, in a dry run).

    ``rows`` new judgments stored; ``A``/``B``/``tie``/``invalid`` count them
    relative to their stored orientation, ``passed``/``failed`` acceptability
    verdicts; ``no_reason`` new non-tie, non-invalid judgments without a reason.
    ``already`` rows already stored unchanged; ``changed`` rows whose stored
    verdict/reason differs (``replaced`` of them applied with
    ``accept_changes``); ``skipped`` rows without a verdict by cause;
    ``unanswered`` transport failures recorded; ``aliases`` identities mapped to
    annotator names (``"ls-user:1 -> alice"``); ``notes`` anything else said.
    """

    path: str
    format: str
    sha256: str
    rows: int
    A: int
    B: int
    tie: int
    invalid: int
    passed: int
    failed: int
    no_reason: int
    stored: bool
    already: int = 0
    changed: int = 0
    replaced: int = 0
    skipped: dict = field(default_factory=dict)
    unanswered: int = 0
    aliases: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def new(self) -> int:
        return self.rows

    def summary(self, retry: str = "re-issue with next-batch --retry-failed") -> str:
        """One sentence: "48 new, 312 already stored, 2 skipped (blank), 1 unanswered"; ``retry`` says how to
        ask the unanswered again (``planner judge`` passes its own: rerunning it is what works there)."""
        parts = [f"{self.rows:,} new", f"{self.already:,} already stored"]
        if self.replaced:
            parts.append(f"{self.replaced:,} replaced (audited)")
        elif self.changed:
            parts.append(f"{self.changed:,} changed at the source")
        if self.skipped:
            parts.append(f"{sum(self.skipped.values()):,} skipped ("
                         + ", ".join(f"{k} {v:,}" for k, v in sorted(self.skipped.items())) + ")")
        if self.unanswered:
            parts.append(f"{self.unanswered:,} unanswered (transport failures; {retry})")
        return ", ".join(parts)


@dataclass(frozen=True)
class IngestResult:
    """Per-file results of :func:`ingest`."""

    files: tuple[FileIngest, ...]
    dry_run: bool

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def already(self) -> int:
        return sum(f.already for f in self.files)


def _hash_file(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    lines, gz = 0, None
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
                lines += chunk.count(b"\n")
                gz = chunk[:2] == GZIP_MAGIC if gz is None else gz
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return h.hexdigest(), 0 if gz else lines   # a gzip file's lines are not known until it is inflated


class _Problems(list):
    """Problem messages of one file: keeps the first 20 and counts the rest (bounded memory)."""

    KEEP = 20

    def __init__(self):
        super().__init__()
        self.total = 0

    def append(self, msg: str) -> None:
        self.total += 1
        if len(self) < self.KEEP:
            super().append(msg)

    def ordered(self) -> list[str]:
        def line(m: str) -> int:
            head = m.split(": ", 1)[0].rsplit(":", 1)
            return int(head[1]) if len(head) == 2 and head[1].isdigit() else 1 << 62  # file-level last
        return sorted(self, key=line)


# ------------------------------------------------------------------ one file
@dataclass
class _FileState:
    name: str
    file_id: int
    problems: _Problems = field(default_factory=_Problems)
    already: int = 0
    changes: list = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    unanswered: int = 0
    notes: list = field(default_factory=list)


class _Writer:
    """Buffers judgment rows and inserts them in chunks, classifying rows the store rejects."""

    def __init__(self, con, state: _FileState):
        self.con, self.state = con, state
        self.inserts = inserts(state.file_id)
        self.buf: list[tuple] = []
        self.wheres: list[str] = []
        self.width = 0

    def add(self, row: tuple, where: str) -> None:
        if len(row) != self.width:  # keep file order: flush when the row shape changes
            self.flush()
            self.width = len(row)
        self.buf.append(row)
        self.wheres.append(where)
        if len(self.buf) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if not self.buf:
            return
        con, sql = self.con, self.inserts[self.width]
        con.execute("SAVEPOINT chunk")
        try:
            con.executemany(sql, self.buf)
            con.execute("RELEASE chunk")
        except (sqlite3.IntegrityError, UnicodeEncodeError, OverflowError):
            con.execute("ROLLBACK TO chunk")
            con.execute("RELEASE chunk")
            for row, where in zip(self.buf, self.wheres):
                self._one(sql, row, where)
        self.buf.clear()
        self.wheres.clear()

    def _one(self, sql: str, row: tuple, where: str) -> None:
        st = self.state
        try:
            self.con.execute(sql, row)
            return
        except (UnicodeEncodeError, OverflowError) as exc:
            st.problems.append(f"{where}: a value the store cannot hold ({type(exc).__name__}); "
                               "expected UTF-8 text and numbers within 64-bit range")
            return
        except sqlite3.IntegrityError:
            pass
        got = classify(self.con, row, where, st.file_id)
        if got == "already":
            st.already += 1
        elif isinstance(got, Change):
            st.changes.append(got)
        else:
            st.problems.append(got)


def _unanswered(con, val: Validator, rec: dict, where: str, st: _FileState) -> str | None:
    """Record a transport failure for an issued item; returns a problem or None."""
    item = rec.get("item")
    if val.item(item) is None:
        return f"{where}: unknown item {quote(item)}; expected an item id issued by this study"
    error = str(rec.get("unanswered") or "failed")[:200]
    cur = con.execute("INSERT OR IGNORE INTO failures (item, file, error, source, at) VALUES (?, ?, ?, ?, ?)",
                      (item, st.file_id, error, rec.get("annotator"), now()))
    st.unanswered += cur.rowcount > 0
    return None


def _read_rows(con, val: Validator, reader, path: Path, options: dict, st: _FileState, progress, k: int,
               total_lines: int) -> None:
    writer = _Writer(con, st)
    last = 0
    name = st.name
    try:
        for line, rec, problem in reader.read(path, **options):
            if problem is not None:
                st.problems.append(problem)
                continue
            where = rec.get("where") or f"{name}:{line}"
            if "skip" in rec:
                st.skipped[str(rec["skip"])] += 1
                continue
            if "unanswered" in rec:
                problem = _unanswered(con, val, rec, where, st)
                if problem:
                    st.problems.append(problem)
                continue
            row = val.row(rec, where)
            if type(row) is tuple:
                writer.add(row, where)
                if progress is not None and isinstance(line, int) and line - last >= 50_000:
                    progress(k, line, total_lines)
                    last = line
            else:
                st.problems.append(row)
    except OSError as exc:
        st.problems.append(f"{name}: reading failed ({exc.strerror or exc}); nothing stored from this file")
    except RecursionError:
        st.problems.append(f"{name}: nesting too deep to read; expected the export as the tool wrote it")
    writer.flush()


def _apply_changes(con, st: _FileState) -> int:
    for c in st.changes:
        con.execute("UPDATE judgments SET verdict = ?, reason = ?, seconds = coalesce(?, seconds), "
                    "confidence = coalesce(?, confidence) WHERE id = ?",
                    (c.new_verdict, c.new_reason, c.seconds, c.confidence, c.jid))
        con.execute("INSERT INTO judgment_edits (judgment, old_verdict, new_verdict, old_reason, new_reason, file, at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (c.jid, c.old_verdict, c.new_verdict, c.old_reason, c.new_reason, st.file_id, now()))
    return len(st.changes)


def _changes_problem(st: _FileState) -> str:
    ex = "; ".join(f"{quote(c.jid)} {c.old_verdict} -> {c.new_verdict}"
                   + (f" (reason {quote(c.old_reason)} -> {quote(c.new_reason)})"
                      if c.old_reason != c.new_reason else "")
                   for c in st.changes[:CHANGE_EXAMPLES])
    more = f" and {len(st.changes) - CHANGE_EXAMPLES} more" if len(st.changes) > CHANGE_EXAMPLES else ""
    return (f"{st.name}: {len(st.changes)} stored judgment(s) changed at the source ({ex}{more}); "
            "refusing to overwrite them silently — re-run with `accept_changes` to apply them "
            "(every replacement is kept in the audit trail)")


def _file_ingest(path: str, fmt: str, sha: str, counts: dict[str, int], no_reason: int, stored: bool,
                 **rest) -> FileIngest:
    """A :class:`FileIngest` from the stored verdicts' counts (``{"A", "B", "tie", "invalid", "pass",
    "fail"}``: ``rows`` is their sum), by field name."""
    return FileIngest(path, fmt, sha, rows=sum(counts.values()), A=counts["A"], B=counts["B"], tie=counts["tie"],
                      invalid=counts["invalid"], passed=counts["pass"], failed=counts["fail"],
                      no_reason=no_reason, stored=stored, **rest)


def _ingest_file(con, sys_id, path: Path, reader, k: int, dry_run: bool, progress, options,
                 accept_changes: bool, amap: dict[str, str]) -> FileIngest:
    sha, total_lines = _hash_file(path)
    counts = {"A": 0, "B": 0, "tie": 0, "invalid": 0, "pass": 0, "fail": 0}
    with write(con, commit=not dry_run):
        hit = con.execute("SELECT name, ingested, rows, retracted FROM files WHERE sha256 = ?", (sha,)).fetchone()
        if hit and hit[3]:
            raise _Refused(_file_ingest(str(path), reader.name, sha, counts, 0, False), [
                f"{path.name}: this content was ingested as {hit[0]} and retracted at {hit[3]}; "
                f"restore it with `planner retract STUDY {hit[0]} --undo`"])
        if hit:
            note = f"identical to {hit[0]} (ingested {hit[1]}): nothing new"
            return _file_ingest(str(path), reader.name, sha, counts, 0, not dry_run, already=int(hit[2]),
                                notes=(note,))
        file_id = con.execute("INSERT INTO files (sha256, name, format, ingested) VALUES (?, ?, ?, ?)",
                              (sha, path.name, reader.name, now())).lastrowid
        con.execute(f"PRAGMA cache_size = {int(INGEST_CACHE)}")  # the id index stays in memory
        seq0 = con.execute("SELECT coalesce(max(seq), 0) FROM judgments").fetchone()[0]
        val = Validator(con, sys_id, amap)
        st = _FileState(path.name, file_id)
        _read_rows(con, val, reader, path, options, st, progress, k, total_lines)
        aliases, alias_notes = val.identities.learn()
        st.notes.extend(alias_notes)
        if _hash_file(path)[0] != sha:
            st.problems.append(f"{path.name}: the file changed while it was being read; nothing stored "
                               "(ingest it again once the tool has finished writing it)")
        replaced = 0
        if st.changes and not accept_changes:
            st.problems.append(_changes_problem(st))
        elif st.changes:
            replaced = _apply_changes(con, st)
        no_reason = rows = 0
        for v, n, nr in con.execute(
                "SELECT verdict, count(*), sum(reason IS NULL OR reason = '') FROM judgments "
                "WHERE seq > ? AND file = ? GROUP BY verdict", (seq0, file_id)):
            counts[v] = n
            rows += n
            if v not in ("tie", "invalid"):
                no_reason += nr
        res = _file_ingest(str(path), reader.name, sha, counts, no_reason, not st.problems and not dry_run,
                           already=st.already, changed=len(st.changes), replaced=replaced,
                           skipped=dict(st.skipped), unanswered=st.unanswered, aliases=tuple(aliases),
                           notes=tuple(st.notes))
        if st.problems:
            raise _Refused(res, st.problems)
        con.execute("UPDATE files SET rows = ? WHERE id = ?", (rows + st.already, file_id))
    if progress is not None:
        progress(k, total_lines, total_lines)
    return res


class _Refused(Exception):
    def __init__(self, result: FileIngest, problems):
        super().__init__("refused")
        self.result = result
        self.problems = problems


def _check_map(annotator_map: Mapping[str, str] | None) -> dict[str, str]:
    """``annotator_map`` as {identity: name}: identities as ingest reads them, names as `annotators` names."""
    from planner.names import IDENTITY_RULE, annotator_name_problem, identity_problem

    out = {}
    for k, v in (annotator_map or {}).items():
        if not isinstance(k, str) or not k.strip() or not isinstance(v, str) or not v.strip():
            raise UsageError(f"`annotator_map` entry {quote(k)}={quote(v)}; expected IDENTITY=NAME, both non-empty",
                             parameters=("annotator_map",))
        k, v = k.strip(), v.strip()
        if identity_problem(k):
            raise UsageError(f"`annotator_map`: identity {quote(k)} {identity_problem(k)}; expected {IDENTITY_RULE}",
                             parameters=("annotator_map",))
        if annotator_name_problem(v):
            raise UsageError(f"`annotator_map`: name {quote(v)} {annotator_name_problem(v)}",
                             parameters=("annotator_map",))
        out[k] = v
    return out


def ingest(path, files: Sequence, format: str | None = None, dry_run: bool = False,
           progress: Callable[[int, int, int], None] | None = None, baseline: str | None = None, *,
           accept_changes: bool = False, annotator_map: Mapping[str, str] | None = None,
           reader_options: Mapping[str, object] | None = None) -> IngestResult:
    """Ingest judgment files into a study: idempotent, incremental, all-or-nothing per file.

    Each file is read by the reader named ``format`` or auto-detected (see
    :data:`planner.formats.readers.READERS`), validated against the study
    (systems, prompts, items and their key) and stored in ONE transaction.
    Judgments already stored are skipped and counted; changed ones refuse the
    file unless ``accept_changes`` (then replaced and audited); rows without a
    verdict are skipped and counted; transport failures leave items unanswered.
    Files are processed in order; good files are stored even when a later file
    is refused.

    Parameters
    ----------
    path : path-like
        The study directory.
    files : sequence of path-like
    format : str, optional
        Force a reader (``--format``).
    dry_run : bool
        Validate and count, store nothing.
    progress : callable, optional
        ``progress(file_index, lines_done, lines_total)``, called every ~50,000 lines.
    baseline : str, optional
        The baseline system for arena-hard-auto lines without a ``baseline`` field.
    accept_changes : bool
        Apply judgments whose verdict or reason changed at the source (audited).
    annotator_map : mapping, optional
        Source identity (e.g. ``ls-user:3`` or an e-mail) → study annotator name,
        stored as an alias for this and later ingests.
    reader_options : mapping, optional
        Extra keyword options for the reader (e.g. ``tie_band`` for alpaca_eval).

    Raises
    ------
    DataError
        Listing up to 20 problems when a file was refused. Files before it stay stored.
    """
    from planner.formats.readers import detect_format

    paths = [Path(f) for f in files]
    for p in paths:
        if not p.is_file():
            raise DataError(f"{p}: file not found" if not p.exists() else f"{p}: not a file")
    readers = [detect_format(p, format) for p in paths]
    options = {"baseline": baseline, **dict(reader_options or {})}
    amap = _check_map(annotator_map)
    results: list[FileIngest] = []
    refused: list[tuple[Path, list, int]] = []
    with Study.open(path) as study:
        con = study.connection
        if amap and not dry_run:
            with write(con) as c:
                apply_explicit(c, amap)
        for k, (p, reader) in enumerate(zip(paths, readers)):
            try:
                res = _ingest_file(con, study.system_ids, p, reader, k, dry_run, progress, options, accept_changes,
                                   amap)
            except _Refused as exc:
                res = exc.result
                total = exc.problems.total if isinstance(exc.problems, _Problems) else len(exc.problems)
                refused.append((p, exc.problems, total))
            results.append(res)
    if refused:
        raise _refusal(paths, results, refused)
    return IngestResult(tuple(results), dry_run)


def _refusal(paths: list[Path], results: list[FileIngest], refused: list[tuple[Path, list, int]]) -> DataError:
    """The one error for refused files: which were refused and why, which were stored, the first problems."""
    stored = [f"{Path(r.path).name} ({r.rows} new)" for r in results if r.stored]

    def why(p, res, n):
        if res.changed and not res.replaced and n == 1:  # the only problem: edits at the source
            return f"{p.name} ({res.changed} judgment(s) changed at the source; `accept_changes` applies them)"
        return f"{p.name} ({n} problem{'s' if n != 1 else ''})"

    by_path = {r.path: r for r in results}
    msg = (f"{len(refused)} of {len(paths)} file(s) refused, nothing stored from "
           + ", ".join(why(p, by_path[str(p)], n) for p, _, n in refused)
           + (f"; stored: {', '.join(stored)}" if stored else ""))
    problems = [q for _, ps, _ in refused
                for q in (ps.ordered() if isinstance(ps, _Problems) else ps)][:_Problems.KEEP]
    return DataError(msg, problems, parameters=("accept_changes",))
