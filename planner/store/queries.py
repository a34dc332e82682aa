"""The open study: :class:`Study` and its queries.

``Study.open(path)`` checks the directory, applies pending schema migrations (:mod:`planner.store.schema`)
and reads the systems; the methods read prompts, responses and judgments, aggregate them into
:class:`planner.counts.Counts` (judged, pending, acceptability), and record batches and artifacts, each
write one transaction (:func:`planner.store.db.write`).
"""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np

from planner.counts import DEFAULT_STRATUM, Counts
from planner.errors import DataError
from planner.stats.clusters import JudgmentArrays
from planner.store import check as study_check
from planner.store import scans, schema
from planner.store.db import CONFIG_NAME, DB_NAME, connect, database_error, db_path, now, write
from planner.store.judged import judgment_arrays, stratum_lut
from planner.store.records import (
    AcceptabilityCounts,
    BatchInfo,
    BatchItem,
    Judgment,
    Prompt,
    Response,
    item_rows,
    shown_as,
)
from planner.vocabulary import COUNTED_KINDS, PENDING_KINDS


class Study:
    """An open study. Use ``with Study.open(path) as study: ...``.

    Attributes
    ----------
    path : Path
        The study directory.
    config : dict
        The parsed ``study.json`` (systems, anchor, reasons, qc rates, tie convention, seed, max_words).
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
        self._keys_memo: tuple | None = None   # (database stamp, response keys): see response_keys

    # ------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, path) -> Study:
        """Open an existing study (applies pending schema migrations)."""
        path = Path(path)
        cfg_path, db = path / CONFIG_NAME, db_path(path)
        if not cfg_path.is_file() or not db.is_file():
            raise DataError(f"{path}: not a study (expected {CONFIG_NAME} and {DB_NAME}; run `planner init` first)")
        config = study_check.read_config(cfg_path)
        study_check.check_database_file(db)
        con = connect(db)
        try:
            version = int(con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
            study_check.check_tables(con, db)
        except sqlite3.DatabaseError as exc:
            con.close()
            raise (DataError(f"{db}: not a planner study database ({exc})") if "no such table" in str(exc)
                   else database_error(exc, db)) from None
        except (TypeError, ValueError) as exc:
            con.close()
            raise DataError(f"{db}: not a planner study database ({exc})") from None
        except DataError:
            con.close()
            raise
        if version > schema.SCHEMA_VERSION:
            con.close()
            raise DataError(f"{db}: schema version {version} is newer than this planner "
                            f"({schema.SCHEMA_VERSION}); upgrade planner")
        schema.migrate(con, version)
        return cls(path, con, config)

    def close(self) -> None:
        self._con.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The open SQLite connection: for the store's own writers and scans (ingest, lifecycle, status),
        which run their statements inside :func:`planner.store.db.write`; everything else reads through
        the methods below."""
        return self._con

    @property
    def system_ids(self) -> Mapping[str, int]:
        """``{system name: its id in the database}`` (read-only), in :attr:`systems` order."""
        return MappingProxyType(self._sys_id)

    def __enter__(self) -> Study:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()
        if isinstance(exc, sqlite3.DatabaseError):   # named for what it is (a full disk is not damage)
            raise database_error(exc, db_path(self.path)) from None

    # ------------------------------------------------------------ prompts etc.
    def strata(self) -> tuple[str, ...]:
        """Stratum names in prompt order; a prompt without a stratum is in ``"all"``.

        ``("all",)`` when the study has no prompts; ``"all"`` is appended when judgments exist on prompts
        the study does not hold.
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

    def acceptability_labels(self) -> list[tuple[str, bool]]:
        """``(system, acceptable)`` of the responses labelled in the responses file, in :meth:`responses`
        order, without reading the texts."""
        return [(self._sys_name[r[0]], bool(r[1])) for r in self._con.execute(
            "SELECT r.system, r.acceptable FROM responses r JOIN prompts p ON p.id = r.prompt "
            "WHERE r.acceptable IS NOT NULL ORDER BY p.ord, r.system")]

    def response_keys(self) -> list[tuple[str, str]]:
        """``(prompt, system)`` of every response in :meth:`responses` order, without reading the texts.

        Read once while the database is unchanged (next-batch asks twice: the showable
        responses, then the attention items): the list is kept with this connection's
        ``total_changes`` and SQLite's ``data_version`` (which moves when another
        connection commits) and read again when either moved.
        """
        stamp = (self._con.total_changes, self._con.execute("PRAGMA data_version").fetchone()[0])
        if self._keys_memo is None or self._keys_memo[0] != stamp:
            n = self._sys_name
            keys = [(r[0], n[r[1]]) for r in self._con.execute(
                "SELECT r.prompt, r.system FROM responses r JOIN prompts p ON p.id = r.prompt "
                "ORDER BY p.ord, r.system")]
            self._keys_memo = (stamp, keys)
        return list(self._keys_memo[1])

    def response_texts(self):
        """``{(prompt, system): text}`` of :meth:`responses`, read on demand
        (:class:`planner.store.texts.ResponseTexts`: a text is read when asked for)."""
        from planner.store.texts import ResponseTexts

        return ResponseTexts(self._con, self._sys_id, self.response_keys)

    def response(self, prompt_id: str, system: str) -> Response | None:
        """The response of ``system`` to ``prompt_id``, or None when there is none."""
        sid = self._sys_id.get(system)
        if sid is None:
            raise DataError(f"unknown system {system!r}; expected one of {', '.join(self.systems)}")
        got = self._responses("WHERE r.prompt = ? AND r.system = ?", (prompt_id, sid))
        return got[0] if got else None

    # ------------------------------------------------------------ counts
    def _strata_index(self, by_stratum: bool) -> tuple[tuple[str, ...], dict[str, int]]:
        strata = self.strata() if by_stratum else (DEFAULT_STRATUM,)
        return strata, {s: i for i, s in enumerate(strata)}

    def report_scan(self):
        """Counts by stratum and the report's judgment-level figures from one scan of the judgments
        (:func:`planner.store.report_scan.report_scan`)."""
        from planner.store.report_scan import report_scan

        return report_scan(self._con, self.systems)

    def counts(self, by_stratum: bool = False, kinds: Sequence[str] = COUNTED_KINDS) -> Counts:
        """Aggregated pairwise counts, cell ``a`` = system shown left/first, ``b`` = right.

        Parameters
        ----------
        by_stratum : bool
            Split cells by the prompt's stratum (``"all"`` for prompts without one); otherwise one stratum
            ``"all"``.
        kinds : sequence of str
            Judgment kinds counted; default :data:`COUNTED_KINDS` (regular, overlap, swap, external — QC kinds
            excluded).
        """
        strata, sidx = self._strata_index(by_stratum)
        span, index = scans.system_index(self._con)
        left, right, outcome, ords = scans.judged_cells(self._con, kinds, index, span, with_prompt=by_stratum)
        if not left.size:
            return Counts.empty(self.systems, strata)
        # prompt ord -> stratum place; slot 0 is a prompt the study does not hold ("all")
        stratum = stratum_lut(self._con, sidx)[ords + 1] if by_stratum and ords is not None else None
        return Counts.from_arrays(self.systems, left, right, outcome, stratum, strata)

    def judgment_arrays(self, by_stratum: bool = True, annotators: bool = False,
                        kinds: Sequence[str] = COUNTED_KINDS) -> JudgmentArrays:
        """The pairwise judgments of ``kinds`` one by one (:func:`planner.store.judged.judgment_arrays`):
        stratum, shown pair, outcome, prompt and (with ``annotators``) annotator codes as integer arrays.
        ``.counts()`` of the result equals :meth:`counts` with the same ``by_stratum`` and ``kinds``."""
        return judgment_arrays(self._con, self.systems, self._strata_index(by_stratum)[0], kinds, annotators)

    def plan_counts(self) -> tuple[Counts, Counts, tuple]:
        """``(counts(by_stratum=True), pending_counts(by_stratum=True), pair_prompt_usage_codes())``
        with one scan of the judgments (:mod:`planner.store.plan_scan`), as next-batch's plan needs them."""
        from planner.store.plan_scan import plan_scan

        got = plan_scan(self._con, self.systems)
        pending = self._pending(got.strata, {s: i for i, s in enumerate(got.strata)}, True)
        return got.judged, pending, got.usage

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
            cutoff = (_dt.datetime.now(_dt.UTC) - _dt.timedelta(days=float(days))).replace(microsecond=0).isoformat()
            return "b.voided IS NULL AND b.created >= ?", (cutoff,)
        return "b.voided IS NULL", ()

    def pending_counts(self, by_stratum: bool = False) -> Counts:
        """Issued-but-unreturned pairwise items (kinds regular, overlap, swap) per cell.

        Convention: the number of pending items of a cell is in ``ties`` (so ``.usable`` and
        ``.pair_matrix()`` count them); the other fields are 0. An item is pending while it has no judgment
        at all and its batch is neither voided nor older than the study's ``pending_expiry_days``.
        """
        return self._pending(*self._strata_index(by_stratum), by_stratum)

    def _pending(self, strata, sidx, by_stratum: bool) -> Counts:
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
            left, right, pv, win = shown_as(a, b, pos, verdict)
            yield (jid, batch, item, kind, prompt, stratum, a, b, pos, left, right, verdict, pv, win, ann, src,
                   reason, sec, conf, at, fname)

    def pair_prompt_usage_codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple]:
        """:meth:`pair_prompt_usage` as arrays, for the prompts the study holds (no Python sets).

        Returns ``(x, y, code, names)``: one row per distinct (pair, prompt) judged or
        issued, ``x < y`` the systems' places in :attr:`systems`, ``names[code]`` the
        prompt id; rows sorted by ``(x, y, code)``. Judgments on prompts the study does
        not hold are left out (no pair can be shown those).
        """
        span, index = scans.system_index(self._con)
        rows = self._con.execute("SELECT ord, id FROM prompts").fetchall()
        names: list = [None] * (max((r[0] for r in rows), default=-1) + 2)  # code = ord + 1; 0: not held
        for ord_, name in rows:
            names[ord_ + 1] = name
        codes = scans.pair_prompt_codes(self._con, span, len(names))
        return (*scans.usage_arrays(codes, span, len(names), index), tuple(names))

    def pair_prompt_usage(self) -> dict[tuple[str, str], frozenset[str]]:
        """Prompts already judged or issued for each unordered pair.

        Keys are ``(x, y)`` with ``x`` before ``y`` in :attr:`systems`; values the
        prompt ids (any kind, any orientation, returned or pending).
        """
        span, _ = scans.system_index(self._con)
        rows = self._con.execute("SELECT ord, id FROM prompts").fetchall()
        pid = np.empty(max((r[0] for r in rows), default=-1) + 2, dtype=object)  # code = ord + 1 -> prompt id
        for ord_, name in rows:  # code 0: a prompt the study does not hold, read by name below
            pid[ord_ + 1] = name
        codes = scans.pair_prompt_codes(self._con, span, len(pid))
        pair, prompt = np.divmod(codes[codes % len(pid) != 0], len(pid))
        starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if pair.size else np.zeros(0, dtype=np.int64)
        ends = np.r_[starts[1:], pair.size]
        n = self._sys_name
        out: dict[tuple[str, str], frozenset[str]] = {}
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            x, y = divmod(int(pair[lo]), span)
            out[(n[x], n[y])] = frozenset(pid[prompt[lo:hi]].tolist())
        for x, y, name in self._con.execute(  # prompts the study does not hold (external judgments)
                "SELECT min(a, b), max(a, b), prompt FROM judgments WHERE b IS NOT NULL "
                "AND prompt NOT IN (SELECT id FROM prompts) UNION "
                "SELECT min(left_sys, right_sys), max(left_sys, right_sys), prompt FROM items "
                "WHERE right_sys IS NOT NULL AND prompt NOT IN (SELECT id FROM prompts)"):
            out[(n[x], n[y])] = out.get((n[x], n[y]), frozenset()) | {name}
        return out

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
        prompts = {r[0] for r in self._con.execute("SELECT id FROM prompts")}
        rows, problems = item_rows(items, prompts, self._sys_id)
        if problems:
            raise DataError(f"batch not recorded: {len(problems)} problem(s) in its items", problems)
        with write(self._con) as con:
            clash = [r[0] for r in con.execute(
                f"SELECT id FROM items WHERE id IN ({','.join('?' * min(len(rows), 900))})",
                [r[0] for r in rows[:900]])] if rows else []
            if clash:
                raise DataError(f"batch not recorded: item ids already issued: {', '.join(clash[:5])}")
            cur = con.execute("INSERT INTO batches (created, manifest) VALUES (?, ?)",
                              (now(), json.dumps(manifest, sort_keys=True, default=str)))
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
            failed = failed if voided is None else 0   # as unanswered_items: a voided batch's items are not re-asked
            out.append(BatchInfo(bid, created, json.loads(manifest), issued, returned, pending, failed, voided, why))
        return out

    def prompt_choice_judgments(self) -> tuple[int, int]:
        """``(batches, judgments)``: the usable judgments (A, B, tie; counted kinds) returned on items of
        batches whose prompts were drawn by discriminativeness (``next-batch --prompts-by
        discriminative``: a ``prompt_choice`` record in the manifest), and how many such batches they
        came from (a batch nothing came back from is not counted). Reads only those batches' manifests
        (a LIKE prefilter, then the parsed record), so a study without such a batch costs one
        indexless scan of the batches table, not of the judgments."""
        ids = []
        for bid, manifest in self._con.execute(
                "SELECT id, manifest FROM batches WHERE manifest LIKE '%\"prompt_choice\"%'"):
            record = json.loads(manifest).get("prompt_choice")
            if isinstance(record, dict) and record.get("mode") == "discriminative":
                ids.append(int(bid))
        if not ids:
            return 0, 0
        kinds = ",".join("?" * len(COUNTED_KINDS))
        per_batch = []
        for k in range(0, len(ids), 900):       # SQLite's bound-parameter limit
            chunk = ids[k:k + 900]
            per_batch += [n for (n,) in self._con.execute(
                f"SELECT count(*) FROM judgments j JOIN items i ON i.id = j.item "
                f"WHERE i.batch IN ({','.join('?' * len(chunk))}) AND j.kind IN ({kinds}) "
                "AND j.verdict IN ('A', 'B', 'tie') GROUP BY i.batch", (*chunk, *COUNTED_KINDS))]
        return len(per_batch), int(sum(per_batch))

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
        with write(self._con) as con:
            con.execute("INSERT OR REPLACE INTO artifacts (name, data, saved) VALUES (?, ?, ?)",
                        (name, sqlite3.Binary(bytes(data)), now()))

    def load_artifact(self, name: str) -> bytes | None:
        """The blob saved under ``name``, or None."""
        row = self._con.execute("SELECT data FROM artifacts WHERE name = ?", (name,)).fetchone()
        return None if row is None else bytes(row[0])
