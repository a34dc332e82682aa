"""The study's SQLite file: where it is, how it is opened, how one write transaction runs.

The database uses the standard-library :mod:`sqlite3` in WAL mode with foreign
keys on and a busy timeout; every write is one ``BEGIN IMMEDIATE`` transaction
retried with back-off while another process holds the write lock, so a study is
fully updated or untouched (a SIGKILL mid-ingest leaves it exactly as before).
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

from planner.errors import DataError

CONFIG_NAME = "study.json"
DB_NAME = "study.sqlite"
BUSY_TIMEOUT_S = 30.0
WRITE_RETRIES = 8


def now() -> str:
    """The current UTC time, whole seconds, ISO 8601 (the store's timestamps)."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def db_path(path) -> Path:
    """The database file of the study directory ``path``."""
    return Path(path) / DB_NAME


def connect(db: Path) -> sqlite3.Connection:
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
def write(con: sqlite3.Connection, *, commit: bool = True):
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
