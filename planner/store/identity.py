"""Annotator identity: a tool's own user identity -> the study's annotator name (``annotator_aliases``).

A source identity (a Label Studio user's e-mail or ``ls-user:<id>``, an
Argilla ``argilla-user:<uuid>``) is mapped to a planned annotator name (from
``next-batch --annotators``) by one of:

* ``explicit``: ``annotator_map`` (the user's word; applied to judgments
  already stored under the identity too);
* ``name``: the identity is a planned name or its e-mail's local part is one
  (``alice@lab.org`` -> ``alice``);
* ``plan``: every item the identity judged in the file was planned for one
  name;
* ``same-user``: the export names several identities of one user (Label
  Studio's expanded ``completed_by`` gives both the e-mail and the numeric id),
  so the UI export (ids only) and ``pull`` (e-mails) read as one annotator.

A *learned* mapping (``name`` or ``plan``) is made only when it is
unambiguous: exactly one identity (with its same-user twins) of the file claims
the name, and no other identity already holds it (an alias, or judgments
stored under the name from another identity; for ``plan``, judgments stored
under the name without any identity hold it too). Otherwise every claimant
keeps its raw identity as its annotator name, and a note names
``--annotator-map``. In community Label Studio and shared Argilla datasets
everyone sees every task, so "judged only alice's items" is evidence, not
proof; two claimants are never merged into one person.

Until the end of a file, a new identity's rows are stored under the identity
itself; :meth:`Identities.learn` then maps it (relabelling its rows, in this
file and earlier ones, inside the file's transaction) or leaves it. The raw
identity always stays in ``source_annotator``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from planner.errors import DataError, quote
from planner.store.db import now

MAP_ADVICE = "map it with --annotator-map IDENTITY=NAME"


def local_part(identity: str) -> str:
    """The e-mail local part of ``identity`` (the identity itself when it is not an e-mail)."""
    return identity.split("@", 1)[0] if "@" in identity else identity


@dataclass
class _User:
    """One user seen in a file: every identity the rows gave for it, the planned names of its items."""

    ids: list[str]
    assigned: set = field(default_factory=set)


def _placeholders(values: Iterable) -> str:
    return ", ".join("?" for _ in values)


class Identities:
    """Resolves the identities of one file's rows and learns aliases at the end of the file."""

    def __init__(self, con: sqlite3.Connection, planned: set[str], overrides: Mapping[str, str] | None = None):
        self.con = con
        self.planned = planned
        self.aliases: dict[str, str] = dict(con.execute("SELECT source, name FROM annotator_aliases"))
        self.aliases.update(overrides or {})
        self._raw: set[str] | None = None          # identities stored unmapped (lazy: one scan)
        self._users: dict[str, _User] = {}         # first identity seen -> user (identities not yet mapped)
        self._user_of: dict[str, str] = {}         # any identity -> the key of its _User
        self._twins: dict[str, list[str]] = {}     # mapped identity -> its same-user identities not yet aliased

    def _stored_raw(self, identity: str) -> bool:
        if self._raw is None:
            self._raw = {r[0] for r in self.con.execute(
                "SELECT DISTINCT source_annotator FROM judgments WHERE source_annotator = annotator")}
        return identity in self._raw

    def resolve(self, identity: str, also: tuple[str, ...], assigned: str | None) -> tuple[str, str | None]:
        """``(stored annotator name, source identity)`` for a positional row.

        ``also``: other identities of the same user the row gives; ``assigned``:
        the planned annotator of the item (None for items planned for nobody).
        """
        ids = [identity, *(a for a in also if a != identity)]
        for i in ids:
            if i in self.aliases:
                twins = [j for j in ids if j not in self.aliases]
                if twins:
                    self._twins.setdefault(i, [])
                    self._twins[i] += [j for j in twins if j not in self._twins[i]]
                return self.aliases[i], identity
        if identity in self.planned and not also:   # the identity is the name
            return identity, None
        key = next((self._user_of[i] for i in ids if i in self._user_of), None)
        if key is None:  # a known unmapped identity keeps its stored name: re-reads dedupe
            key = next((i for i in ids if len(ids) > 1 and self._stored_raw(i)), identity)
            self._users[key] = _User([key])
        user = self._users[key]
        for i in ids:
            if i not in self._user_of:
                self._user_of[i] = key
                if i not in user.ids:
                    user.ids.append(i)
        if assigned is not None:
            user.assigned.add(assigned)
        return key, key if identity == key else identity

    # ------------------------------------------------------------ end of file
    def learn(self) -> tuple[list[str], list[str]]:
        """Aliases to learn from this file's rows: ``(["identity -> name", ...], notes)``.

        Runs inside the file's write transaction; a mapping that would give one
        annotator two judgments of an item is not made (a note says so).
        """
        lines: list[str] = []
        notes: list[str] = []
        self._learn_twins(lines, notes)
        claims: dict[str, list[tuple[str, str]]] = {}
        for key, user in self._users.items():
            how, names = self._candidates(user)
            if len(names) == 1:
                claims.setdefault(next(iter(names)), []).append((key, how))
                continue
            if len(names) > 1:
                what = "judged items planned for" if how == "plan" else "has identities naming"
                notes.append(f"{key} {what} {', '.join(sorted(names))}: kept as {quote(key)} ({MAP_ADVICE})")
            self._link(user.ids[1:], key, "same-user")   # unmapped, but its twins read as this annotator later
        for name, who in sorted(claims.items()):
            by_name = [k for k, how in who if how == "name"]
            winners = by_name or [k for k, _ in who]   # carrying the name beats judging its items
            if len(winners) == 1:
                lines += self._map_user(winners[0], name, "name" if by_name else "plan", notes)
            else:
                notes.append(f"{', '.join(winners)} all claim annotator {name} ("
                             + ("their identities carry the name" if by_name else
                                "each judged only items planned for it") + "): each kept as it is, never merged "
                             f"into one annotator ({MAP_ADVICE})")
            for k, _ in who:
                if k in winners and len(winners) == 1:
                    continue
                if k not in winners:
                    notes.append(f"{k} judged only items planned for {name}, but {winners[0]} carries that "
                                 f"name: kept as {quote(k)} ({MAP_ADVICE})")
                self._link(self._users[k].ids[1:], k, "same-user")
        return lines, notes

    def _candidates(self, user: _User) -> tuple[str, set]:
        by_name = {n for i in user.ids for n in (i, local_part(i)) if n in self.planned}
        if by_name:
            return "name", by_name
        return "plan", set(user.assigned)

    def _holders(self, name: str, how: str) -> set[str]:
        """Identities that already hold ``name``: aliases to it, sources of judgments stored under it."""
        held = {s for s, n in self.aliases.items() if n == name}
        for (src,) in self.con.execute("SELECT DISTINCT source_annotator FROM judgments WHERE annotator = ?",
                                       (name,)):
            if src is not None:
                held.add(src)
            elif how == "plan":   # stored under the name with no identity (the plan's own file): someone holds it
                held.add(name)
        return held

    def _map_user(self, key: str, name: str, how: str, notes: list[str]) -> list[str]:
        ids = self._users[key].ids
        others = self._holders(name, how) - set(ids)
        if others:
            notes.append(f"{key} judged only items planned for {name} (or carries the name), but "
                         f"{', '.join(sorted(others)[:3])} already holds that name: kept as {quote(key)} "
                         f"({MAP_ADVICE})")
            self._link(ids[1:], key, "same-user")
            return []
        try:
            self.relabel(ids, name, [how] + ["same-user"] * (len(ids) - 1))
        except sqlite3.IntegrityError:
            notes.append(f"{key} maps to annotator {quote(name)}, who already judged some of the same items: "
                         f"kept as {quote(key)} ({MAP_ADVICE})")
            self._link(ids[1:], key, "same-user")
            return []
        return [f"{i} -> {name}" for i in ids]

    def _learn_twins(self, lines: list[str], notes: list[str]) -> None:
        """Same-user identities of mapped identities (the numeric id beside a mapped e-mail) map with them."""
        for mapped, twins in self._twins.items():
            name = self.aliases[mapped]
            for t in twins:
                if t in self.aliases and self.aliases[t] != name:
                    notes.append(f"{t} and {mapped} are one user of the tool but map to {self.aliases[t]} and "
                                 f"{name}; left as they are ({MAP_ADVICE})")
                    continue
                if t in self._user_of:   # also seen alone in this file: it is this user
                    continue
                self._link([t], name, "same-user")
                lines.append(f"{t} -> {name}")

    def _link(self, ids: list[str], name: str, how: str) -> None:
        for i in ids:
            if i not in self.aliases:
                self.con.execute("INSERT OR IGNORE INTO annotator_aliases (source, name, how, at) VALUES (?, ?, ?, ?)",
                                 (i, name, how, now()))
                self.aliases[i] = name

    def relabel(self, ids: list[str], name: str, how: list[str]) -> int:
        """Map every identity of ``ids`` to ``name``: aliases written, stored judgments relabelled.

        Judgments whose source identity is one of ``ids`` take the name; aliases
        that pointed at one of ``ids`` (its same-user twins) follow. Raises
        :class:`sqlite3.IntegrityError` (nothing changed) when ``name`` would then
        hold two judgments of one item.
        """
        con = self.con
        con.execute("SAVEPOINT relabel")
        try:
            marks = _placeholders(ids)
            # the identities' own judgments, and those of identities aliased to them (same-user twins)
            n = con.execute(f"UPDATE judgments SET annotator = ? WHERE annotator IS NOT ? AND (source_annotator IN "
                            f"({marks}) OR source_annotator IN (SELECT source FROM annotator_aliases WHERE name IN "
                            f"({marks})))", (name, name, *ids, *ids)).rowcount
            con.execute(f"UPDATE annotator_aliases SET name = ? WHERE name IN ({_placeholders(ids)})", (name, *ids))
            for i, h in zip(ids, how):
                con.execute("INSERT OR REPLACE INTO annotator_aliases (source, name, how, at) VALUES (?, ?, ?, ?)",
                            (i, name, h, now()))
        except sqlite3.IntegrityError:
            con.execute("ROLLBACK TO relabel")
            con.execute("RELEASE relabel")
            raise
        con.execute("RELEASE relabel")
        for s, n_ in list(self.aliases.items()):
            if n_ in ids:
                self.aliases[s] = name
        self.aliases.update({i: name for i in ids})
        return n


def apply_explicit(con: sqlite3.Connection, amap: Mapping[str, str]) -> None:
    """Store ``annotator_map`` (identity -> name) and relabel what is already stored under each identity."""
    ident = Identities(con, set())
    for identity, name in amap.items():
        try:
            ident.relabel([identity], name, ["explicit"])
        except sqlite3.IntegrityError:
            raise DataError(f"annotator_map {quote(identity)}={quote(name)}: {quote(name)} already judged some "
                            f"of the items {quote(identity)} judged; one judgment per annotator and item",
                            parameters=("annotator_map",)) from None
