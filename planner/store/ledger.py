"""The study's judge response cache and cost ledger (schema v3 tables ``judge_cache``, ``judge_jobs``).

Every answered judge request is written here **as it arrives** (one autocommit
statement per answer, before anything else is done with it), keyed by the
judge connector's request key (:func:`planner.connectors.openai_judge.request_key`:
the SHA-256 of the canonical JSON of ``{base_url, custom_id, body}``). A rerun
looks every request up first and sends only the missing ones, so a crash or
Ctrl-C loses no answer and pays for none twice. Only answers are cached (HTTP
200 with a chat completion, refusals and length cut-offs included); transport
failures are not, so a rerun asks again.

Numbers from a server never reach SQLite unchecked: a token count outside
``[0, MAX_TOKENS]`` is stored as NULL (the raw value stays in the cached
response text) and its cost is the estimate; totals use SQLite's ``total()``
(a float), which cannot overflow, so a study holding 2**62-token answers from
an older version stays readable.

``judge_jobs`` remembers Batch API jobs from the **intent** on: a row
``remote_id = "intent:<token>"`` (status ``intent``) is written *before* the job
is created, and becomes the job's row once the server names it. An
interrupted poll resumes the recorded job; an intent without a job is looked
up on the server by its token before anything is submitted again.

The ledger has a connection of its own (:func:`planner.store.db.connect` with
``threads=True``: the direct transport's worker threads write their answers
through it), opened after :meth:`planner.store.queries.Study.open` applied the
migrations.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Self

from planner.limits import MAX_TOKENS, plausible_tokens
from planner.store.db import connect, db_path

INTENT = "intent:"


def plausible_cost(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        and v >= 0 else None


@dataclass(frozen=True)
class ModelTotals:
    """Ledger totals of one judge model: answers cached, tokens, cost (USD; None if no price was known),
    and ``estimated``: answers whose server reported no usable token counts (their cost is the estimate)."""

    model: str
    answers: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    estimated: int = 0

    def to_dict(self) -> dict:
        return {"model": self.model, "answers": self.answers, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": self.cost_usd,
                "estimated_answers": self.estimated}


@dataclass(frozen=True)
class Intent:
    """A Batch API job planner set out to create: its token, when, and the job id once known."""

    token: str
    created: str
    remote_id: str | None


class Ledger:
    """The study's cache/ledger tables through a connection of its own (open the study first: migrations)."""

    def __init__(self, study_path):
        self._con = connect(db_path(study_path), threads=True)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def check_writable(self) -> None:
        """Raise ``sqlite3.OperationalError`` unless the database takes a write (rolled back at once)."""
        self._con.execute("BEGIN IMMEDIATE")
        try:
            self._con.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
            self._con.execute("INSERT INTO judge_jobs (remote_id, batch, base_url, model, input_sha256, requests, "
                              "status, created) VALUES ('probe', 0, '', '', '', 0, 'probe', '')")
        finally:
            self._con.execute("ROLLBACK")

    # ---------------------------------------------------------------- answers
    def lookup(self, keys) -> dict[str, dict]:
        """``{key: output line}`` for the cached keys among ``keys``, as stored (the judge workflow cleans
        them again: a line cached by an older version may hold a lone surrogate or an echoed key)."""
        keys, out = list(keys), {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            for k, resp in self._con.execute(
                    f"SELECT key, response FROM judge_cache WHERE key IN ({','.join('?' * len(chunk))})", chunk):
                out[k] = json.loads(resp)
        return out

    def put(self, key: str, line: dict, *, batch: int | None, base_url: str, model: str, transport: str,
            prompt_tokens: int | None, completion_tokens: int | None, cost_usd: float | None, at: str) -> None:
        """Store one answer now (its own transaction; an existing key is kept: never paid twice).

        Token counts and cost are checked here (:func:`plausible_tokens`): nothing
        from a server reaches SQLite unchecked.
        """
        self._con.execute(
            "INSERT OR IGNORE INTO judge_cache (key, custom_id, batch, base_url, model, transport, response, "
            "prompt_tokens, completion_tokens, cost_usd, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, line["custom_id"], batch, base_url, model, transport, json.dumps(line, ensure_ascii=False),
             plausible_tokens(prompt_tokens), plausible_tokens(completion_tokens), plausible_cost(cost_usd), at))

    def totals(self) -> list[ModelTotals]:
        """Answers, tokens and cost per model (the model the request named), ordered by model."""
        rows = self._con.execute(
            "SELECT model, count(*), total(min(max(coalesce(prompt_tokens, 0), 0), ?)), "
            "total(min(max(coalesce(completion_tokens, 0), 0), ?)), sum(cost_usd), "
            "count(*) - count(prompt_tokens + completion_tokens) "
            "FROM judge_cache GROUP BY model ORDER BY model", (MAX_TOKENS, MAX_TOKENS)).fetchall()
        return [ModelTotals(m, int(n), int(p), int(c), None if cost is None else float(cost), int(est))
                for m, n, p, c, cost, est in rows]

    def spent(self, model: str | None = None) -> float:
        """USD recorded (all models, or one)."""
        q = "SELECT total(cost_usd) FROM judge_cache"
        args: tuple[str, ...] = ()
        if model is not None:
            q, args = q + " WHERE model = ?", (model,)
        got = float(self._con.execute(q, args).fetchone()[0])
        return got if math.isfinite(got) else float("inf")

    def max_completion(self, model: str) -> int | None:
        """The largest completion (tokens) recorded for ``model``: the cost estimate's completion size."""
        row = self._con.execute("SELECT max(completion_tokens) FROM judge_cache WHERE model = ? AND "
                                "completion_tokens BETWEEN 0 AND ?", (model, MAX_TOKENS)).fetchone()
        return None if row[0] is None else int(row[0])

    # ---------------------------------------------------------------- Batch API jobs
    def add_intent(self, token: str, *, batch: int, base_url: str, model: str, input_sha256: str,
                   requests: int, at: str) -> None:
        """Record that a job is about to be created (before ``create`` is sent)."""
        self._con.execute("INSERT OR REPLACE INTO judge_jobs (remote_id, batch, base_url, model, input_sha256, "
                          "requests, status, created) VALUES (?, ?, ?, ?, ?, ?, 'intent', ?)",
                          (INTENT + token, batch, base_url, model, input_sha256, requests, at))

    def intents(self, *, batch: int, base_url: str, model: str) -> list[Intent]:
        """This batch's intents that never got a job id, oldest first."""
        return [Intent(r[0][len(INTENT):], r[1], None) for r in self._con.execute(
            "SELECT remote_id, created FROM judge_jobs WHERE batch = ? AND base_url = ? AND model = ? AND "
            "status = 'intent' ORDER BY created, rowid", (batch, base_url, model))]

    def bind_intent(self, token: str, remote_id: str, at: str) -> None:
        """The server named the job of intent ``token``: the row becomes the job's (status ``submitted``)."""
        self._con.execute("UPDATE judge_jobs SET remote_id = ?, status = 'submitted', created = ? "
                          "WHERE remote_id = ?", (remote_id, at, INTENT + token))

    def drop_intent(self, token: str) -> None:
        self._con.execute("DELETE FROM judge_jobs WHERE remote_id = ?", (INTENT + token,))

    def open_jobs(self, *, batch: int, base_url: str, model: str) -> list[str]:
        """Remote ids of this batch's jobs not yet collected, oldest first."""
        return [r[0] for r in self._con.execute(
            "SELECT remote_id FROM judge_jobs WHERE batch = ? AND base_url = ? AND model = ? AND finished IS NULL "
            "AND status != 'intent' ORDER BY created, rowid", (batch, base_url, model))]

    def finish_job(self, remote_id: str, status: str, at: str) -> None:
        self._con.execute("UPDATE judge_jobs SET status = ?, finished = ? WHERE remote_id = ?",
                          (status, at, remote_id))


def judge_totals(study_path) -> list[dict]:
    """Per-model judge totals of a study for ``status``/``report`` (``[]`` before any judge ran).

    ``[{"model", "answers", "prompt_tokens", "completion_tokens", "cost_usd", "estimated_answers"}]``;
    ``cost_usd`` is None when no price was given for that model's answers;
    ``estimated_answers`` counts answers without usable token counts (their cost, when
    prices were given, is planner's estimate).
    """
    from planner.store.queries import Study

    with Study.open(study_path):  # applies the v3 migration
        pass
    with Ledger(study_path) as ledger:
        return [t.to_dict() for t in ledger.totals()]


def judge_totals_sentence(t: dict) -> str:
    """One line for a person from one :func:`judge_totals` entry (``status`` and ``report`` print it)."""
    est = t.get("estimated_answers") or 0
    if t.get("cost_usd") is None:
        cost = "no price given"
    else:
        cost = f"${t['cost_usd']:,.4f}" + (f" ({est:,} answer(s) without token usage: cost estimated)"
                                           if est else "")
    usage = f"; {est:,} without token usage" if est and t.get("cost_usd") is None else ""
    return (f"judge {t['model']}: {t['answers']:,} answers, {t['prompt_tokens']:,} prompt + "
            f"{t['completion_tokens']:,} completion tokens{usage}, {cost}")
