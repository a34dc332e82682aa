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
from planner.store import check as study_check
from planner.errors import DataError, UsageError, quote

SCHEMA_VERSION = 3
CONFIG_NAME = "study.json"
DB_NAME = "study.sqlite"
CONFIG_VERSION = 2  # "planner_study" in study.json; 1: max_words stored 400 when not asked for (see init_study)
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

#: tables added by schema version 2 (round trips: audit, transport failures, retractions, aliases).
_V2_TABLES = """
CREATE TABLE judgment_edits (
    seq INTEGER PRIMARY KEY, judgment TEXT NOT NULL, old_verdict TEXT NOT NULL, new_verdict TEXT NOT NULL,
    old_reason TEXT, new_reason TEXT, file INTEGER REFERENCES files(id), at TEXT NOT NULL);
CREATE TABLE failures (
    item TEXT NOT NULL REFERENCES items(id), file INTEGER NOT NULL REFERENCES files(id),
    error TEXT NOT NULL, source TEXT, at TEXT NOT NULL, PRIMARY KEY (item, file));
CREATE TABLE retracted_judgments (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, item TEXT, prompt TEXT NOT NULL, a INTEGER NOT NULL,
    b INTEGER, verdict TEXT NOT NULL, a_position TEXT, kind TEXT NOT NULL, annotator TEXT, reason TEXT,
    seconds REAL, confidence REAL, file INTEGER NOT NULL REFERENCES files(id), source_annotator TEXT,
    retracted TEXT NOT NULL);
CREATE TABLE annotator_aliases (source TEXT PRIMARY KEY, name TEXT NOT NULL, how TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE lifecycle (
    seq INTEGER PRIMARY KEY, action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT, at TEXT NOT NULL);
"""

#: tables added by schema version 3 (LLM judges, live): the response cache / cost ledger and the
#: remote Batch API jobs (so an interrupted poll resumes the same job instead of paying again).
_V3_TABLES = """
CREATE TABLE judge_cache (
    key TEXT PRIMARY KEY, custom_id TEXT NOT NULL, batch INTEGER, base_url TEXT NOT NULL, model TEXT NOT NULL,
    transport TEXT NOT NULL, response TEXT NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER,
    cost_usd REAL, at TEXT NOT NULL);
CREATE INDEX judge_cache_batch ON judge_cache(batch);
CREATE TABLE judge_jobs (
    remote_id TEXT PRIMARY KEY, batch INTEGER NOT NULL, base_url TEXT NOT NULL, model TEXT NOT NULL,
    input_sha256 TEXT NOT NULL, requests INTEGER NOT NULL, status TEXT NOT NULL, created TEXT NOT NULL,
    finished TEXT);
"""

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
CREATE TABLE batches (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, manifest TEXT NOT NULL,
    voided TEXT, void_reason TEXT);
CREATE TABLE items (
    id TEXT PRIMARY KEY, batch INTEGER NOT NULL REFERENCES batches(id),
    prompt TEXT NOT NULL REFERENCES prompts(id),
    left_sys INTEGER NOT NULL REFERENCES systems(id), right_sys INTEGER REFERENCES systems(id),
    kind TEXT NOT NULL, annotator TEXT, link TEXT REFERENCES items(id), order_group TEXT);
CREATE INDEX items_batch ON items(batch);
CREATE TABLE files (
    id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, name TEXT NOT NULL, format TEXT NOT NULL,
    rows INTEGER NOT NULL DEFAULT 0, ingested TEXT NOT NULL, retracted TEXT);
CREATE TABLE judgments (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, item TEXT REFERENCES items(id),
    prompt TEXT NOT NULL, a INTEGER NOT NULL REFERENCES systems(id), b INTEGER REFERENCES systems(id),
    verdict TEXT NOT NULL CHECK (verdict = 'A' OR verdict = 'B' OR verdict = 'tie' OR verdict = 'invalid'
                                 OR verdict = 'pass' OR verdict = 'fail'),
    a_position TEXT CHECK (a_position IS NULL OR a_position = 'left' OR a_position = 'right'),
    kind TEXT NOT NULL, annotator TEXT, reason TEXT, seconds REAL, confidence REAL,
    file INTEGER NOT NULL REFERENCES files(id), source_annotator TEXT);
CREATE UNIQUE INDEX judgments_item_annotator ON judgments(item, coalesce(annotator, ''))
    WHERE item IS NOT NULL;
CREATE TABLE artifacts (name TEXT PRIMARY KEY, data BLOB NOT NULL, saved TEXT NOT NULL);
""" + _V2_TABLES + _V3_TABLES

#: schema version v -> SQL that upgrades a v database to v + 1 (applied in order on open).
MIGRATIONS: dict[int, str] = {
    # v1 -> v2: position may be unknown (NULL), the source's own annotator identity is kept beside the
    # mapped name, batches can be voided, files retracted; audit, transport-failure and alias tables.
    1: """
CREATE TABLE judgments_v2 (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, item TEXT REFERENCES items(id),
    prompt TEXT NOT NULL, a INTEGER NOT NULL REFERENCES systems(id), b INTEGER REFERENCES systems(id),
    verdict TEXT NOT NULL CHECK (verdict = 'A' OR verdict = 'B' OR verdict = 'tie' OR verdict = 'invalid'
                                 OR verdict = 'pass' OR verdict = 'fail'),
    a_position TEXT CHECK (a_position IS NULL OR a_position = 'left' OR a_position = 'right'),
    kind TEXT NOT NULL, annotator TEXT, reason TEXT, seconds REAL, confidence REAL,
    file INTEGER NOT NULL REFERENCES files(id), source_annotator TEXT);
INSERT INTO judgments_v2 (seq, id, item, prompt, a, b, verdict, a_position, kind, annotator, reason, seconds,
                          confidence, file)
    SELECT seq, id, item, prompt, a, b, verdict, a_position, kind, annotator, reason, seconds, confidence, file
    FROM judgments;
DROP TABLE judgments;
ALTER TABLE judgments_v2 RENAME TO judgments;
CREATE UNIQUE INDEX judgments_item_annotator ON judgments(item, coalesce(annotator, ''))
    WHERE item IS NOT NULL;
ALTER TABLE batches ADD COLUMN voided TEXT;
ALTER TABLE batches ADD COLUMN void_reason TEXT;
ALTER TABLE files ADD COLUMN retracted TEXT;
""" + _V2_TABLES,
    # v2 -> v3: the LLM-judge response cache (token and cost ledger) and remote Batch API jobs.
    2: _V3_TABLES,
}


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
    """An issued batch.

    ``issued`` items, ``returned`` (at least one judgment), ``unanswered``
    (no judgment, and a judge request for it failed in transport: re-issue with
    ``next-batch --retry-failed``), ``pending`` (no judgment yet, still
    expected: issued - returned, or 0 once the batch is voided or expired).
    ``voided`` is the time the batch was voided (None while it counts).
    """

    id: int
    created: str
    manifest: dict
    issued: int
    returned: int
    pending: int
    unanswered: int = 0
    voided: str | None = None
    void_reason: str | None = None


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
        # a judgment whose position is unknown (NULL) is counted in the two orientations alternately
        # (by storage order), so it carries no information about the position term either way
        pos = "coalesce(j.a_position, CASE j.seq % 2 WHEN 1 THEN 'left' ELSE 'right' END)"
        q = (f"""SELECT CASE WHEN {pos}='right' THEN j.b ELSE j.a END,
                        CASE WHEN {pos}='right' THEN j.a ELSE j.b END,
                        coalesce(p.stratum, ?),
                        CASE j.verdict WHEN 'A' THEN ({pos}='right')
                                       WHEN 'B' THEN ({pos}='left')
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

    def _live_batches_sql(self) -> tuple[str, tuple]:
        """SQL condition (on batch alias ``b``) for batches whose items still count as pending."""
        days = self.config.get("pending_expiry_days") if isinstance(self.config, dict) else None
        if isinstance(days, (int, float)) and not isinstance(days, bool) and days > 0:
            cutoff = (_dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(days=float(days))).replace(
                microsecond=0).isoformat()
            return "b.voided IS NULL AND b.created >= ?", (cutoff,)
        return "b.voided IS NULL", ()

    def pending_counts(self, by_stratum: bool = False) -> Counts:
        """Issued-but-unreturned pairwise items (kinds regular, overlap, swap) per cell.

        Convention: the number of pending items of a cell is in ``ties`` (so
        ``.usable`` and ``.pair_matrix()`` count them); the other fields are 0.
        An item is pending while it has no judgment at all and its batch is
        neither voided nor older than the study's ``pending_expiry_days``.
        """
        strata, sidx = self._strata_index(by_stratum)
        live, live_args = self._live_batches_sql()
        q = (f"""SELECT i.left_sys, i.right_sys, coalesce(p.stratum, ?), 2, count(*)
                 FROM items i JOIN prompts p ON p.id = i.prompt JOIN batches b ON b.id = i.batch
                 WHERE i.right_sys IS NOT NULL AND i.kind IN ({','.join('?' * len(PENDING_KINDS))})
                   AND {live}
                   AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.item = i.id)
                 GROUP BY 1, 2, 3""")
        return self._aggregate(q, (DEFAULT_STRATUM, *PENDING_KINDS, *live_args), strata, sidx, by_stratum,
                               outcome=False)

    def unanswered_items(self, batch: int | None = None) -> list[BatchItem]:
        """Items whose judge request failed in transport and that have no judgment yet.

        Only items of batches that are not voided; in issue order. These are the
        items ``next-batch --retry-failed`` writes again (same ids, same positions).
        """
        q = ("SELECT i.id, i.prompt, i.left_sys, i.right_sys, i.kind, i.annotator, i.link, i.order_group "
             "FROM items i JOIN batches b ON b.id = i.batch WHERE b.voided IS NULL "
             "AND EXISTS (SELECT 1 FROM failures f WHERE f.item = i.id) "
             "AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.item = i.id)"
             + (" AND i.batch = ?" if batch is not None else "") + " ORDER BY i.rowid")
        n = self._sys_name
        return [BatchItem(r[0], r[1], n[r[2]], None if r[3] is None else n[r[3]], *r[4:])
                for r in self._con.execute(q, (batch,) if batch is not None else ())]

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

    #: columns of :meth:`judgment_table`, in order
    JUDGMENT_COLUMNS = ("judgment", "batch", "item", "kind", "prompt", "stratum", "a", "b", "a_position",
                        "left", "right", "verdict", "position_verdict", "winner", "annotator",
                        "source_annotator", "reason", "seconds", "confidence", "time", "file")

    def judgment_table(self) -> Iterator[tuple]:
        """Every stored judgment, unblinded, as rows of :data:`JUDGMENT_COLUMNS` (ingest order, streamed).

        ``a``/``b`` the stored orientation and ``verdict`` relative to it
        (A, B, tie, invalid; pass/fail for acceptability, ``b`` empty);
        ``left``/``right`` the systems as shown and ``position_verdict`` in
        position form (None when the position is unknown); ``winner`` the
        winning system (None for tie/invalid/acceptability); ``time`` when the
        file holding it was ingested; ``file`` that file's name.
        """
        names = self._sys_name
        cur = self._con.execute(
            """SELECT j.id, i.batch, j.item, j.kind, j.prompt, coalesce(p.stratum, ?), j.a, j.b, j.a_position,
                      j.verdict, j.annotator, j.source_annotator, j.reason, j.seconds, j.confidence,
                      f.ingested, f.name
               FROM judgments j JOIN files f ON f.id = j.file LEFT JOIN prompts p ON p.id = j.prompt
               LEFT JOIN items i ON i.id = j.item ORDER BY j.seq""", (DEFAULT_STRATUM,))
        for (jid, batch, item, kind, prompt, stratum, a, b, pos, verdict, ann, src, reason, sec, conf,
             at, fname) in cur:
            a, b = names[a], None if b is None else names[b]
            left, right = (a, b) if pos == "left" else (b, a) if pos == "right" else (None, None)
            pv = None
            if b is None or verdict in ("tie", "invalid"):
                pv = verdict if pos is not None or b is None else None
            elif pos is not None:
                pv = "left" if (verdict == "A") == (pos == "left") else "right"
            win = a if verdict == "A" else b if verdict == "B" else None
            yield (jid, batch, item, kind, prompt, stratum, a, b, pos, left, right, verdict, pv, win, ann, src,
                   reason, sec, conf, at, fname)

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
        """Every batch with its manifest and issued / returned / unanswered / pending item counts."""
        out = []
        live, live_args = self._live_batches_sql()
        for bid, created, manifest, voided, why, is_live, issued, returned, failed in self._con.execute(
                f"""SELECT b.id, b.created, b.manifest, b.voided, b.void_reason, ({live}), count(i.id),
                          coalesce(sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item = i.id)), 0),
                          coalesce(sum(EXISTS (SELECT 1 FROM failures f WHERE f.item = i.id)
                                       AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.item = i.id)), 0)
                   FROM batches b LEFT JOIN items i ON i.batch = b.id GROUP BY b.id ORDER BY b.id""", live_args):
            pending = issued - returned if is_live else 0
            out.append(BatchInfo(bid, created, json.loads(manifest), issued, returned, pending, failed, voided, why))
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


def _parse_bool(v, where, field_name, problems):
    """A flag cell by the one flag vocabulary (:func:`planner.formats.prompts.parse_flag`).

    Responses' ``acceptable`` also takes ``pass``/``fail``; ``frozen`` does not.
    """
    from planner.formats.prompts import parse_flag

    extra = (("pass",), ("fail",)) if field_name == "acceptable" else ((), ())
    flag, problem = parse_flag(v, where, field_name, true_words=extra[0], false_words=extra[1])
    if problem:
        problems.append(problem)
    return flag


def _load_prompts(path: Path) -> tuple[list[tuple], list[str]]:
    """Prompt rows for the ``prompts`` table, read by the one prompts reader
    (:func:`planner.formats.prompts.read_prompts`, shared with ``allocate``)."""
    from planner.formats.prompts import read_prompts

    rows, problems = read_prompts(path)
    return [(r.id, i, r.text, r.stratum, r.weight, r.difficulty, int(r.frozen))
            for i, r in enumerate(rows)], problems


def init_study(path, systems: Sequence[str] | None = None, anchor: str | None = None,
               prompts_file=None, responses_file=None, reasons: Sequence[str] = DEFAULT_REASONS,
               seed: int = 0, qc: dict | None = None, tie_convention: str = "half",
               max_words: int | None = None) -> StudyInfo:
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
    max_words : int, optional
        Default limit of words per response shown to annotators; ``None`` (the
        default) is no limit, stored as ``"max_words": null``.

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
    if max_words is not None:
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
    if problems:
        raise DataError(f"study not created: {len(problems)} problem(s) in the input files", problems)
    if len(names) < 2:
        raise UsageError(f"--systems ({','.join(names) or 'none'}) must name at least two systems "
                         "(or give --responses to infer them)")
    if anchor is not None and anchor not in names:
        shown = anchor if len(anchor) <= 80 and anchor.isprintable() else quote(anchor)
        raise UsageError(f"--anchor ({shown}) must be one of the systems: {', '.join(names)}")
    if tie_convention != "half":
        raise UsageError(f"tie convention ({tie_convention!r}) must be 'half'")
    rates = dict(DEFAULT_QC)
    rates.update(qc or {})
    # planner_study 2: "max_words" is what was asked for (null = no limit); version 1 configs stored 400
    # whether asked or not, and next-batch reads their 400 as no limit (planner.workflows.next_batch._word_limit)
    config = {"planner_study": CONFIG_VERSION, "systems": names, "anchor": anchor, "reasons": list(reasons),
              "qc": rates, "tie_convention": tie_convention, "seed": int(seed),
              "max_words": None if max_words is None else int(max_words),
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


# ------------------------------------------------------------------- ingest, status (own modules)
def ingest(*args, **kwargs):
    """Ingest judgment files: see :func:`planner.store.ingest.ingest` (re-exported here)."""
    from planner.store.ingest import ingest as _ingest

    return _ingest(*args, **kwargs)


def status(path):
    """What was issued, returned, unanswered and pending: see :func:`planner.store.status.status`."""
    from planner.store.status import status as _status

    return _status(path)


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
