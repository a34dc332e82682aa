"""The study's SQLite file: where it is, how it is opened, how one write transaction runs.

The database uses the standard-library :mod:`sqlite3` in WAL mode with foreign
keys on and a busy timeout; every write is one ``BEGIN IMMEDIATE`` transaction
retried with back-off while another process holds the write lock, so a study is
fully updated or untouched (a SIGKILL mid-ingest leaves it exactly as before).
"""

from __future__ import annotations

import datetime as _dt
import os
import sqlite3
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from planner.errors import DataError

CONFIG_NAME = "study.json"
DB_NAME = "study.sqlite"
BUSY_TIMEOUT_S = 30.0
WRITE_RETRIES = 8


def now() -> str:
    """The current UTC time, whole seconds, ISO 8601 (the store's timestamps)."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def db_path(path) -> Path:
    """The database file of the study directory ``path``."""
    return Path(path) / DB_NAME


FULL_BELOW = 1 << 16   # bytes free under which the disk holding a study counts as full


def _disk_full(db: Path | None) -> bool:
    if db is None:
        return False
    try:
        st = os.statvfs(Path(db).absolute().parent)
    except (OSError, AttributeError):   # AttributeError: no statvfs (Windows)
        return False
    return st.f_bavail * st.f_frsize < FULL_BELOW


def database_error(exc: sqlite3.Error, db: Path | None = None) -> DataError:
    """What an SQLite error means for the user, naming the real cause.

    Only real damage (a malformed page, not a database) says "restore from a
    backup": a full disk, a read-only or unopenable file, an integer overflow in
    a sum and an I/O error each say what they are (the study is intact: the
    command's write transaction was rolled back).
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)[:120]
    where = f"{db}: " if db is not None else ""
    if name.startswith("SQLITE_FULL") or "disk is full" in text or ((
            name.startswith("SQLITE_IOERR") or "disk I/O error" in text) and _disk_full(db)):
        return DataError(f"{where}the disk holding the study is full ({text}); the study is intact and this "
                         "command stored nothing: free some space and run it again")
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")) or "readonly" in text \
            or "unable to open" in text:
        return DataError(f"{where}the study database cannot be written or opened ({text}); check the "
                         "permissions of the study directory")
    if "integer overflow" in text:
        return DataError(f"{where}a number stored in the study is too large to add up in SQLite's 64-bit "
                         f"integers ({text}); the database itself is not damaged")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text:
        return DataError(f"{where}the study database is damaged or unreadable ({text}); restore study.sqlite "
                         "from a backup")
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in text:
        return DataError(f"{where}the study database could not be read or written ({text}); check the disk "
                         "holding the study")
    return DataError(f"{where}the study database reported an error ({text})")


# Databases this process holds open, counted by connection. SQLite's locks are POSIX advisory locks,
# which the kernel keeps per process and file: closing ANY descriptor of the file in this process
# drops them all, live connections' included (sqlite.org/howtocorrupt.html, 2.2), after which another
# process closing its own connection takes itself for the last one and deletes the WAL under ours.
# So while a connection is live, nothing here opens the file by other means (`is_open`).
_live: Counter[str] = Counter()
_live_lock = threading.Lock()


class _Connection(sqlite3.Connection):
    """A connection that counts itself in :data:`_live` until it is closed."""

    _key = ""

    def close(self) -> None:
        if self._key:
            with _live_lock:
                _live[self._key] -= 1
            self._key = ""
        super().close()


def is_open(db: Path) -> bool:
    """Whether this process holds a live connection to ``db``."""
    with _live_lock:
        return _live[os.path.realpath(db)] > 0


def connect(db: Path, *, threads: bool = False) -> sqlite3.Connection:
    """Open an existing study database (never creates one: ``mode=rw``).

    ``threads``: the connection may be used from other threads than this one (the judge ledger's, written
    by the direct transport's workers; SQLite serialises the calls).
    """
    try:
        con = sqlite3.connect(f"{Path(db).absolute().as_uri()}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S,
                              isolation_level=None, check_same_thread=not threads, factory=_Connection)
    except sqlite3.Error as exc:
        raise DataError(f"{db}: cannot open the study database ({exc})") from None
    key = os.path.realpath(db)
    with _live_lock:
        _live[key] += 1
    con._key = key
    try:
        con.execute("PRAGMA foreign_keys = ON")
        con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        con.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        con.close()
        raise database_error(exc, db) from None
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
