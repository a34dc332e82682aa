"""Judging a recorded batch: send its requests to an OpenAI-compatible endpoint and ingest the answers
(``planner judge``, and each round of ``planner run``).

The pipeline (one function each)::

    study ──► requests (re-rendered byte-identically from the study: planner.services.batch_files)
          ──► skip items already judged, answers already cached (planner.store.ledger)
          ──► cost cap (planner.connectors.pricing) ──► send: direct or Batch API
              (planner.connectors.openai_judge), each answer cached as it arrives
          ──► one OpenAI-batch-output file with every line (cached + new, failures too)
          ──► planner.store.study.ingest (answers → judgments; failures → unanswered items)

Rerunning is safe and free for what was answered: cached answers are not sent
again, and ingest skips judgments already stored. Transport failures are not
cached: the next run asks again and a late answer lands normally.

:func:`judge_recorded_batch` reads the batch from the caller's open study, and
reaches the study's file by its path for three things that must own their
connection: the batch lock (:func:`planner.store.locks.hold`, a lock file), the
judge ledger (:class:`planner.store.ledger.Ledger`, a connection of its own that
the direct transport's worker threads write each answer through as it arrives)
and the ingest of the answers (:func:`planner.store.study.ingest`, one write
transaction of its own). The open study is in autocommit, so it holds no lock
while they write and its later reads see what they stored.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from planner import limits
from planner.errors import DataError, UsageError, quote

__all__ = ["MAX_ATTEMPTS", "MAX_CONCURRENCY", "TRANSPORTS", "JudgeOptions", "JudgeResult", "batch_requests",
           "check_both_orders", "graceful_interrupt", "judge_recorded_batch", "pick_batch"]

TRANSPORTS = ("direct", "batch")
MAX_CONCURRENCY = 256
MAX_ATTEMPTS = 100   # tries of one request (the first and its retries)


@dataclass(frozen=True)
class JudgeOptions:
    """How to judge. ``transport`` ``direct`` (``concurrency`` requests in flight) or ``batch`` (Batch API).

    Prices in USD per 1M prompt (``price_in``) and completion (``price_out``)
    tokens; ``max_cost`` USD for this study and model (the ledger's spend counts);
    ``timeout`` seconds per HTTP request; ``poll_interval`` the longest pause
    between Batch API polls; ``seed`` seeds the retry jitter.
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    transport: str = "direct"
    concurrency: int = 4
    both_orders: bool = False
    price_in: float | None = None
    price_out: float | None = None
    max_cost: float | None = None
    timeout: float = 120.0
    max_attempts: int = 6
    poll_interval: float = 30.0
    seed: int = 0
    dry_run: bool = False
    sleep: Callable[[float], None] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        from planner.connectors.guard import check_url
        from planner.connectors.pricing import check_prices

        if not isinstance(self.model, str) or not self.model.strip():
            raise UsageError("`model` is required (the judge's model name, e.g. gpt-4o)", parameters=("model",))
        limits.check_choice("transport", self.transport, TRANSPORTS)
        limits.check_int("concurrency", self.concurrency, 1, MAX_CONCURRENCY)
        limits.check_flag("both_orders", self.both_orders)
        limits.check_float("timeout", self.timeout, 0.0, math.inf, low_open=True, unit="seconds")
        limits.check_int("max_attempts", self.max_attempts, 1, MAX_ATTEMPTS)
        limits.check_float("poll_interval", self.poll_interval, 0.0, math.inf, low_open=True, unit="seconds")
        if self.base_url is not None:
            check_url(self.base_url, "base_url")
        limits.check_seed("seed", self.seed)
        limits.check_flag("dry_run", self.dry_run)
        if not isinstance(self.api_key_env, str) or not self.api_key_env.strip():
            raise UsageError("`api_key_env` must name an environment variable", parameters=("api_key_env",))
        check_prices(self.price_in, self.price_out, self.max_cost)

    @property
    def prices(self):
        """The token prices (:class:`planner.connectors.pricing.Prices`; ``known`` False without them)."""
        from planner.connectors.pricing import check_prices

        return check_prices(self.price_in, self.price_out, self.max_cost)


@dataclass(frozen=True)
class JudgeResult:
    """What one ``judge`` call did.

    ``requests`` in the batch; ``judged_before`` items skipped because the
    study already holds their judge verdict; ``cached`` answered from the
    cache (no HTTP call); ``sent`` requests sent now; ``answered``/``failed``
    of those; ``not_sent`` held back by the cost cap or Ctrl-C; tokens and
    ``cost_usd`` of the answers received now; ``spent_usd`` the ledger's total
    for this model in the study (None without prices); ``output`` the
    batch-output file ingested; ``ingest`` its ingest summary sentence.
    """

    batch_id: int
    model: str
    base_url: str
    transport: str
    requests: int
    judged_before: int
    cached: int
    sent: int
    answered: int
    failed: int
    not_sent: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    spent_usd: float | None
    estimated_usd: float | None
    stopped_by_cost: bool
    interrupted: bool
    dry_run: bool
    output: str | None
    new_judgments: int
    unanswered: int
    ingest: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        from dataclasses import asdict

        d = asdict(self)
        d["notes"] = list(self.notes)
        return d


def _endpoint(o: JudgeOptions):
    from planner.connectors.openai_judge import Endpoint

    return Endpoint(base_url=o.base_url, api_key_env=o.api_key_env, timeout=float(o.timeout),
                    max_attempts=o.max_attempts, poll_interval=float(o.poll_interval), seed=o.seed, sleep=o.sleep)


# ------------------------------------------------------------------ the requests
def pick_batch(study, batch: int | None):
    """The batch to judge: ``batch``, else the newest batch that is not voided."""
    infos = study.batches()
    if batch is None:
        live = [b for b in infos if not b.voided]
        if not live:
            raise UsageError("the study has no batch to judge yet; write one with "
                             "`planner next-batch STUDY `format` judge `judge_model` NAME`",
                             parameters=('format', 'judge_model'))
        return live[-1]
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise UsageError(f"`batch` ({quote(batch)}) must be a batch id (a whole number >= 1)", parameters=('batch',))
    by_id = {b.id: b for b in infos}
    if batch not in by_id:
        raise UsageError(f"`batch` ({batch}): the study has no such batch", parameters=('batch',))
    if by_id[batch].voided:
        raise UsageError(f"`batch` ({batch}): the batch was voided; its items no longer count", parameters=('batch',))
    return by_id[batch]


def batch_requests(study, info, model: str) -> list[dict]:
    """The batch's judge requests, re-rendered from the study, with ``body.model`` = ``model``.

    A batch written for another model gets that model's name and temperature
    rule (none for o-series/gpt-5 families).
    """
    from planner.formats.writers import judge_temperature
    from planner.services.batch_files import render_recorded

    rendering = info.manifest.get("rendering") or {}
    if rendering.get("format") != "judge":
        raise UsageError(f"batch {info.id} was written as {quote(rendering.get('format'))}; planner judge sends "
                         "judge batches (write one with next-batch `format` judge `judge_model` NAME)",
                         parameters=('format', 'judge_model'))
    files, _ = render_recorded(study, info.id)
    out = []
    for _path, data in files:
        for ln in data.decode("utf-8").splitlines():
            if ln.strip():
                out.append(json.loads(ln))
    if model != rendering.get("judge_model"):
        temp = judge_temperature(model, rendering.get("temperature"))
        for r in out:
            r["body"]["model"] = model
            r["body"].pop("temperature", None)
            if temp is not None:
                r["body"]["temperature"] = temp
    return out


def check_both_orders(study, batch_id: int) -> None:
    """Every pairwise comparison of the batch must also be issued swapped (``next-batch --both-orders``)."""
    items = study.items(batch_id)
    swapped = {it.link for it in items if it.kind == "swap"}
    lone = [it.item_id for it in items if it.kind in ("regular", "overlap") and it.right is not None
            and it.item_id not in swapped]
    if lone:
        raise UsageError(f"`both_orders`: batch {batch_id} has {len(lone)} comparison(s) without their swapped "
                         f"order (e.g. item {lone[0]}); write the batch with `planner next-batch `both_orders`` "
                         "(planner run `both_orders` does) so each order is an item of its own",
                         parameters=('both_orders',))


def _judged_items(study, batch_id: int) -> set[str]:
    return {j.item for j in study.judgments() if j.batch == batch_id and j.id.startswith("judge:")}


# ------------------------------------------------------------------ judging
def _output_path(study_path, batch_id: int, model: str) -> Path:
    import re

    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or "model"
    return Path(study_path) / "judge" / f"batch-{batch_id:03d}.{slug}.output.jsonl"


def _write_output(path: Path, lines: list[dict]) -> None:
    from planner.formats.staging import write_atomically

    try:
        path.parent.mkdir(exist_ok=True)
        data = "".join(json.dumps(ln, ensure_ascii=False, sort_keys=True) + "\n" for ln in lines).encode("utf-8")
        write_atomically([(path, data)], force=True)
    except OSError as exc:
        raise DataError(f"the judge's answers are cached in the study, but writing {path.name} failed "
                        f"({exc.strerror or exc.__class__.__name__}); free space or fix the permissions and run "
                        "the same command again (nothing is paid again)") from None


def _prepare(study, o: JudgeOptions, batch_id: int):
    """``(info, requests, judged_before)`` from the open study (read only; under the batch lock but in a dry run)."""
    info = pick_batch(study, batch_id)
    if o.both_orders:
        check_both_orders(study, info.id)
    reqs = batch_requests(study, info, o.model.strip())
    judged = _judged_items(study, info.id)
    return info, reqs, judged


def judge_recorded_batch(study, options: JudgeOptions, *, batch: int | None = None,
                         progress: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
                         on_answer: Callable[[dict], None] | None = None) -> JudgeResult:
    """Judge one recorded batch of the open ``study`` (default: the newest live one) and ingest the answers.

    ``progress(event)`` receives dicts (``phase`` ``direct`` or ``batch``);
    ``stop`` (set on Ctrl-C) sends nothing more, lets requests in flight
    finish, and still caches and ingests what arrived; ``on_answer(line)`` runs
    after each answer is cached (tests use it to simulate a crash). The batch
    is locked for the whole call (:func:`planner.store.locks.hold`): a second
    process judging it at the same time is refused, naming this one.
    """
    from planner.store.locks import hold, holder_note

    batch_id = pick_batch(study, batch).id
    if options.dry_run:
        return _judge(study, options, batch_id, progress, stop, on_answer, ())
    with hold(study.path, f"judge-batch-{batch_id}", f"batch {batch_id}") as held:
        note = holder_note(held, f"batch {batch_id}")
        return _judge(study, options, batch_id, progress, stop, on_answer, (note,) if note else ())


def _judge(study, options: JudgeOptions, batch_id: int, progress, stop, on_answer, notes0) -> JudgeResult:
    from planner.connectors.guard import clean
    from planner.connectors.openai_judge import request_key
    from planner.services.judge_send import Context, Spend, Tally
    from planner.store.ledger import Ledger

    study_path = study.path
    prices = options.prices
    ep = _endpoint(options)
    model = options.model.strip()
    info, reqs, judged = _prepare(study, options, batch_id)
    keys = {r["custom_id"]: request_key(ep.url, r["custom_id"], r["body"]) for r in reqs}
    with Ledger(study_path) as ledger:
        open_reqs = [r for r in reqs if r["custom_id"] not in judged]
        # cleaned again: a line cached by an older version may hold a lone surrogate or an echoed key
        cached = {k: clean(line) for k, line in ledger.lookup(keys[r["custom_id"]] for r in open_reqs).items()}
        ctx = Context(ledger, Spend(prices, options.max_cost, ledger.spent(model)), Tally(), info.id, ep.url, model,
                      {r["custom_id"]: r for r in reqs}, keys, notes=list(notes0))
        ctx.lines.update({r["custom_id"]: cached[keys[r["custom_id"]]] for r in open_reqs
                          if keys[r["custom_id"]] in cached})
        todo = [(k, r) for k, r in enumerate(reqs) if r["custom_id"] not in judged and r["custom_id"] not in ctx.lines]
        ctx.spend.max_completion = ledger.max_completion(model)
        est = sum(prices.estimate(r["body"]) for _, r in todo) if prices.known else None
        sent, fatal = 0, None
        if todo and not options.dry_run:
            sent, fatal = _send(study_path, ep, todo, ctx, options, progress, stop, on_answer)
        spent = ledger.spent(model) if prices.known else None
    return _finish(study_path, options, info, reqs, judged, cached, ctx, todo, sent, spent, est, stop, fatal)


def _send(study_path, ep, todo, ctx, options: JudgeOptions, progress, stop, on_answer):
    """``(sent, fatal error or None)``: the room check, then one transport; answers are cached as they come."""
    import sqlite3

    from planner.connectors.openai_judge import make_client
    from planner.services.judge_send import check_room, send_batch_job, send_direct_all

    check_room(study_path, ctx.ledger, len(todo))
    client = make_client(ep)
    try:
        if options.transport == "direct":
            return send_direct_all(client, ep, todo, ctx, options.concurrency, progress, stop, on_answer), None
        return send_batch_job(client, ep, todo, ctx, progress, stop, on_answer), None
    except DataError as exc:  # fatal: what arrived is cached; store it before saying so
        return ctx.tally.answered + ctx.tally.failed, exc
    except sqlite3.OperationalError as exc:
        raise DataError(f"the study stopped taking answers ({exc}); {ctx.tally.answered} answer(s) were "
                        "stored, the one that failed is lost — free space or fix the study, then run the same "
                        "command again") from None
    finally:
        client.close()


def _finish(study_path, options, info, reqs, judged, cached, ctx, todo, sent, spent, est, stop, fatal):
    """Write the output file, ingest it, and say what happened (then raise a fatal error, if one stopped it)."""
    prices, tally = ctx.spend.prices, ctx.tally
    notes = ctx.notes
    interrupted = bool(stop is not None and stop.is_set())
    not_sent = len(todo) - sent if not options.dry_run else len(todo)
    if ctx.spend.refused:
        notes.append(f"--max-cost: {not_sent} request(s) not sent; the cap (${options.max_cost:.4f}) would be "
                     f"exceeded (spent ${ctx.spend.spent:.4f})")
    if tally.estimated:
        cost = f"; their cost is counted at planner's estimate, ${tally.estimated_cost:.4f}" if prices.known else ""
        notes.append(f"{tally.estimated} answer(s) came without usable token counts (usage absent, negative or "
                     f"implausible){cost}")
    if tally.served:
        notes.append(f"the endpoint answered as {', '.join(sorted(tally.served))}; the verdicts are filed under "
                     f"the model asked for, {ctx.model} (the served name is kept as each judgment's source)")
    out, new, unanswered, summary = None, 0, 0, ""
    if ctx.lines and not options.dry_run:
        from planner.services.judge_send import output_lines

        out = _output_path(study_path, info.id, ctx.model)
        _write_output(out, output_lines(ctx, [r["custom_id"] for r in reqs]))
        res = _ingest(study_path, out)
        new, unanswered, summary = res.rows, res.unanswered, res.summary(retry="rerun planner judge to ask again")
    if fatal is not None:
        stored = f"{tally.answered} answer(s) that arrived were stored" if tally.answered else "nothing was answered"
        raise DataError(f"{fatal.message} ({stored})", fatal.problems, parameters=fatal.parameters)
    return JudgeResult(info.id, ctx.model, ctx.base_url, options.transport, len(reqs),
                       len(judged & set(ctx.keys)), len(cached), sent, tally.answered, tally.failed, not_sent,
                       tally.prompt_tokens, tally.completion_tokens, tally.cost if prices.known else None, spent,
                       est, ctx.spend.refused, interrupted, options.dry_run, None if out is None else str(out), new,
                       unanswered, summary, tuple(notes))


def _ingest(study_path, path: Path):
    from planner.store.study import ingest

    try:
        return ingest(study_path, [path], format="judge").files[0]
    except DataError as exc:
        raise DataError(f"the judge's answers were cached but not stored: {exc.lines()[0]}", exc.lines()[1:]) \
            from None


# ------------------------------------------------------------------ Ctrl-C
class graceful_interrupt:
    """``with graceful_interrupt() as stop:`` — the first Ctrl-C sets ``stop`` (finish the current step
    cleanly), a second one interrupts at once. A no-op outside the main thread."""

    def __enter__(self) -> threading.Event:
        import signal

        self.event = threading.Event()
        self._old = None
        if threading.current_thread() is threading.main_thread():
            def handler(signum, frame):
                if self.event.is_set():
                    raise KeyboardInterrupt
                self.event.set()

            self._old = signal.signal(signal.SIGINT, handler)
        return self.event

    def __exit__(self, *exc) -> None:
        import signal

        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
