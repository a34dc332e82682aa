"""The study database's schema and its migrations.

The schema carries a version (``meta.schema_version``); :data:`MIGRATIONS` maps
an old version to the SQL that lifts it by one, applied in order when a study is
opened (:func:`migrate`, each step one write transaction).
"""

from __future__ import annotations

import sqlite3

from planner.store.db import write

SCHEMA_VERSION = 3

#: the columns of the judgments table (schema version 2 on), shared by the schema and the v1 -> v2 migration
_JUDGMENTS = """(
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, item TEXT REFERENCES items(id),
    prompt TEXT NOT NULL, a INTEGER NOT NULL REFERENCES systems(id), b INTEGER REFERENCES systems(id),
    verdict TEXT NOT NULL CHECK (verdict = 'A' OR verdict = 'B' OR verdict = 'tie' OR verdict = 'invalid'
                                 OR verdict = 'pass' OR verdict = 'fail'),
    a_position TEXT CHECK (a_position IS NULL OR a_position = 'left' OR a_position = 'right'),
    kind TEXT NOT NULL, annotator TEXT, reason TEXT, seconds REAL, confidence REAL,
    file INTEGER NOT NULL REFERENCES files(id), source_annotator TEXT);
"""

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

SCHEMA = """
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
""" + "CREATE TABLE judgments " + _JUDGMENTS + """\
CREATE UNIQUE INDEX judgments_item_annotator ON judgments(item, coalesce(annotator, ''))
    WHERE item IS NOT NULL;
CREATE TABLE artifacts (name TEXT PRIMARY KEY, data BLOB NOT NULL, saved TEXT NOT NULL);
""" + _V2_TABLES + _V3_TABLES

#: schema version v -> SQL that upgrades a v database to v + 1 (applied in order on open).
MIGRATIONS: dict[int, str] = {
    # v1 -> v2: position may be unknown (NULL), the source's own annotator identity is kept beside the
    # mapped name, batches can be voided, files retracted; audit, transport-failure and alias tables.
    1: """
""" + "CREATE TABLE judgments_v2 " + _JUDGMENTS + """\
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


def _statements(sql: str) -> list[str]:
    return [stmt for stmt in sql.split(";") if stmt.strip()]


def create(con: sqlite3.Connection) -> None:
    """Create every table of a new study (inside the caller's transaction) and record the version."""
    for stmt in _statements(SCHEMA):
        con.execute(stmt)
    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def migrate(con: sqlite3.Connection, version: int) -> None:
    """Lift a database at schema ``version`` to :data:`SCHEMA_VERSION`, one write transaction per step."""
    while version < SCHEMA_VERSION:
        with write(con):
            for stmt in _statements(MIGRATIONS[version]):
                con.execute(stmt)
            version += 1
            con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
