"""The judge response cache and cost ledger (schema v3: ``judge_cache``, ``judge_jobs``).

Every answered judge request is written here **as it arrives** (one autocommit
statement per answer), keyed by :func:`request_key` — the SHA-256 of the
canonical JSON of ``{base_url, custom_id, body}`` (``body`` holds the model,
messages and temperature). A rerun looks every request up first and sends only
the missing ones, so a crash or Ctrl-C loses no answer and pays for none twice.
Only answers are cached (HTTP 200 with a chat completion, refusals and length
cut-offs included); transport failures are not, so a rerun asks again.

The item id is part of the key so that a ``repeat`` QC item (the same text
again) is really asked again rather than answered from the cache.

``judge_jobs`` remembers Batch API jobs from creation until their files are
collected: an interrupted poll resumes the same remote job instead of
submitting (and paying for) the requests again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from planner.connectors.pricing import canonical


def request_key(base_url: str, custom_id: str, body: dict) -> str:
    """SHA-256 (hex) of the canonical ``{"base_url", "custom_id", "body"}``."""
    return hashlib.sha256(canonical({"base_url": base_url.rstrip("/"), "custom_id": custom_id,
                                     "body": body}).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ModelTotals:
    """Ledger totals of one judge model: answers cached, tokens, cost (USD; None if no price was known)."""

    model: str
    answers: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None

    def to_dict(self) -> dict:
        return {"model": self.model, "answers": self.answers, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": self.cost_usd}


class Ledger:
    """The study's cache/ledger tables through a connection of its own (open the study first: migrations)."""

    def __init__(self, study_path):
        from planner.store.db import BUSY_TIMEOUT_S, DB_NAME

        self._con = sqlite3.connect(str(Path(study_path) / DB_NAME), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                    check_same_thread=False)
        self._con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- answers
    def lookup(self, keys) -> dict[str, dict]:
        """``{key: output line}`` for the cached keys among ``keys``."""
        keys, out = list(keys), {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            for k, resp in self._con.execute(
                    f"SELECT key, response FROM judge_cache WHERE key IN ({','.join('?' * len(chunk))})", chunk):
                out[k] = json.loads(resp)
        return out

    def put(self, key: str, line: dict, *, batch: int | None, base_url: str, model: str, transport: str,
            prompt_tokens: int | None, completion_tokens: int | None, cost_usd: float | None, at: str) -> None:
        """Store one answer now (its own transaction; an existing key is kept: never paid twice)."""
        self._con.execute(
            "INSERT OR IGNORE INTO judge_cache (key, custom_id, batch, base_url, model, transport, response, "
            "prompt_tokens, completion_tokens, cost_usd, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, line["custom_id"], batch, base_url, model, transport, json.dumps(line, ensure_ascii=False),
             prompt_tokens, completion_tokens, cost_usd, at))

    def totals(self) -> list[ModelTotals]:
        """Answers, tokens and cost per model (the model the request named), ordered by model."""
        rows = self._con.execute(
            "SELECT model, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), "
            "sum(cost_usd) FROM judge_cache GROUP BY model ORDER BY model").fetchall()
        return [ModelTotals(m, int(n), int(p), int(c), None if cost is None else float(cost))
                for m, n, p, c, cost in rows]

    def spent(self, model: str | None = None) -> float:
        """USD recorded (all models, or one)."""
        q, args = "SELECT coalesce(sum(cost_usd), 0) FROM judge_cache", ()
        if model is not None:
            q, args = q + " WHERE model = ?", (model,)
        return float(self._con.execute(q, args).fetchone()[0])

    def max_completion(self, model: str) -> int | None:
        """The largest completion (tokens) recorded for ``model``: the cost estimate's completion size."""
        row = self._con.execute("SELECT max(completion_tokens) FROM judge_cache WHERE model = ?", (model,)).fetchone()
        return None if row[0] is None else int(row[0])

    # ---------------------------------------------------------------- Batch API jobs
    def add_job(self, remote_id: str, *, batch: int, base_url: str, model: str, input_sha256: str,
                requests: int, at: str) -> None:
        self._con.execute("INSERT OR REPLACE INTO judge_jobs (remote_id, batch, base_url, model, input_sha256, "
                          "requests, status, created) VALUES (?, ?, ?, ?, ?, ?, 'submitted', ?)",
                          (remote_id, batch, base_url, model, input_sha256, requests, at))

    def open_jobs(self, *, batch: int, base_url: str, model: str) -> list[str]:
        """Remote ids of this batch's jobs not yet collected, oldest first."""
        return [r[0] for r in self._con.execute(
            "SELECT remote_id FROM judge_jobs WHERE batch = ? AND base_url = ? AND model = ? AND finished IS NULL "
            "ORDER BY created, rowid", (batch, base_url, model))]

    def finish_job(self, remote_id: str, status: str, at: str) -> None:
        self._con.execute("UPDATE judge_jobs SET status = ?, finished = ? WHERE remote_id = ?",
                          (status, at, remote_id))


def judge_totals(study_path) -> list[dict]:
    """Per-model judge totals of a study for ``status``/``report`` (``[]`` before any judge ran).

    ``[{"model", "answers", "prompt_tokens", "completion_tokens", "cost_usd"}]``;
    ``cost_usd`` is None when no price was given for that model's answers.
    """
    from planner.store.queries import Study

    with Study.open(study_path):  # applies the v3 migration
        pass
    with Ledger(study_path) as ledger:
        return [t.to_dict() for t in ledger.totals()]


def judge_totals_sentence(t: dict) -> str:
    """One line for a person from one :func:`judge_totals` entry (``status`` and ``report`` print it)."""
    cost = "no price given" if t.get("cost_usd") is None else f"${t['cost_usd']:,.4f}"
    return (f"judge {t['model']}: {t['answers']:,} answers, {t['prompt_tokens']:,} prompt + "
            f"{t['completion_tokens']:,} completion tokens, {cost}")
