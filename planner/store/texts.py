"""The study's response texts as a read-on-demand mapping (:meth:`planner.store.queries.Study.response_texts`).

``next-batch`` hands :func:`planner.batch.assemble.assemble_batch` a ``{(prompt, system): text}``
mapping of every response, but shows only the planned comparisons' texts (and, for
attention items, a few others). At Arena scale (300 prompts x 300 systems) building
that dict read all 90,000 texts (~1 s); this mapping reads one text per key asked
for (primary-key lookups), and the keys (without texts) only when it is iterated.
Its keys, their order and its values are those of the dict built from
:meth:`Study.responses` (``tests/test_arena_texts.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping

_ONE = ("SELECT r.text FROM responses r JOIN prompts p ON p.id = r.prompt "
        "WHERE r.prompt = ? AND r.system = ?")


class ResponseTexts(Mapping):
    """``{(prompt_id, system): text}`` read from the study on demand; each text read once."""

    def __init__(self, con: sqlite3.Connection, sys_id: dict[str, int], keys: Callable[[], list]):
        self._con = con
        self._sys_id = sys_id
        self._keys_fn = keys
        self._keys: list | None = None
        self._texts: dict[tuple[str, str], str | None] = {}

    def __getitem__(self, key) -> str:
        if key not in self._texts:
            text = None
            if isinstance(key, tuple) and len(key) == 2 and key[1] in self._sys_id:
                row = self._con.execute(_ONE, (key[0], self._sys_id[key[1]])).fetchone()
                text = None if row is None else row[0]
            self._texts[key] = text
        text = self._texts[key]
        if text is None:
            raise KeyError(key)
        return text

    def _all_keys(self) -> list:
        if self._keys is None:
            self._keys = self._keys_fn()
        return self._keys

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._all_keys())

    def __len__(self) -> int:
        return len(self._all_keys())
