"""The study store: a directory with a human-readable config and a SQLite database.

A study is the unit users work in between annotation rounds::

    STUDY/study.json     systems, anchor, reason codes, QC rates, tie convention,
                         seed, max_words (edit by hand if you must; JSON)
    STUDY/study.sqlite   prompts, responses, batches + items (the secret key),
                         judgments, ingested file hashes, artifacts

The database uses the standard-library :mod:`sqlite3` in WAL mode with foreign
keys on and a busy timeout; every write is one ``BEGIN IMMEDIATE`` transaction
retried with back-off while another process holds the write lock, so a study is
fully updated or untouched (a SIGKILL mid-ingest leaves it exactly as before).
The schema carries a version (``meta.schema_version``); :data:`MIGRATIONS` maps
an old version to the SQL that lifts it by one, applied on open.

Accounting rules (never bend):

* every judgment is exactly one of ``A``, ``B``, ``tie``, ``invalid`` relative to
  its stored orientation ``(a, b)`` (acceptability judgments: ``pass``,
  ``fail``, ``invalid`` on a single system); invalid is stored and reported,
  never dropped or turned into a tie;
* the half-tie score is ``(wins + ties/2) / (wins + losses + ties)`` and is
  ``None`` (JSON ``null``) when there is no usable judgment — never 0.

Public API: :func:`init_study`, :class:`Study` (``Study.open(path)``),
:func:`ingest`, :func:`status`, :func:`half_tie_score`; records
:class:`Prompt`, :class:`Response`, :class:`Judgment`, :class:`BatchItem`,
:class:`BatchInfo`; results :class:`StudyInfo`, :class:`IngestResult`,
:class:`StatusResult`, :class:`AcceptabilityCounts`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from planner.counts import DEFAULT_STRATUM, Counts, half_tie_score  # noqa: F401 (re-exported)
from planner import study_check
from planner.errors import DataError, UsageError, quote

SCHEMA_VERSION = 1
CONFIG_NAME = "study.json"
DB_NAME = "study.sqlite"
DEFAULT_REASONS = ("accuracy", "completeness", "format", "concision", "safety")
DEFAULT_QC = {"attention": 0.05, "repeat": 0.05, "overlap": 0.15, "acceptability": 0.0}
ITEM_KINDS = ("regular", "attention", "repeat", "overlap", "swap", "acceptability")
JUDGMENT_KINDS = ITEM_KINDS + ("external",)
#: kinds that enter :meth:`Study.counts` by default: attention items (one side
#: deliberately broken), repeats (the same annotator again) and acceptability
#: items are quality control, not evidence about the systems.
COUNTED_KINDS = ("regular", "overlap", "swap", "external")
PENDING_KINDS = ("regular", "overlap", "swap")
BUSY_TIMEOUT_S = 30.0
WRITE_RETRIES = 8
CHUNK = 5000
INGEST_CACHE = -32768  # sqlite page cache during ingest (negative = KiB): 32 MiB

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE systems (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE prompts (
    id TEXT PRIMARY KEY, ord INTEGER NOT NULL, text TEXT NOT NULL, stratum TEXT,
    weight REAL, difficulty REAL, frozen INTEGER NOT NULL DEFAULT 0);
CREATE TABLE responses (
    prompt TEXT NOT NULL REFERENCES prompts(id), system INTEGER NOT NULL REFERENCES systems(id),
    text TEXT NOT NULL, length INTEGER NOT NULL, acceptable INTEGER,
    PRIMARY KEY (prompt, system));
CREATE TABLE batches (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, manifest TEXT NOT NULL);
CREATE TABLE items (
    id TEXT PRIMARY KEY, batch INTEGER NOT NULL REFERENCES batches(id),
    prompt TEXT NOT NULL REFERENCES prompts(id),
    left_sys INTEGER NOT NULL REFERENCES systems(id), right_sys INTEGER REFERENCES systems(id),
    kind TEXT NOT NULL, annotator TEXT, link TEXT REFERENCES items(id), order_group TEXT);
CREATE INDEX items_batch ON items(batch);
CREATE TABLE files (
    id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, name TEXT NOT NULL, format TEXT NOT NULL,
    rows INTEGER NOT NULL DEFAULT 0, ingested TEXT NOT NULL);
CREATE TABLE judgments (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, item TEXT REFERENCES items(id),
    prompt TEXT NOT NULL, a INTEGER NOT NULL REFERENCES systems(id), b INTEGER REFERENCES systems(id),
    verdict TEXT NOT NULL CHECK (verdict = 'A' OR verdict = 'B' OR verdict = 'tie' OR verdict = 'invalid'
                                 OR verdict = 'pass' OR verdict = 'fail'),
    a_position TEXT NOT NULL CHECK (a_position = 'left' OR a_position = 'right'),
    kind TEXT NOT NULL, annotator TEXT, reason TEXT, seconds REAL, confidence REAL,
    file INTEGER NOT NULL REFERENCES files(id));
CREATE UNIQUE INDEX judgments_item_annotator ON judgments(item, coalesce(annotator, ''))
    WHERE item IS NOT NULL;
CREATE TABLE artifacts (name TEXT PRIMARY KEY, data BLOB NOT NULL, saved TEXT NOT NULL);
"""

#: schema version v -> SQL that upgrades a v database to v + 1 (applied in order on open).
MIGRATIONS: dict[int, str] = {}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


# ------------------------------------------------------------------- records
@dataclass(frozen=True)
class Prompt:
    """A prompt: ``weight`` is its production frequency (relative), ``frozen``
    marks prompts that must be used first (e.g. a regression set)."""

    id: str
    text: str
    stratum: str | None = None
    weight: float | None = None
    difficulty: float | None = None
    frozen: bool = False


@dataclass(frozen=True)
class Response:
    """A system's response to a prompt; ``length`` in characters; ``acceptable``
    is the optional absolute label from the responses file (None = unlabelled)."""

    prompt: str
    system: str
    text: str
    length: int
    acceptable: bool | None = None


@dataclass(frozen=True)
class Judgment:
    """One stored judgment.

    ``verdict`` is ``A`` (system ``a`` won), ``B``, ``tie`` or ``invalid`` —
    or ``pass``/``fail``/``invalid`` for ``kind == "acceptability"`` (then
    ``b`` is None). ``a_position`` says where ``a`` was shown (``left`` = first).
    ``item`` is the batch item (None for external data), ``batch`` its batch
    id, ``source`` the ingested file name, ``seconds`` annotator time in
    seconds, ``confidence`` the source's strength (arena-hard: 1.0 ``>>``,
    0.5 ``>``).
    """

    id: str
    item: str | None
    prompt: str
    stratum: str
    a: str
    b: str | None
    verdict: str
    a_position: str
    kind: str
    annotator: str | None
    reason: str | None
    seconds: float | None
    confidence: float | None
    source: str
    batch: int | None


@dataclass(frozen=True)
class BatchItem:
    """One item of an issued batch (the key: item id → prompt, left, right).

    ``right`` is None for single-response ``acceptability`` items. ``link`` is
    the original item id for ``repeat``/``swap`` items; ``order_group`` groups
    items that belong together (e.g. both orders of one comparison).
    """

    item_id: str
    prompt: str
    left: str
    right: str | None
    kind: str = "regular"
    annotator: str | None = None
    link: str | None = None
    order_group: str | None = None


@dataclass(frozen=True)
class BatchInfo:
    """An issued batch: items issued, items with at least one judgment, the rest pending."""

    id: int
    created: str
    manifest: dict
    issued: int
    returned: int
    pending: int


@dataclass(frozen=True)
class StudyInfo:
    """What :func:`init_study` created."""

    path: str
    systems: tuple[str, ...]
    anchor: str | None
    prompts: int
    responses: int
    strata: tuple[str, ...]
    missing_responses: int
    config: dict


@dataclass(frozen=True)
class AcceptabilityCounts:
    """Pass/fail/invalid acceptability judgments, arrays of shape (n_systems, n_strata)."""

    systems: tuple[str, ...]
    strata: tuple[str, ...]
    passed: np.ndarray
    failed: np.ndarray
    invalid: np.ndarray

    def pass_rate(self) -> list[float | None]:
        """Pass rate per system pooled over strata (None when no pass/fail)."""
        p, f = self.passed.sum(axis=1), self.failed.sum(axis=1)
        return [None if p[i] + f[i] == 0 else float(p[i] / (p[i] + f[i])) for i in range(len(self.systems))]


# ------------------------------------------------------------------- connection
def _db_path(path) -> Path:
    return Path(path) / DB_NAME


def _connect(db: Path) -> sqlite3.Connection:
    """Open an existing study database (never creates one: ``mode=rw``)."""
    try:
        con = sqlite3.connect(f"{Path(db).absolute().as_uri()}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S,
                              isolation_level=None)
    except sqlite3.Error as exc:
        raise DataError(f"{db}: cannot open the study database ({exc})") from None
    try:
        con.execute("PRAGMA foreign_keys = ON")
        con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        con.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        con.close()
        raise DataError(f"{db}: not a planner study database ({exc})") from None
    return con


@contextmanager
def _write(con: sqlite3.Connection, *, commit: bool = True):
    """One write transaction (``BEGIN IMMEDIATE``), retried while the study is busy.

    Rolls back on any exception (and when ``commit`` is False, e.g. dry runs).
    """
    for attempt in range(WRITE_RETRIES):
        try:
            con.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if attempt == WRITE_RETRIES - 1:
                raise DataError(f"the study database is busy (another process is writing): {exc}") from None
            time.sleep(min(0.05 * 2 ** attempt, 2.0))
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    else:
        con.execute("COMMIT" if commit else "ROLLBACK")


# ------------------------------------------------------------------- the study
class Study:
    """An open study. Use ``with Study.open(path) as study: ...``.

    Attributes
    ----------
    path : Path
        The study directory.
    config : dict
        The parsed ``study.json`` (systems, anchor, reasons, qc rates, tie
        convention, seed, max_words).
    systems : tuple of str
        System names in config order; Counts indices follow this order.
    anchor : str or None
    """

    def __init__(self, path, con: sqlite3.Connection, config: dict):
        self.path = Path(path)
        self._con = con
        self.config = config
        rows = con.execute("SELECT id, name FROM systems ORDER BY id").fetchall()
        self._sys_id = {name: i for i, name in rows}
        self._sys_name = {i: name for i, name in rows}
        self.systems = tuple(name for _, name in rows)
        self.anchor = config.get("anchor")

    # ------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, path) -> "Study":
        """Open an existing study (applies pending schema migrations)."""
        path = Path(path)
        cfg_path, db = path / CONFIG_NAME, _db_path(path)
        if not cfg_path.is_file() or not db.is_file():
            raise DataError(f"{path}: not a study (expected {CONFIG_NAME} and {DB_NAME}; run `planner init` first)")
        config = study_check.read_config(cfg_path)
        study_check.check_database_file(db)
        con = _connect(db)
        try:
            version = int(con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
            study_check.check_tables(con, db)
        except (sqlite3.DatabaseError, TypeError, ValueError) as exc:
            con.close()
            raise DataError(f"{db}: not a planner study database ({exc})") from None
        except DataError:
            con.close()
            raise
        if version > SCHEMA_VERSION:
            con.close()
            raise DataError(f"{db}: schema version {version} is newer than this planner ({SCHEMA_VERSION}); upgrade planner")
        while version < SCHEMA_VERSION:
            with _write(con):
                for stmt in MIGRATIONS[version].split(";"):
                    if stmt.strip():
                        con.execute(stmt)
                version += 1
                con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
        return cls(path, con, config)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Study":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ prompts etc.
    def strata(self) -> tuple[str, ...]:
        """Stratum names in prompt order; a prompt without a stratum is in ``"all"``.

        ``("all",)`` when the study has no prompts; ``"all"`` is appended when
        judgments exist on prompts the study does not hold.
        """
        rows = self._con.execute(
            "SELECT coalesce(stratum, ?) FROM prompts GROUP BY 1 ORDER BY min(ord)", (DEFAULT_STRATUM,)).fetchall()
        out = [r[0] for r in rows]
        if DEFAULT_STRATUM not in out and (not out or self._con.execute(
                "SELECT 1 FROM judgments WHERE prompt NOT IN (SELECT id FROM prompts) LIMIT 1").fetchone()):
            out.append(DEFAULT_STRATUM)
        return tuple(out)

    def prompts(self) -> list[Prompt]:
        """All prompts in file order."""
        return [Prompt(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in self._con.execute(
            "SELECT id, text, stratum, weight, difficulty, frozen FROM prompts ORDER BY ord")]

    def _responses(self, where: str = "", args: tuple = ()) -> list[Response]:
        return [Response(r[0], self._sys_name[r[1]], r[2], r[3], None if r[4] is None else bool(r[4]))
                for r in self._con.execute(
                    "SELECT r.prompt, r.system, r.text, r.length, r.acceptable FROM responses r "
                    "JOIN prompts p ON p.id = r.prompt " + where + " ORDER BY p.ord, r.system", args)]

    def responses(self) -> list[Response]:
        """All responses, by prompt order then system order."""
        return self._responses()

    def response(self, prompt_id: str, system: str) -> Response | None:
        """The response of ``system`` to ``prompt_id``, or None when there is none."""
        sid = self._sys_id.get(system)
        if sid is None:
            raise DataError(f"unknown system {system!r}; expected one of {', '.join(self.systems)}")
        got = self._responses("WHERE r.prompt = ? AND r.system = ?", (prompt_id, sid))
        return got[0] if got else None

    # ------------------------------------------------------------ counts
    def _strata_index(self, by_stratum: bool):
        strata = self.strata() if by_stratum else (DEFAULT_STRATUM,)
        return strata, {s: i for i, s in enumerate(strata)}

    def counts(self, by_stratum: bool = False, kinds: Sequence[str] = COUNTED_KINDS) -> Counts:
        """Aggregated pairwise counts, cell ``a`` = system shown left/first, ``b`` = right.

        Parameters
        ----------
        by_stratum : bool
            Split cells by the prompt's stratum (``"all"`` for prompts without
            one); otherwise one stratum ``"all"``.
        kinds : sequence of str
            Judgment kinds counted; default :data:`COUNTED_KINDS` (regular,
            overlap, swap, external — QC kinds excluded).
        """
        strata, sidx = self._strata_index(by_stratum)
        q = (f"""SELECT CASE WHEN j.a_position='right' THEN j.b ELSE j.a END,
                        CASE WHEN j.a_position='right' THEN j.a ELSE j.b END,
                        coalesce(p.stratum, ?),
                        CASE j.verdict WHEN 'A' THEN (j.a_position='right')
                                       WHEN 'B' THEN (j.a_position='left')
                                       WHEN 'tie' THEN 2 ELSE 3 END,
                        count(*)
                 FROM judgments j LEFT JOIN prompts p ON p.id = j.prompt
                 WHERE j.b IS NOT NULL AND j.kind IN ({','.join('?' * len(kinds))})
                 GROUP BY 1, 2, 3, 4""")
        return self._aggregate(q, (DEFAULT_STRATUM, *kinds), strata, sidx, by_stratum, outcome=True)

    def _aggregate(self, q, args, strata, sidx, by_stratum, outcome: bool) -> Counts:
        rows = self._con.execute(q, args).fetchall()
        pos = {sid: i for i, sid in enumerate(self._sys_id.values())}
        if not rows:
            return Counts.empty(self.systems, strata)
        n = np.array([r[-1] for r in rows], dtype=np.int64)
        a = np.repeat([pos[r[0]] for r in rows], n)
        b = np.repeat([pos[r[1]] for r in rows], n)
        st = np.repeat([sidx[r[2]] if by_stratum else 0 for r in rows], n)
        o = np.repeat([int(r[3]) if outcome else 2 for r in rows], n)
        return Counts.from_arrays(self.systems, a, b, o, st, strata)

    def pending_counts(self, by_stratum: bool = False) -> Counts:
        """Issued-but-unreturned pairwise items (kinds regular, overlap, swap) per cell.

        Convention: the number of pending items of a cell is in ``ties`` (so
        ``.usable`` and ``.pair_matrix()`` count them); the other fields are 0.
        An item is pending while it has no judgment at all.
        """
        strata, sidx = self._strata_index(by_stratum)
        q = (f"""SELECT i.left_sys, i.right_sys, coalesce(p.stratum, ?), 2, count(*)
                 FROM items i JOIN prompts p ON p.id = i.prompt
                 WHERE i.right_sys IS NOT NULL AND i.kind IN ({','.join('?' * len(PENDING_KINDS))})
                   AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.item = i.id)
                 GROUP BY 1, 2, 3""")
        return self._aggregate(q, (DEFAULT_STRATUM, *PENDING_KINDS), strata, sidx, by_stratum, outcome=False)

    def acceptability_counts(self, by_stratum: bool = False) -> AcceptabilityCounts:
        """Pass/fail/invalid acceptability verdicts per system (and stratum)."""
        strata, sidx = self._strata_index(by_stratum)
        pos = {sid: i for i, sid in enumerate(self._sys_id.values())}
        arr = np.zeros((3, len(self.systems), len(strata)), dtype=np.int64)
        code = {"pass": 0, "fail": 1, "invalid": 2}
        for sid, st, verdict, n in self._con.execute(
                "SELECT j.a, coalesce(p.stratum, ?), j.verdict, count(*) FROM judgments j "
                "LEFT JOIN prompts p ON p.id = j.prompt WHERE j.kind = 'acceptability' GROUP BY 1, 2, 3",
                (DEFAULT_STRATUM,)):
            arr[code[verdict], pos[sid], sidx[st] if by_stratum else 0] += n
        return AcceptabilityCounts(self.systems, strata, arr[0], arr[1], arr[2])

    # ------------------------------------------------------------ judgments
    def judgments(self) -> Iterator[Judgment]:
        """Every stored judgment in ingest order (streamed)."""
        names = self._sys_name
        cur = self._con.execute(
            """SELECT j.id, j.item, j.prompt, coalesce(p.stratum, ?), j.a, j.b, j.verdict, j.a_position, j.kind,
                      j.annotator, j.reason, j.seconds, j.confidence, f.name, i.batch
               FROM judgments j JOIN files f ON f.id = j.file LEFT JOIN prompts p ON p.id = j.prompt
               LEFT JOIN items i ON i.id = j.item ORDER BY j.seq""", (DEFAULT_STRATUM,))
        for r in cur:
            yield Judgment(r[0], r[1], r[2], r[3], names[r[4]], None if r[5] is None else names[r[5]], *r[6:])

    def pair_prompt_usage(self) -> dict[tuple[str, str], frozenset[str]]:
        """Prompts already judged or issued for each unordered pair.

        Keys are ``(x, y)`` with ``x`` before ``y`` in :attr:`systems`; values the
        prompt ids (any kind, any orientation, returned or pending).
        """
        out: dict[tuple[str, str], set[str]] = {}
        order = {s: i for i, s in enumerate(self.systems)}
        for x, y, prompt in self._con.execute(
                "SELECT a, b, prompt FROM judgments WHERE b IS NOT NULL UNION "
                "SELECT left_sys, right_sys, prompt FROM items WHERE right_sys IS NOT NULL"):
            u, v = self._sys_name[x], self._sys_name[y]
            key = (u, v) if order[u] < order[v] else (v, u)
            out.setdefault(key, set()).add(prompt)
        return {k: frozenset(v) for k, v in out.items()}

    def annotated_judgments(self, limit: int) -> tuple[list, bool]:
        """The latest ``limit`` judgments that name an annotator, oldest first, and whether capped.

        Returns :class:`planner.diagnostics.JudgmentRecord` objects (the fields
        annotator QC needs), read in one query.
        """
        from planner.diagnostics import JudgmentRecord

        names = self._sys_name
        rows = self._con.execute(
            """SELECT j.id, j.item, j.prompt, j.a, j.b, j.verdict, j.a_position, j.kind, j.annotator,
                      j.reason, j.seconds, j.confidence
               FROM judgments j WHERE j.annotator IS NOT NULL ORDER BY j.seq DESC LIMIT ?""",
            (limit + 1,)).fetchall()
        capped = len(rows) > limit
        rows = rows[:limit][::-1]
        out = [JudgmentRecord(a=names[r[3]], b=None if r[4] is None else names[r[4]], verdict=r[5], id=r[0],
                              item=r[1], prompt=r[2], a_position=r[6], kind=r[7], annotator=r[8], reason=r[9],
                              seconds=r[10], confidence=r[11]) for r in rows]
        return out, capped

    # ------------------------------------------------------------ batches
    def record_batch(self, manifest: dict, items: Sequence[BatchItem]) -> int:
        """Record an issued batch and its key in ONE transaction; returns the batch id.

        Raises :class:`DataError` (nothing stored) on unknown systems/prompts,
        ``left == right``, a missing ``right`` on a pairwise item, an unknown
        kind or a duplicate item id.
        """
        problems = []
        prompts = {r[0] for r in self._con.execute("SELECT id FROM prompts")}
        seen: set[str] = set()
        rows = []
        for k, it in enumerate(items):
            where = f"item {k} ({it.item_id!r})"
            if it.kind not in ITEM_KINDS:
                problems.append(f"{where}: kind {it.kind!r}; expected one of {', '.join(ITEM_KINDS)}")
            if it.item_id in seen:
                problems.append(f"{where}: duplicate item id")
            seen.add(it.item_id)
            if it.prompt not in prompts:
                problems.append(f"{where}: unknown prompt {it.prompt!r}")
            ids = []
            for side in ("left", "right"):
                name = getattr(it, side)
                if name is None:
                    ids.append(None)
                    if side == "left" or it.kind != "acceptability":
                        problems.append(f"{where}: {side} system missing; only acceptability items have one system")
                elif name not in self._sys_id:
                    problems.append(f"{where}: unknown {side} system {name!r}; expected one of {', '.join(self.systems)}")
                    ids.append(None)
                else:
                    ids.append(self._sys_id[name])
            if it.right is not None and it.left == it.right:
                problems.append(f"{where}: left == right ({it.left!r}); a system cannot be compared with itself")
            if it.kind == "acceptability" and it.right is not None:
                problems.append(f"{where}: acceptability items show one system; right must be None")
            rows.append((it.item_id, it.prompt, ids[0], ids[1], it.kind, it.annotator, it.link, it.order_group))
        if problems:
            raise DataError(f"batch not recorded: {len(problems)} problem(s) in its items", problems)
        with _write(self._con) as con:
            clash = [r[0] for r in con.execute(
                f"SELECT id FROM items WHERE id IN ({','.join('?' * min(len(rows), 900))})",
                [r[0] for r in rows[:900]])] if rows else []
            if clash:
                raise DataError(f"batch not recorded: item ids already issued: {', '.join(clash[:5])}")
            cur = con.execute("INSERT INTO batches (created, manifest) VALUES (?, ?)",
                              (_now(), json.dumps(manifest, sort_keys=True, default=str)))
            batch_id = cur.lastrowid
            try:
                # links may point to items of the same batch: insert originals first
                con.execute("PRAGMA defer_foreign_keys = ON")
                con.executemany("INSERT INTO items (id, batch, prompt, left_sys, right_sys, kind, annotator, link, "
                                "order_group) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                [(r[0], batch_id, *r[1:]) for r in rows])
            except sqlite3.IntegrityError as exc:
                raise DataError(f"batch not recorded: {exc} (an item id already exists or a link is unknown)") from None
        return int(batch_id)

    def batches(self) -> list[BatchInfo]:
        """Every batch with its manifest and issued / returned / pending item counts."""
        out = []
        for bid, created, manifest, issued, returned in self._con.execute(
                """SELECT b.id, b.created, b.manifest, count(i.id),
                          coalesce(sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item = i.id)), 0)
                   FROM batches b LEFT JOIN items i ON i.batch = b.id GROUP BY b.id ORDER BY b.id"""):
            out.append(BatchInfo(bid, created, json.loads(manifest), issued, returned, issued - returned))
        return out

    def items(self, batch: int | None = None) -> list[BatchItem]:
        """Issued items (of one batch or all), in insertion order."""
        q = "SELECT id, prompt, left_sys, right_sys, kind, annotator, link, order_group FROM items"
        rows = self._con.execute(q + (" WHERE batch = ?" if batch is not None else "") + " ORDER BY rowid",
                                 (batch,) if batch is not None else ())
        n = self._sys_name
        return [BatchItem(r[0], r[1], n[r[2]], None if r[3] is None else n[r[3]], *r[4:]) for r in rows]

    # ------------------------------------------------------------ artifacts
    def save_artifact(self, name: str, data: bytes) -> None:
        """Store (or replace) a named blob, e.g. ``posterior.nc`` or a manifest."""
        with _write(self._con) as con:
            con.execute("INSERT OR REPLACE INTO artifacts (name, data, saved) VALUES (?, ?, ?)",
                        (name, sqlite3.Binary(bytes(data)), _now()))

    def load_artifact(self, name: str) -> bytes | None:
        """The blob saved under ``name``, or None."""
        row = self._con.execute("SELECT data FROM artifacts WHERE name = ?", (name,)).fetchone()
        return None if row is None else bytes(row[0])


# ------------------------------------------------------------------- init
def _read_rows(path: Path, what: str):
    from planner.formats.readers import iter_table

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: {what} file not found")
    problems, rows = [], []
    for line, row, problem in iter_table(path):
        if problem:
            problems.append(problem)
        else:
            rows.append((line, row))
    return rows, problems


def _parse_float(v, where, field_name, problems):
    if v is None or v == "":
        return None
    try:
        f = float(v)
        if not np.isfinite(f) or f < 0:
            raise ValueError
        return f
    except (TypeError, ValueError, OverflowError):
        problems.append(f"{where}: {field_name} {quote(v)}; expected a finite number >= 0")
        return None


def _parse_bool(v, where, field_name, problems):
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "y", "pass"):
        return True
    if s in ("0", "false", "no", "n", "fail"):
        return False
    problems.append(f"{where}: {field_name} {quote(v)}; expected true/false (or 1/0, yes/no)")
    return None


def _load_prompts(path: Path) -> tuple[list[tuple], list[str]]:
    rows, problems = _read_rows(path, "prompts")
    out, seen = [], set()
    for line, r in rows:
        where = f"{Path(path).name}:{line}"
        pid, text = r.get("id"), r.get("text")
        if pid is None or text is None or str(pid).strip() == "":
            problems.append(f"{where}: missing id or text; expected columns id, text")
            continue
        why = study_check.id_problem(pid) or study_check.text_problem(text)
        if why or not isinstance(text, (str, int, float)) or isinstance(text, bool):
            problems.append(f"{where}: {'id' if study_check.id_problem(pid) else 'text'} "
                            f"{quote(pid if study_check.id_problem(pid) else text)} {why or 'is not text'}")
            continue
        pid = str(pid).strip()
        if pid in seen:
            problems.append(f"{where}: duplicate prompt id {quote(pid)}")
            continue
        seen.add(pid)
        stratum = r.get("stratum")
        stratum = None if stratum is None or str(stratum).strip() == "" else str(stratum).strip()
        if stratum is not None and study_check.id_problem(stratum):
            problems.append(f"{where}: stratum {quote(stratum)} {study_check.id_problem(stratum)}")
            continue
        out.append((pid, len(out), str(text), stratum,
                    _parse_float(r.get("weight"), where, "weight", problems),
                    _parse_float(r.get("difficulty"), where, "difficulty", problems),
                    int(bool(_parse_bool(r.get("frozen"), where, "frozen", problems)))))
    return out, problems


def init_study(path, systems: Sequence[str] | None = None, anchor: str | None = None,
               prompts_file=None, responses_file=None, reasons: Sequence[str] = DEFAULT_REASONS,
               seed: int = 0, qc: dict | None = None, tie_convention: str = "half",
               max_words: int = 400) -> StudyInfo:
    """Create a study directory with ``study.json`` and ``study.sqlite``.

    Parameters
    ----------
    path : path-like
        The study directory; must not already hold a study.
    systems : sequence of str, optional
        System names; when omitted they are inferred from the responses file
        (first-appearance order). When given, responses of other systems are an error.
    anchor : str, optional
        The reference system (must be one of ``systems``).
    prompts_file : path-like, optional
        CSV or JSONL with ``id``, ``text`` and optional ``stratum``, ``weight``,
        ``difficulty``, ``frozen``.
    responses_file : path-like, optional
        JSONL (or CSV) with ``prompt``, ``system``, ``text`` and optional
        ``acceptable`` (true/false); needs ``prompts_file``.
    reasons : sequence of str
        Reason codes annotators may give.
    seed : int
        The study's default seed (for next-batch).
    qc : dict, optional
        QC rates (fractions of a batch): attention, repeat, overlap, acceptability.
    tie_convention : str
        ``"half"``: a tie counts half a win in the half-tie score.
    max_words : int
        Default limit of words per response shown to annotators.

    Raises
    ------
    DataError
        Bad rows in the files (up to 20 named ``file:line``); nothing is created.
    UsageError
        Fewer than two systems, an anchor not among them, an existing study.
    """
    from planner import limits

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"STUDY ({quote(str(path))}) is an existing file; expected a new directory for the study")
    if any(os.path.lexists(path / n) for n in (CONFIG_NAME, DB_NAME)):
        raise UsageError(f"STUDY ({quote(str(path))}) already holds a study; choose a new directory")
    limits.check_output_dir("STUDY", path)
    if responses_file is not None and prompts_file is None:
        raise UsageError("--responses needs --prompts (responses refer to prompt ids)")
    limits.check_input_file("--prompts", prompts_file)
    limits.check_input_file("--responses", responses_file)
    limits.check_seed("--seed", seed)
    limits.check_int("--max-words", max_words, 1, 10 ** 6)
    for r in reasons:
        if study_check.name_problem(r):
            raise UsageError(f"--reasons: reason code {quote(r)} {study_check.name_problem(r)}; "
                             f"allowed: {study_check.NAME_RULE}")
    if len(set(reasons)) != len(reasons):
        raise UsageError(f"--reasons ({quote(','.join(reasons))}) must be distinct")
    problems: list[str] = []
    prompts: list[tuple] = []
    if prompts_file is not None:
        prompts, problems = _load_prompts(Path(prompts_file))
    pids = {p[0] for p in prompts}
    given = [s.strip() for s in systems] if systems else []
    if len(set(given)) != len(given) or any(not s for s in given):
        raise UsageError(f"--systems ({quote(','.join(given))}) must be distinct, non-empty names")
    for s in given:
        if study_check.name_problem(s):
            raise UsageError(f"--systems: system name {quote(s)} {study_check.name_problem(s)}; "
                             f"allowed: {study_check.NAME_RULE}")
    names = list(given)
    responses: list[tuple] = []
    if responses_file is not None:
        rows, rproblems = _read_rows(Path(responses_file), "responses")
        problems.extend(rproblems)
        seen = set()
        for line, r in rows:
            where = f"{Path(responses_file).name}:{line}"
            p, s, t = r.get("prompt"), r.get("system"), r.get("text")
            if p is None or s is None or t is None:
                problems.append(f"{where}: missing prompt, system or text; expected all three")
                continue
            why = (study_check.id_problem(p) and f"prompt {quote(p)} {study_check.id_problem(p)}"
                   or study_check.id_problem(s) and f"system {quote(s)} {study_check.id_problem(s)}"
                   or study_check.text_problem(t) and f"text {study_check.text_problem(t)}")
            if why:
                problems.append(f"{where}: {why}")
                continue
            p, s = str(p).strip(), str(s).strip()
            if s not in names and study_check.name_problem(s):
                problems.append(f"{where}: system name {quote(s)} {study_check.name_problem(s)}; "
                                f"allowed: {study_check.NAME_RULE}")
                continue
            if p not in pids:
                problems.append(f"{where}: unknown prompt {quote(p)}; expected an id from the prompts file")
                continue
            if s not in names:
                if given:
                    problems.append(f"{where}: unknown system {quote(s)}; expected one of {', '.join(given)}")
                    continue
                names.append(s)
            if (p, s) in seen:
                problems.append(f"{where}: duplicate response for prompt {quote(p)}, system {quote(s)}")
                continue
            seen.add((p, s))
            acc = _parse_bool(r.get("acceptable"), where, "acceptable", problems)
            responses.append((p, s, str(t), len(str(t)), None if acc is None else int(acc)))
    if len(problems) == 1:
        raise DataError(f"study not created: {problems[0]}")
    if problems:
        raise DataError(f"study not created: {len(problems)} problem(s) in the input files", problems)
    if len(names) < 2:
        raise UsageError(f"--systems ({','.join(names) or 'none'}) must name at least two systems "
                         "(or give --responses to infer them)")
    if anchor is not None and anchor not in names:
        shown = anchor if len(anchor) <= 80 and anchor.isprintable() else quote(anchor)
        raise UsageError(f"--anchor ({shown}) must be one of the systems: {', '.join(names)}")
    if int(max_words) < 1:
        raise UsageError(f"--max-words ({max_words}) must be >= 1")
    if tie_convention != "half":
        raise UsageError(f"tie convention ({tie_convention!r}) must be 'half'")
    rates = dict(DEFAULT_QC)
    rates.update(qc or {})
    config = {"planner_study": 1, "systems": names, "anchor": anchor, "reasons": list(reasons),
              "qc": rates, "tie_convention": tie_convention, "seed": int(seed), "max_words": int(max_words),
              "created": _now()}
    try:
        _create_study_files(path, config, names, prompts, responses)
    except OSError as exc:
        raise UsageError(f"STUDY ({quote(str(path))}) cannot be created: {exc.strerror or exc}") from None
    strata = tuple(dict.fromkeys(p[3] or DEFAULT_STRATUM for p in prompts)) or (DEFAULT_STRATUM,)
    have = {(p, s) for p, s, *_ in responses}
    missing = len(prompts) * len(names) - len(have) if responses else 0
    return StudyInfo(str(path), tuple(names), anchor, len(prompts), len(responses), strata, missing, config)


def _create_study_files(path: Path, config: dict, names, prompts, responses) -> None:
    """Write both files as temporaries, then move the database and the config into place
    (init_study's last step); on an OS error the temporaries are removed."""
    path.mkdir(parents=True, exist_ok=True)
    tmp_db, tmp_cfg = path / (DB_NAME + ".tmp"), path / (CONFIG_NAME + ".tmp")
    try:
        _write_new_study(tmp_db, tmp_cfg, config, names, prompts, responses)
    except BaseException:
        for t in (tmp_db, tmp_cfg):
            if t.exists():
                t.unlink()
        raise
    os.replace(tmp_db, _db_path(path))
    os.replace(tmp_cfg, path / CONFIG_NAME)


def _write_new_study(tmp_db: Path, tmp_cfg: Path, config: dict, names, prompts, responses) -> None:
    if tmp_db.exists():
        tmp_db.unlink()
    tmp_cfg.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    con = sqlite3.connect(str(tmp_db), isolation_level=None)
    try:
        con.execute("PRAGMA foreign_keys = ON")
        con.execute("BEGIN")
        for stmt in _SCHEMA.split(";"):
            if stmt.strip():
                con.execute(stmt)
        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        con.executemany("INSERT INTO systems (id, name) VALUES (?, ?)", list(enumerate(names)))
        con.executemany("INSERT INTO prompts (id, ord, text, stratum, weight, difficulty, frozen) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)", prompts)
        sid = {n: i for i, n in enumerate(names)}
        con.executemany("INSERT INTO responses (prompt, system, text, length, acceptable) VALUES (?, ?, ?, ?, ?)",
                        [(p, sid[s], t, n, a) for p, s, t, n, a in responses])
        con.execute("COMMIT")
        con.execute("PRAGMA journal_mode = WAL")
    finally:
        con.close()


# ------------------------------------------------------------------- ingest
@dataclass(frozen=True)
class FileIngest:
    """What one file gave (or would give, in a dry run).

    ``A``/``B``/``tie``/``invalid`` count pairwise judgments relative to their
    stored orientation; ``passed``/``failed`` acceptability verdicts (their
    invalid ones are in ``invalid`` too); ``no_reason`` counts non-tie,
    non-invalid judgments without a reason code.
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


@dataclass(frozen=True)
class IngestResult:
    """Per-file results of :func:`ingest`."""

    files: tuple[FileIngest, ...]
    dry_run: bool

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)


def _hash_file(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    lines = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            lines += chunk.count(b"\n")
    return h.hexdigest(), lines


class _Problems(list):
    """Problem messages of one file: keeps the first 20 and counts the rest (bounded memory).

    Conflicts (duplicate ids) surface when a chunk is flushed, after later
    rows were checked; :meth:`ordered` sorts the kept messages by line.
    """

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
            return int(head[1]) if len(head) == 2 and head[1].isdigit() else 0
        return sorted(self, key=line)


class _Validator:
    """Turns reader records into judgment rows for one file, collecting problems."""

    _POS = {"left": "A", "right": "B", "tie": "tie", "invalid": "invalid", "pass": "pass", "fail": "fail"}

    def __init__(self, con: sqlite3.Connection, sys_id: dict[str, int]):
        self.sys_id = sys_id
        self.prompt_ids = {r[0] for r in con.execute("SELECT id FROM prompts")}
        self.prompt_by_text = {}
        self._con = con
        self._items: dict[str, tuple | None] = {}
        self.systems_txt = ", ".join(sys_id)

    def prompt_of_text(self, text):
        if not self.prompt_by_text:
            self.prompt_by_text = {t: i for i, t in self._con.execute("SELECT id, text FROM prompts")}
        return self.prompt_by_text.get(text)

    def item(self, item_id):
        if item_id not in self._items:
            self._items[item_id] = self._con.execute(
                "SELECT prompt, left_sys, right_sys, kind, annotator FROM items WHERE id = ?", (item_id,)).fetchone()
        return self._items[item_id]

    def row(self, rec: dict, name: str, line: int, file_id: int):
        """A tuple for the judgments INSERT, or a problem string naming ``name:line``."""
        if "a" not in rec:  # positional: translate with the batch key
            it = self.item(rec["item"])
            if it is None:
                return f"{name}:{line}: unknown item {rec['item']!r}; expected an item id issued by this study"
            prompt, left, right, kind, assigned = it
            v = rec["verdict"]
            if (kind == "acceptability") != (v in ("pass", "fail")) and v != "invalid":
                allowed = "pass, fail, invalid" if kind == "acceptability" else "left, right, tie, invalid"
                return f"{name}:{line}: verdict {v!r} for {kind} item {rec['item']!r}; expected one of {allowed}"
            annotator = rec.get("annotator") or assigned
            jid = rec.get("id") or (f"{rec['item']}@{annotator}" if annotator else rec["item"])
            return (jid, rec["item"], prompt, left, right, self._POS[v], "left", kind, annotator,
                    rec.get("reason"), rec.get("seconds"), rec.get("confidence"))
        a, b = self.sys_id.get(rec["a"]), self.sys_id.get(rec["b"])
        if a is None or b is None:
            bad = rec["a"] if a is None else rec["b"]
            return f"{name}:{line}: unknown system {bad!r}; expected one of {self.systems_txt}"
        if a == b:
            return f"{name}:{line}: a == b ({rec['a']!r}); a system cannot be compared with itself"
        prompt = rec["prompt"]
        if "prompt_text" in rec and prompt not in self.prompt_ids:
            prompt = self.prompt_of_text(rec["prompt_text"]) or prompt
        if self.prompt_ids and prompt not in self.prompt_ids:
            return f"{name}:{line}: unknown prompt {prompt!r}; expected a prompt id of this study"
        reason, seconds, conf = rec.get("reason"), rec.get("seconds"), rec.get("confidence")
        if reason is None and seconds is None and conf is None:  # short row: fewer bound NULLs, faster
            return (rec["id"], prompt, a, b, rec["verdict"], rec["a_position"], rec.get("annotator"))
        return (rec["id"], None, prompt, a, b, rec["verdict"], rec["a_position"], "external",
                rec.get("annotator"), reason, seconds, conf)


def _inserts(file_id: int) -> dict[int, str]:
    """INSERT statements by row width: 12 = full row, 7 = external row without reason/seconds/confidence.

    Binding fewer NULL parameters makes bulk ingest markedly faster; ``file_id``
    is an integer we generated, formatted into the SQL as a literal.
    """
    fid = int(file_id)
    return {12: ("INSERT INTO judgments (id, item, prompt, a, b, verdict, a_position, kind, annotator, reason, "
                 f"seconds, confidence, file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {fid})"),
            7: ("INSERT INTO judgments (id, prompt, a, b, verdict, a_position, annotator, kind, file) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?, 'external', {fid})")}


def _row_keys(row: tuple) -> tuple:
    """(judgment id, item, annotator) of a full or short row."""
    return (row[0], row[1], row[8]) if len(row) == 12 else (row[0], None, row[6])


def _explain_conflict(con, row, where: str, file_id: int, exc: Exception) -> str:
    """Say which earlier judgment a rejected row collides with."""
    jid, item, annotator = _row_keys(row)
    sql = "SELECT j.file, f.name FROM judgments j JOIN files f ON f.id = j.file WHERE "
    checks = []
    if item is not None:
        checks.append((sql + "j.item = ? AND coalesce(j.annotator, '') = coalesce(?, '')", (item, annotator),
                       f"annotator {annotator!r} already judged item {item!r}",
                       "one judgment per annotator and item (planned repeats have their own item ids)"))
    checks.append((sql + "j.id = ?", (jid,), f"duplicate judgment id {jid!r}", "expected unique ids"))
    for q, args, what, expected in checks:
        hit = con.execute(q, args).fetchone()
        if hit:
            place = "earlier in this file" if hit[0] == file_id else f"already in the study (from {hit[1]})"
            return f"{where}: {what} ({place}); {expected}"
    return f"{where}: rejected by the store ({exc})"


def _ingest_file(con, sys_id, path: Path, reader, file_index: int, dry_run: bool, progress, options) -> tuple:
    sha, total_lines = _hash_file(path)
    problems = _Problems()
    counts = {"A": 0, "B": 0, "tie": 0, "invalid": 0, "pass": 0, "fail": 0}
    no_reason = 0
    rows = 0
    with _write(con, commit=not dry_run):
        hit = con.execute("SELECT name, ingested FROM files WHERE sha256 = ?", (sha,)).fetchone()
        if hit:
            problems.append(f"{path.name}:1: this content was already ingested (as {hit[0]} at {hit[1]}); "
                            "refusing to count it twice")
            return sha, counts, 0, 0, problems
        file_id = con.execute("INSERT INTO files (sha256, name, format, ingested) VALUES (?, ?, ?, ?)",
                              (sha, path.name, reader.name, _now())).lastrowid
        con.execute(f"PRAGMA cache_size = {int(INGEST_CACHE)}")  # the id index stays in memory
        seq0 = con.execute("SELECT coalesce(max(seq), 0) FROM judgments").fetchone()[0]
        val = _Validator(con, sys_id)
        buf: list[tuple] = []
        lines: list[int] = []
        name = path.name

        inserts = _inserts(file_id)
        width = [0]

        def flush():
            if not buf:
                return
            sql = inserts[width[0]]
            con.execute("SAVEPOINT chunk")
            try:
                con.executemany(sql, buf)
                con.execute("RELEASE chunk")
            except sqlite3.IntegrityError:
                con.execute("ROLLBACK TO chunk")
                con.execute("RELEASE chunk")
                for row, ln in zip(buf, lines):
                    try:
                        con.execute(sql, row)
                    except sqlite3.IntegrityError as exc:
                        problems.append(_explain_conflict(con, row, f"{name}:{ln}", file_id, exc))
            buf.clear()
            lines.clear()

        last_line = 0
        row_of = val.row
        for line, rec, problem in reader.read(path, **options):
            if problem is None:
                row = row_of(rec, name, line, file_id)
                if type(row) is tuple:
                    if len(row) != width[0]:  # keep file order: flush when the row shape changes
                        flush()
                        width[0] = len(row)
                    buf.append(row)
                    lines.append(line)
                    if len(buf) >= CHUNK:
                        flush()
                        if progress is not None and line - last_line >= 50_000:
                            progress(file_index, line, total_lines)
                            last_line = line
                    continue
                problem = row
            problems.append(problem)
        flush()
        # tallies from the rows this transaction added (seq is monotonic inside it)
        for v, n, nr in con.execute(
                "SELECT verdict, count(*), sum(reason IS NULL OR reason = '') FROM judgments "
                "WHERE seq > ? AND file = ? GROUP BY verdict", (seq0, file_id)):
            counts[v] = n
            rows += n
            if v not in ("tie", "invalid"):
                no_reason += nr
        if problems:
            raise _Refused(sha, counts, rows, no_reason, problems)
        con.execute("UPDATE files SET rows = ? WHERE id = ?", (rows, file_id))
    if progress is not None:
        progress(file_index, total_lines, total_lines)
    return sha, counts, rows, no_reason, problems


class _Refused(Exception):
    def __init__(self, *args):
        super().__init__("refused")
        self.args_ = args


def ingest(path, files: Sequence, format: str | None = None, dry_run: bool = False,
           progress: Callable[[int, int, int], None] | None = None, baseline: str | None = None) -> IngestResult:
    """Ingest judgment files into a study, all-or-nothing per file.

    Each file is read by the reader named ``format`` or auto-detected (see
    :data:`planner.formats.readers.READERS`), validated against the study
    (systems, prompts, items and their key) and stored in ONE transaction:
    if any row is bad, nothing from that file is stored. Files are processed
    in order; good files are stored even when a later file is refused.

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

    Returns
    -------
    IngestResult

    Raises
    ------
    DataError
        Listing up to 20 problems (``file:line: value; expected …``) when a
        file was refused (already-ingested content, malformed rows, unknown
        verdict labels/items/systems/prompts, ``a == b``, duplicate ids, the same
        annotator judging the same item twice). Files before it stay stored.
    """
    from planner.formats.readers import detect_format

    paths = [Path(f) for f in files]
    for p in paths:
        if not p.is_file():
            raise DataError(f"{p}: file not found")
    readers = [detect_format(p, format) for p in paths]
    options = {"baseline": baseline}
    results: list[FileIngest] = []
    refused: list[tuple[Path, _Problems]] = []
    with Study.open(path) as study:
        con = study._con
        for k, (p, reader) in enumerate(zip(paths, readers)):
            try:
                sha, counts, rows, no_reason, problems = _ingest_file(con, study._sys_id, p, reader, k, dry_run,
                                                                      progress, options)
            except _Refused as exc:
                sha, counts, rows, no_reason, problems = exc.args_
            stored = not problems and not dry_run
            if problems:
                refused.append((p, problems))
            results.append(FileIngest(str(p), reader.name, sha, rows, counts["A"], counts["B"], counts["tie"],
                                      counts["invalid"], counts["pass"], counts["fail"], no_reason, stored))
    if refused:
        stored = [f"{Path(r.path).name} ({r.rows} rows)" for r in results if r.stored]
        msg = (f"{len(refused)} of {len(paths)} file(s) refused, nothing stored from "
               + ", ".join(f"{p.name} ({ps.total} problem{'s' if ps.total != 1 else ''})" for p, ps in refused)
               + (f"; stored: {', '.join(stored)}" if stored else ""))
        problems = [q for _, ps in refused for q in ps.ordered()][:_Problems.KEEP]
        raise DataError(msg, problems)
    return IngestResult(tuple(results), dry_run)


# ------------------------------------------------------------------- status
@dataclass(frozen=True)
class PairStatus:
    """Counts for an unordered pair ``(x, y)``: ``x_wins``, ``y_wins`` over both
    positions; ``score`` is x's half-tie score (None when nothing usable)."""

    x: str
    y: str
    x_wins: int
    y_wins: int
    ties: int
    invalid: int
    score: float | None


@dataclass(frozen=True)
class SystemStatus:
    """A system's wins/losses/ties/invalid over all opponents and its half-tie score."""

    system: str
    wins: int
    losses: int
    ties: int
    invalid: int
    score: float | None


@dataclass(frozen=True)
class AnnotatorStatus:
    """Judgments per annotator (``None`` = no annotator recorded); A/B relative
    to the stored orientation, pass/fail for acceptability items."""

    annotator: str | None
    judgments: int
    A: int
    B: int
    tie: int
    invalid: int
    passed: int
    failed: int


@dataclass(frozen=True)
class StatusResult:
    """What :func:`status` reports."""

    path: str
    systems: tuple[str, ...]
    judgments: int
    totals: dict
    batches: tuple[BatchInfo, ...]
    pairs: tuple[PairStatus, ...]
    per_system: tuple[SystemStatus, ...]
    annotators: tuple[AnnotatorStatus, ...]
    acceptability: dict
    files: int


def status(path) -> StatusResult:
    """Issued/returned/pending items per batch; counts per pair, per system
    (half-tie scores) and per annotator. Counts use :data:`COUNTED_KINDS`."""
    with Study.open(path) as study:
        c = study.counts(by_stratum=False)
        m = len(study.systems)
        tab = np.zeros((m, m, 4), dtype=np.int64)  # [x, y] = x's wins, y's wins, ties, invalid, both positions
        for a, b, aw, bw, t, inv in zip(c.a, c.b, c.a_wins, c.b_wins, c.ties, c.invalid):
            tab[a, b] += (aw, bw, t, inv)
            tab[b, a] += (bw, aw, t, inv)
        pairs = []
        for x in range(m):
            for y in range(x + 1, m):
                w, l, t, inv = (int(v) for v in tab[x, y])
                if w + l + t + inv:
                    pairs.append(PairStatus(study.systems[x], study.systems[y], w, l, t, inv, half_tie_score(w, l, t)))
        per_system = []
        for x in range(m):
            w, l, t, inv = (int(v) for v in tab[x].sum(axis=0))
            per_system.append(SystemStatus(study.systems[x], w, l, t, inv, half_tie_score(w, l, t)))
        ann = []
        for row in study._con.execute(
                "SELECT annotator, count(*), sum(verdict='A'), sum(verdict='B'), sum(verdict='tie'), "
                "sum(verdict='invalid'), sum(verdict='pass'), sum(verdict='fail') FROM judgments "
                "GROUP BY annotator ORDER BY annotator IS NULL, annotator"):
            ann.append(AnnotatorStatus(row[0], *(int(v) for v in row[1:])))
        acc = study.acceptability_counts()
        rates = acc.pass_rate()
        acceptability = {s: {"pass": int(acc.passed[i].sum()), "fail": int(acc.failed[i].sum()),
                             "invalid": int(acc.invalid[i].sum()), "pass_rate": rates[i]}
                         for i, s in enumerate(study.systems) if acc.passed[i].sum() + acc.failed[i].sum()
                         + acc.invalid[i].sum()}
        n = study._con.execute("SELECT count(*) FROM judgments").fetchone()[0]
        nfiles = study._con.execute("SELECT count(*) FROM files").fetchone()[0]
        return StatusResult(str(path), study.systems, int(n), c.totals(), tuple(study.batches()), tuple(pairs),
                            tuple(per_system), tuple(ann), acceptability, int(nfiles))


# ------------------------------------------------------------ report reads
def grouped_judgments(db_path) -> list[tuple]:
    """One grouped scan of the judgments: ``(a, b, verdict, kind, reason, length_sign, n)``.

    ``a``/``b`` are system names (``b`` None for acceptability), ``reason`` the
    raw reason, ``length_sign`` = sign(len(a's response) - len(b's response))
    or ``None`` when either response is unknown. The grouping keeps the
    result small (systems² x verdicts x kinds x reasons x 3) whatever the number
    of judgments.

    Reads the study database ``db_path`` through its own connection (so it can
    run in a worker thread while the main thread aggregates the counts and
    imports arviz: sqlite releases the GIL while it scans). The response
    lengths are first copied to a TEMP ``WITHOUT ROWID`` table, which makes the
    two length look-ups per judgment about twice as fast. Nothing is written to
    the study.
    """
    con = sqlite3.connect(str(db_path), timeout=30.0)
    try:
        names = dict(con.execute("SELECT id, name FROM systems").fetchall())
        con.execute("CREATE TEMP TABLE report_lengths (prompt TEXT, system INTEGER, length INTEGER, "
                    "PRIMARY KEY (prompt, system)) WITHOUT ROWID")
        con.execute("INSERT INTO temp.report_lengths SELECT prompt, system, length FROM responses")
        # one integer key for (a, b, length sign): grouping on it sorts faster than on three columns
        span = int(con.execute("SELECT coalesce(max(id), 0) + 2 FROM systems").fetchone()[0])
        rows = con.execute(
            f"""SELECT (j.a * {span} + coalesce(j.b, -1) + 1) * 4
                       + coalesce((ra.length > rb.length) - (ra.length < rb.length) + 1, 3),
                      j.verdict, j.kind, j.reason, count(*)
               FROM judgments j
               LEFT JOIN temp.report_lengths ra ON ra.prompt = j.prompt AND ra.system = j.a
               LEFT JOIN temp.report_lengths rb ON rb.prompt = j.prompt AND rb.system = j.b
               GROUP BY 1, 2, 3, 4""").fetchall()
    finally:
        con.close()
    out = []
    for key, v, kind, reason, n in rows:
        ab, code = divmod(int(key), 4)
        a, b1 = divmod(ab, span)
        out.append((names[a], None if b1 == 0 else names[b1 - 1], v, kind, reason,
                    None if code == 3 else code - 1, int(n)))
    return out
