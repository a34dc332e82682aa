"""The study store: a directory with a human-readable config and a SQLite database.

A study is the unit users work in between annotation rounds::

    STUDY/study.json     systems, anchor, reason codes, QC rates, tie convention,
                         seed, max_words (edit by hand if you must; JSON)
    STUDY/study.sqlite   prompts, responses, batches + items (the secret key),
                         judgments, ingested file hashes, artifacts

This module is the store's front door: it re-exports the public names of the
modules that do the work, so ``from planner.store.study import Study, ingest``
keeps working while each idea has one home:

* :mod:`planner.store.db` — opening the SQLite file, one write transaction;
* :mod:`planner.store.schema` — the schema, its version and :data:`MIGRATIONS`;
* :mod:`planner.store.records` — the records and kinds (:class:`Prompt`, :class:`Judgment`, ...);
* :mod:`planner.store.queries` — :class:`Study` (``Study.open(path)``) and its queries;
* :mod:`planner.store.create` — :func:`init_study`;
* :mod:`planner.store.ingest`, :mod:`planner.store.status` — :func:`ingest`, :func:`status`;
* :mod:`planner.store.plan_scan`, :mod:`planner.store.report_scan` — next-batch's and the report's one scan
  of the judgments.

Accounting rules (never bend):

* every judgment is exactly one of ``A``, ``B``, ``tie``, ``invalid`` relative to
  its stored orientation ``(a, b)`` (acceptability judgments: ``pass``,
  ``fail``, ``invalid`` on a single system); invalid is stored and reported,
  never dropped or turned into a tie;
* the half-tie score is ``(wins + ties/2) / (wins + losses + ties)`` and is
  ``None`` (JSON ``null``) when there is no usable judgment — never 0.
"""

from __future__ import annotations

from planner.counts import DEFAULT_STRATUM, Counts, half_tie_score
from planner.store.create import CONFIG_VERSION, DEFAULT_QC, DEFAULT_REASONS, init_study
from planner.store.db import BUSY_TIMEOUT_S, CONFIG_NAME, DB_NAME, WRITE_RETRIES
from planner.store.ingest import IngestResult, ingest
from planner.store.queries import Study
from planner.store.records import AcceptabilityCounts, BatchInfo, BatchItem, Judgment, Prompt, Response, StudyInfo
from planner.store.report_scan import ReportScan, report_scan
from planner.store.schema import MIGRATIONS, SCHEMA_VERSION
from planner.store.status import StatusResult, status
from planner.vocabulary import COUNTED_KINDS, ITEM_KINDS, JUDGMENT_KINDS, PENDING_KINDS

__all__ = [
    "BUSY_TIMEOUT_S", "CONFIG_NAME", "CONFIG_VERSION", "COUNTED_KINDS", "DB_NAME", "DEFAULT_QC", "DEFAULT_REASONS",
    "DEFAULT_STRATUM", "ITEM_KINDS", "JUDGMENT_KINDS", "MIGRATIONS", "PENDING_KINDS", "SCHEMA_VERSION",
    "WRITE_RETRIES", "AcceptabilityCounts", "BatchInfo", "BatchItem", "Counts", "IngestResult", "Judgment",
    "Prompt", "ReportScan", "Response", "StatusResult", "Study", "StudyInfo", "half_tie_score",
    "ingest", "init_study", "report_scan", "status",
]
