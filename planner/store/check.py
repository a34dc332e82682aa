"""Checks that a study directory holds what ``planner init`` wrote, before anything reads it.

:func:`read_config` parses ``study.json`` and checks the type of every key the
commands use; :func:`check_database_file` checks the SQLite file's header (the
16-byte magic string, the page size, and that the file holds as many pages as
its header says) without opening it, so a file of garbage, a truncated copy or a
zero-length file is refused as one line naming the file, and never touched.
Used by :meth:`planner.store.study.Study.open`.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

from planner.errors import DataError, quote

SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_CONFIG_BYTES = 10_000_000  # a study.json is a few hundred bytes; refuse to parse a huge file


def _not_db(db: Path, why: str) -> DataError:
    return DataError(f"{db}: not a planner study database ({why}); restore it from a backup or run `planner init` "
                     "in a new directory")


def check_database_file(db: Path) -> None:
    """Refuse a database file that cannot be a complete SQLite database (nothing is opened).

    Skipped while this process holds a connection to ``db`` (checked when it was first opened): closing
    the file read here would drop that connection's SQLite locks (:data:`planner.store.db._live`)."""
    from planner.store.db import is_open

    db = Path(db)
    if is_open(db):
        return
    try:
        size = db.stat().st_size
        with open(db, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise DataError(f"{db}: cannot be read ({exc.strerror or exc})") from None
    if size == 0:
        raise _not_db(db, "the file is empty")
    if len(head) < 100 or head[:16] != SQLITE_MAGIC:
        raise _not_db(db, "the file does not start with the SQLite header")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise _not_db(db, f"page size {page_size} in the header is invalid")
    pages = int.from_bytes(head[28:32], "big")
    # the header's page count is valid when its change counter matches "version-valid-for"
    if pages and head[24:28] == head[92:96] and size < pages * page_size:
        raise _not_db(db, f"the file is truncated: {size:,} bytes, the header says {pages * page_size:,}")
    if size % page_size:
        raise _not_db(db, f"the file is truncated: {size:,} bytes is not a whole number of {page_size}-byte pages")


def _type_problem(key: str, value, expected: str) -> str:
    return f"key {key!r} is {quote(value)}; expected {expected}"


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _config_problems(cfg: dict) -> list[str]:
    out = []
    for key in ("systems",):
        if key not in cfg:
            out.append(f"key {key!r} is missing")
    systems = cfg.get("systems")
    if "systems" in cfg and not (isinstance(systems, list) and all(isinstance(s, str) for s in systems)):
        out.append(_type_problem("systems", systems, "a list of system names"))
    anchor = cfg.get("anchor")
    if anchor is not None and not isinstance(anchor, str):
        out.append(_type_problem("anchor", anchor, "a system name or null"))
    reasons = cfg.get("reasons", [])
    if not (isinstance(reasons, list) and all(isinstance(r, str) for r in reasons)):
        out.append(_type_problem("reasons", reasons, "a list of reason codes"))
    qc = cfg.get("qc", {})
    if not (isinstance(qc, dict) and all(_is_num(v) and 0 <= v <= 1 for v in qc.values())):
        out.append(_type_problem("qc", qc, "an object of rates between 0 and 1"))
    seed = cfg.get("seed", 0)
    if not (_is_int(seed) and 0 <= seed <= 2 ** 63 - 1):
        out.append(_type_problem("seed", seed, "an integer >= 0"))
    words = cfg.get("max_words", 400)
    if words is not None and not (_is_int(words) and 1 <= words <= 10 ** 9):
        out.append(_type_problem("max_words", words, "an integer >= 1 or null (no limit)"))
    tie = cfg.get("tie_convention", "half")
    if not isinstance(tie, str):
        out.append(_type_problem("tie_convention", tie, "a string"))
    return out


def read_config(cfg_path: Path) -> dict:
    """The parsed ``study.json``; a :class:`DataError` naming the file when it is not planner's config."""
    cfg_path = Path(cfg_path)
    expected = "expected the JSON object written by planner init"
    try:
        if cfg_path.stat().st_size > MAX_CONFIG_BYTES:
            size = cfg_path.stat().st_size
            raise DataError(f"{cfg_path}: {size:,} bytes is too large for a study config; {expected}")
        config = json.loads(cfg_path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise DataError(f"{cfg_path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{cfg_path}: not UTF-8 text (byte {exc.start}); {expected}") from None
    except RecursionError:
        raise DataError(f"{cfg_path}: JSON nested too deeply; {expected}") from None
    except ValueError as exc:  # JSONDecodeError, and integers too long to convert
        raise DataError(f"{cfg_path}: malformed JSON ({str(exc)[:80]}); {expected}") from None
    if not isinstance(config, dict):
        raise DataError(f"{cfg_path}: holds a JSON {type(config).__name__}, not an object; {expected}")
    problems = _config_problems(config)
    if problems:
        raise DataError(f"{cfg_path}: not a planner study config: {problems[0]}"
                        + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""))
    return config


#: tables every planner study database has had since schema version 1
CORE_TABLES = ("meta", "systems", "prompts", "responses", "batches", "items", "files", "judgments")


def check_tables(con, db: Path) -> None:
    """Refuse an SQLite database that lacks planner's core tables (another program's file)."""
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in CORE_TABLES if t not in have]
    if missing:
        raise _not_db(db, f"no table {missing[0]!r}")
