"""A study opened twice in one process keeps SQLite's locks: another process cannot delete the WAL under it.

SQLite's locks are POSIX advisory locks, kept per process and file: closing any descriptor of the
database file drops every lock the process holds on it (sqlite.org/howtocorrupt.html, section 2.2).
``Study.open`` checks a database file's header by reading it; done while this process already had a
connection open (``planner run`` keeps its study open while the judge and ingest open theirs), that
read's close dropped the live connection's locks, and a ``planner status`` in another process then
took itself for the last connection and deleted the WAL under the run (which failed with "disk I/O
error" on its next write).
"""

from __future__ import annotations

import subprocess
import sys

from _judge_fixture import make_study

from planner.store.db import is_open
from planner.store.study import Study


def test_a_second_open_in_this_process_keeps_the_wal_of_the_first(tmp_path):
    study = make_study(tmp_path)
    child = f"from planner.store.study import Study\nwith Study.open({str(study)!r}) as s:\n    s.batches()\n"
    with Study.open(study) as st:
        assert is_open(study / "study.sqlite")
        with Study.open(study):   # what the judge and ingest do while a loop holds its study
            pass
        done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        # the other process saw a live connection here: it left the WAL and its index in place
        assert (study / "study.sqlite-wal").exists() and (study / "study.sqlite-shm").exists()
        st.batches()
    assert not is_open(study / "study.sqlite")
