"""Ingest's row checks: reader records -> judgment rows, and why a row the store rejected was rejected.

:class:`Validator` turns one file's records into rows for the ``judgments``
INSERT (positional verdicts translated with the batch key, annotator identities
mapped by the ``annotator_aliases`` table); :func:`classify` says what a row
that hit a uniqueness constraint is: already stored, a :class:`Change` at the
source, or a problem naming ``file:line``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from planner.errors import quote
from planner.names import IDENTITY_RULE, identity_problem
from planner.store.identity import Identities

# ------------------------------------------------------------------ validation
FULL = 13   # id, item, prompt, a, b, verdict, a_position, kind, annotator, reason, seconds, confidence, source
SHORT = 7   # external row without reason/seconds/confidence: id, prompt, a, b, verdict, a_position, annotator


def inserts(file_id: int) -> dict[int, str]:
    """INSERT statements by row width (binding fewer NULLs makes bulk ingest faster)."""
    fid = int(file_id)
    return {FULL: ("INSERT INTO judgments (id, item, prompt, a, b, verdict, a_position, kind, annotator, reason, "
                   "seconds, confidence, source_annotator, file) "
                   f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {fid})"),
            SHORT: ("INSERT INTO judgments (id, prompt, a, b, verdict, a_position, annotator, kind, file) "
                    f"VALUES (?, ?, ?, ?, ?, ?, ?, 'external', {fid})")}


class Validator:
    """Turns reader records into judgment rows for one file, collecting problems.

    Annotator identities go through :class:`planner.store.identity.Identities`
    (``self.identities``): mapped ones take their name at once, new ones are
    stored under the identity until :meth:`Identities.learn` at the end of the file.
    """

    _POS: ClassVar[dict[str, str]] = {"left": "A", "right": "B", "tie": "tie", "invalid": "invalid",
                                      "pass": "pass", "fail": "fail"}

    def __init__(self, con: sqlite3.Connection, sys_id: Mapping[str, int], annotator_map: dict | None = None):
        self.sys_id = sys_id
        self.prompt_ids = {r[0] for r in con.execute("SELECT id FROM prompts")}
        self.prompt_by_text: dict[str, str] = {}
        self._con = con
        self._items: dict[str, tuple | None] = {}
        self.systems_txt = ", ".join(sys_id)
        planned = {r[0] for r in con.execute("SELECT DISTINCT annotator FROM items WHERE annotator IS NOT NULL")}
        self.identities = Identities(con, planned, annotator_map)
        self._good_ids: set = set()

    def prompt_of_text(self, text):
        if not self.prompt_by_text:
            self.prompt_by_text = {t: i for i, t in self._con.execute("SELECT id, text FROM prompts")}
        return self.prompt_by_text.get(text)

    def item(self, item_id):
        if item_id not in self._items:
            self._items[item_id] = self._con.execute(
                "SELECT prompt, left_sys, right_sys, kind, annotator FROM items WHERE id = ?", (item_id,)).fetchone()
        return self._items[item_id]

    def annotator(self, rec: dict, assigned: str | None, where: str) -> tuple[str | None, str | None] | str:
        """(stored annotator name, raw source identity) for a positional row, or a problem string."""
        identity = rec.get("annotator")
        if identity is None:
            return assigned, None
        also = tuple(rec.get("identities") or ())
        for i in (identity, *also):
            problem = None if i in self._good_ids else self.identity_problem(i, where)
            if problem:
                return problem
        return self.identities.resolve(identity, also, assigned)

    def identity_problem(self, identity, where: str) -> str | None:
        """A problem naming ``where`` when ``identity`` cannot be stored (checked once per identity)."""
        why = identity_problem(identity)
        if why:
            return f"{where}: annotator {quote(identity)} {why}; expected {IDENTITY_RULE}"
        self._good_ids.add(identity)
        return None

    def positional(self, rec: dict, where: str):
        it = self.item(rec["item"])
        if it is None:
            return f"{where}: unknown item {quote(rec['item'])}; expected an item id issued by this study"
        prompt, left, right, kind, assigned = it
        v = rec["verdict"]
        if (kind == "acceptability") != (v in ("pass", "fail")) and v != "invalid":
            allowed = "pass, fail, invalid" if kind == "acceptability" else "left, right, tie, invalid"
            return f"{where}: verdict {quote(v)} for {kind} item {quote(rec['item'])}; expected one of {allowed}"
        who = self.annotator(rec, assigned, where)
        if isinstance(who, str):
            return who
        annotator, source = who
        source = rec.get("source_annotator") or source  # a judge answering under another name than asked
        jid = rec.get("id") or (f"{rec['item']}@{annotator}" if annotator else rec["item"])
        return (jid, rec["item"], prompt, left, right, self._POS[v], "left", kind, annotator,
                rec.get("reason"), rec.get("seconds"), rec.get("confidence"), source)

    def row(self, rec: dict, where: str):
        """A tuple for the judgments INSERT, or a problem string naming ``where``."""
        if "a" not in rec:  # positional: translate with the batch key
            return self.positional(rec, where)
        a, b = self.sys_id.get(rec["a"]), self.sys_id.get(rec["b"])
        if a is None or b is None:
            bad = rec["a"] if a is None else rec["b"]
            return f"{where}: unknown system {quote(bad)}; expected one of {self.systems_txt}"
        if a == b:
            return f"{where}: a == b ({quote(rec['a'])}); a system cannot be compared with itself"
        prompt = rec["prompt"]
        if "prompt_text" in rec and prompt not in self.prompt_ids:
            prompt = self.prompt_of_text(rec["prompt_text"]) or prompt
        if self.prompt_ids and prompt not in self.prompt_ids:
            return f"{where}: unknown prompt {quote(prompt)}; expected a prompt id of this study"
        annotator = rec.get("annotator")
        if annotator is not None and annotator not in self._good_ids:
            problem = self.identity_problem(annotator, where)
            if problem:
                return problem
        reason, seconds, conf = rec.get("reason"), rec.get("seconds"), rec.get("confidence")
        if reason is None and seconds is None and conf is None:  # short row: fewer bound NULLs, faster
            return (rec["id"], prompt, a, b, rec["verdict"], rec.get("a_position"), rec.get("annotator"))
        return (rec["id"], None, prompt, a, b, rec["verdict"], rec.get("a_position"), "external",
                rec.get("annotator"), reason, seconds, conf, None)


def as_full(row: tuple) -> tuple:
    if len(row) == FULL:
        return row
    jid, prompt, a, b, verdict, pos, annotator = row
    return (jid, None, prompt, a, b, verdict, pos, "external", annotator, None, None, None, None)


# ------------------------------------------------------------------ conflicts
@dataclass
class Change:
    jid: str
    old_verdict: str
    new_verdict: str
    old_reason: str | None
    new_reason: str | None
    seconds: float | None
    confidence: float | None
    where: str


_EXISTING = ("SELECT id, file, verdict, reason, a, b, prompt, coalesce(a_position, ''), item, annotator, "
             "source_annotator FROM judgments ")


def classify(con, row: tuple, where: str, file_id: int):
    """Why a row could not be inserted: ``"already"``, a :class:`Change`, or a problem string."""
    full = as_full(row)
    jid, item, prompt, a, b, verdict, pos, _kind, annotator, reason, seconds, conf, source = full
    hit = con.execute(_EXISTING + "WHERE id = ?", (jid,)).fetchone()
    by_id = hit is not None
    if hit is None and item is not None:
        hit = con.execute(_EXISTING + "WHERE item = ? AND coalesce(annotator, '') = coalesce(?, '')",
                          (item, annotator)).fetchone()
    if hit is None:
        return f"{where}: judgment {quote(jid)} rejected by the store"
    old_id, old_file, old_verdict, old_reason, old_a, old_b, old_prompt, old_pos, old_item, old_ann, old_src = hit
    if old_file == file_id:
        if by_id:
            return f"{where}: duplicate judgment id {quote(jid)} (earlier in this file); expected unique ids"
        return (f"{where}: annotator {quote(annotator)} already judged item {quote(item)} (earlier in this file); "
                "one judgment per annotator and item (planned repeats have their own item ids)")
    if (old_a, old_b, old_prompt, old_item) != (a, b, prompt, item) or (old_pos or None) != pos:
        return (f"{where}: judgment id {quote(jid)} is already stored for a different comparison; "
                "expected ids that name one judgment")
    stored_as, given_as = {old_ann, old_src} - {None}, {annotator, source} - {None}
    if by_id and stored_as and given_as and not stored_as & given_as:
        # another annotator's verdict under a stored judgment's id (e.g. a second judge model's output for
        # a batch one model already judged: both name the judgment judge:<item>). Not a change at the
        # source: applying it would store one annotator's verdict as the other's. (Names and raw
        # identities both count, so an alias learned since the first ingest is the same annotator.)
        return (f"{where}: judgment {quote(jid)} is stored from annotator {quote(old_ann or old_src)}; this row "
                f"gives it as {quote(annotator or source)}; expected one annotator per judgment id (a second "
                "judge needs a batch of its own)")
    if (old_verdict, old_reason or None) == (verdict, reason or None):
        return "already"
    return Change(old_id, old_verdict, verdict, old_reason, reason, seconds, conf, where)
