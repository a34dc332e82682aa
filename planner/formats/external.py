"""Readers of public benchmark judgment files: FastChat MT-bench, arena-hard-auto, alpaca_eval.

Each yields *oriented* records (``a``, ``b`` systems, ``verdict`` A/B/tie/invalid,
``a_position`` = where ``a`` was shown to the judge, or ``None`` when the file
does not say). Orientation follows each tool's own code:

* FastChat ``llm_judge/common.py`` ``play_a_match_pair``: game 1 shows
  ``model_1`` first, game 2 shows ``model_2`` first; ``g1_winner`` /
  ``g2_winner`` are already mapped back to ``model_1`` / ``model_2``.
* arena-hard-auto ``gen_judgment.py`` ``judgment``: ``games[0]`` shows the
  baseline as assistant A, ``games[1]`` the model as A; labels are relative to
  the shown positions (``show_result.py`` ``load_judgments`` maps all ten).
* alpaca_eval ``annotators/pairwise_evaluator.py``: with
  ``is_randomize_output_order`` (the default) ``output_1``/``output_2`` are
  switched before the judge sees them and the preference is mapped back
  (``3 - p``) afterwards, so ``output_1`` is NOT always shown first; see
  :func:`alpaca_shown_first` for what in a row tells.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

from planner.errors import quote
from planner.formats.reading import (
    Row,
    iter_json_array_indexed,
    iter_jsonl,
    opt_str,
    where,
)

_MT_WINNER = {"model_1": "A", "model_2": "B", "tie": "tie", "error": "invalid"}


def _name(v):
    return v.strip() if isinstance(v, str) and v.strip() else None


def read_mt_bench(path: Path, **_) -> Iterator[Row]:
    """FastChat MT-bench pairwise judgments (``model_judgment/*_pair.jsonl``).

    Each line holds two judgments of the same pair: game 1 with ``model_1``
    shown first, game 2 with ``model_2`` shown first (``g2_winner`` is already in
    model terms, as FastChat writes it). Both are kept in their positions
    (oriented ``a = model_1``; ``a_position`` right for game 2); inconsistent
    pairs are NOT collapsed into ties. ``error`` → invalid.
    """
    for line, row, problem in iter_jsonl(path):
        if row is None:   # the iterator's problem (exactly one of the two is set)
            yield line, None, problem
            continue
        at = where(path, line)
        m1, m2, qid = _name(row.get("model_1")), _name(row.get("model_2")), row.get("question_id")
        if m1 is None or m2 is None or not isinstance(qid, (int, str)) or isinstance(qid, bool) \
                or not str(qid).strip():
            yield line, None, (f"{at}: question_id {quote(qid)}, model_1 {quote(row.get('model_1'))}, model_2 "
                               f"{quote(row.get('model_2'))}; expected a FastChat pairwise judgment")
            continue
        turn = row.get("turn", 1)
        if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool) or not 1 <= turn <= 99):
            yield line, None, f"{at}: turn {quote(turn)}; expected a turn number 1, 2, ..."
            continue
        prompt = str(qid).strip() if turn in (1, None) else f"{str(qid).strip()}:turn{turn}"
        judge = row.get("judge")
        if isinstance(judge, list) and all(isinstance(j, str) for j in judge):
            judge = "/".join(judge)
        elif judge is not None and not isinstance(judge, str):
            yield line, None, f"{at}: judge {quote(judge)}; expected text or a list of text"
            continue
        judge = opt_str(judge)
        for game, key, pos in ((1, "g1_winner", "left"), (2, "g2_winner", "right")):
            if key not in row:
                continue
            w = row[key]
            v = _MT_WINNER.get(w) if isinstance(w, str) else None
            if v is None:
                yield line, None, f"{at}: {key} {quote(w)}; expected model_1, model_2, tie or error"
                continue
            yield line, {"id": f"mt-bench:{prompt}:{m1}:{m2}:{judge}:g{game}", "prompt": prompt, "a": m1, "b": m2,
                         "verdict": v, "a_position": pos, "annotator": judge, "reason": None,
                         "seconds": None, "confidence": None}, None


# label → (verdict for the first-shown answer A, strength). All ten labels arena-hard-auto's show_result.py maps.
ARENA_LABELS = {
    "A>>B": ("A", 1.0), "B<<A": ("A", 1.0), "A>B": ("A", 0.5), "B<A": ("A", 0.5),
    "A=B": ("tie", None), "B=A": ("tie", None),
    "B>A": ("B", 0.5), "A<B": ("B", 0.5), "B>>A": ("B", 1.0), "A<<B": ("B", 1.0)}
_ARENA_EXPECTED = "expected one of A>>B, A>B, A=B, B>A, B>>A (or B<<A, B<A, B=A, A<B, A<<B) or null"


def read_arena_hard(path: Path, baseline: str | None = None, **_) -> Iterator[Row]:
    """arena-hard-auto judgment lines (``model_judgment/<judge>/<model>.jsonl``).

    ``games[0]`` shows the baseline first (answer A) and the model second;
    ``games[1]`` is the swapped order. The ten labels (``A>>B``, ``A>B``,
    ``A=B``, ``B>A``, ``B>>A`` and the mirror spellings ``B<<A``, ``B<A``,
    ``B=A``, ``A<B``, ``A<<B``) are relative to the shown positions; the
    strength is kept as ``confidence`` (1.0 for ``>>``, 0.5 for ``>``, none for
    a tie). A ``null`` score (the judge answered but no label could be parsed)
    is an *invalid* judgment. A ``null`` game (the judge API call returned
    nothing; upstream's ``show_result.py`` drops such lines) is a *skip*
    record. A game that is neither an object nor null, or a score that is not
    one of the labels, is a problem. The baseline system comes from the line's
    ``baseline`` field or the ``baseline`` option.
    """
    for line, row, problem in iter_jsonl(path):
        if row is None:   # the iterator's problem (exactly one of the two is set)
            yield line, None, problem
            continue
        at = where(path, line)
        model = _name(row.get("model"))
        base = row.get("baseline") if row.get("baseline") is not None else baseline
        qid = row.get("question_id", row.get("uid"))
        games = row.get("games")
        if model is None or not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
            yield line, None, (f"{at}: model {quote(row.get('model'))}, question_id/uid {quote(qid)}; "
                               "expected an arena-hard-auto judgment")
            continue
        if not isinstance(games, list):
            yield line, None, f"{at}: games {quote(games)}; expected a list of two game objects"
            continue
        if _name(base) is None:
            yield line, None, (f"{at}: baseline {quote(base)}; expected a 'baseline' field or the "
                               "--baseline option")
            continue
        base = _name(base)
        judge = row.get("judge")
        judge = opt_str(judge) if isinstance(judge, str) else None
        qid = str(qid).strip()
        for g, game in enumerate(games):
            if game is None:
                yield line, {"skip": "arena-hard game without a judge answer (null game)"}, None
                continue
            if not isinstance(game, dict):
                yield line, None, f"{at}: games[{g}] {quote(game)}; expected a game object or null"
                continue
            score = game.get("score")
            first, second = (base, model) if g % 2 == 0 else (model, base)
            if score is None:
                v, conf = "invalid", None
            elif isinstance(score, str) and score.strip() in ARENA_LABELS:
                v, conf = ARENA_LABELS[score.strip()]
            else:
                yield line, None, f"{at}: games[{g}].score {quote(score)}; {_ARENA_EXPECTED}"
                continue
            yield line, {"id": f"arena-hard:{qid}:{model}:{base}:{judge}:g{g + 1}", "prompt": qid,
                         "a": first, "b": second, "verdict": v, "a_position": "left", "annotator": judge,
                         "reason": None, "seconds": None, "confidence": conf}, None


# ------------------------------------------------------------------ alpaca_eval
_FIRST_NAMES = ("m", "model_1")  # the id of the first-shown output in alpaca_eval's prompt templates
_SECOND_NAMES = ("M", "model_2")
_PREF_TOL = 1e-6  # preferences are stored rounded to 10 decimals


def _shown_rank(raw) -> int | None:
    """Rank (1 or 2) the judge gave the first-shown output in a ranking raw_completion.

    As alpaca_eval's ``ranking_parser``: the rank of the first-shown model's entry
    (``m`` in the turbo_fn templates, ``model_1`` in alpaca_eval_gpt4's), 1 or 2.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            import ast

            try:
                raw = ast.literal_eval(raw.strip())  # alpaca_eval_gpt4 answers with a Python literal
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                return None
    if isinstance(raw, dict):
        raw = raw.get("ordered_models")
    if not isinstance(raw, list):
        return None
    for first in _FIRST_NAMES:
        ranks = [m.get("rank") for m in raw if isinstance(m, dict) and m.get("model") == first]
        if ranks:
            r = ranks[0]
            return int(r) if r in (1, 2) and not isinstance(r, bool) else None
    return None


def _shown_first_probability(raw) -> float | None:
    """P(first-shown output is better) from a logprob raw_completion (weighted annotators)."""
    try:
        content = raw["logprobs"]["content"]
        top = content[-1]["top_logprobs"]
        lp = {t["token"]: float(t["logprob"]) for t in top if isinstance(t, dict) and t.get("token") in ("m", "M")}
    except (KeyError, IndexError, TypeError, ValueError, OverflowError):
        return None
    if not lp or not all(math.isfinite(x) for x in lp.values()):
        return None
    m, big = lp.get("m", -math.inf), lp.get("M", -math.inf)
    top_lp = max(m, big)
    denom = math.exp(m - top_lp) + math.exp(big - top_lp)
    return math.exp(m - top_lp) / denom


def alpaca_shown_first(row: dict, p: float) -> bool | None:
    """Whether ``output_1`` was shown first to the judge; ``None`` when the row does not tell.

    alpaca_eval switches the outputs for a seeded random half of the rows and
    maps the preference back with ``3 - p``; its annotation files drop the
    switch column, but these fields still tell (checked in this order):

    1. ``is_switched_outputs`` (bool; alpaca_eval's switch column, kept by older files);
    2. ``raw_completion`` with ``logprobs`` (weighted annotators, ``logprob_parser``
       with numerator token ``m`` = the first-shown output): with P = P(m), an
       unswitched row has preference 2 - P, a switched one 1 + P (within 1e-6);
    3. ``raw_completion`` of a ranking annotator (``ordered_models``; the
       first-shown output is ``m``, or ``model_1`` for ``alpaca_eval_gpt4``):
       its rank r is the unswitched preference (``ranking_parser``), so a row
       with preference r was not switched and one with 3 - r was;
    4. ``referenced_models`` (chain-of-thought annotators) ``{"m": "output_2", ...}``
       -- only when there is no raw completion: alpaca_eval derives it from the
       ranks and gets it wrong when both outputs are ranked 1.

    Ambiguous cases (P = 0.5, preference 1.5, no raw completion -- e.g.
    ``alpaca_eval_gpt4`` files) give ``None``.
    """
    sw = row.get("is_switched_outputs")
    if isinstance(sw, bool):
        return not sw
    raw = row.get("raw_completion")
    if raw is not None and math.isfinite(p):
        if isinstance(raw, dict) and "logprobs" in raw:
            prob = _shown_first_probability(raw)
            if prob is not None:
                plain, switched = abs(p - (2 - prob)) <= _PREF_TOL, abs(p - (1 + prob)) <= _PREF_TOL
                return None if plain == switched else plain
        else:
            rank = _shown_rank(raw)
            if rank is not None and p in (1, 2):
                return p == rank
    ref = row.get("referenced_models")
    if isinstance(ref, dict) and ref.get("m") in ("output_1", "output_2") and p in (1, 2):
        return ref["m"] == "output_1"
    return None


def _alpaca_verdict(p, tie_band: float) -> tuple[str | None, float | None]:
    """(verdict for output_1 as A, confidence); verdict None = not a valid preference."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "invalid", None
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p):
        return None, None
    if p == 0:
        return "tie", None  # legacy: alpaca_eval treats 0 as a draw
    if not 1 <= p <= 2:
        return None, None
    conf = abs(p - 1.5) * 2
    if abs(p - 1.5) <= tie_band:
        return "tie", conf
    return ("A" if p < 1.5 else "B"), conf


def read_alpaca_eval(path: Path, tie_band: float = 0.0, **_) -> Iterator[Row]:
    """alpaca_eval annotations (JSON array, ``annotations.json``).

    ``preference`` p in [1, 2] is the probability-like preference for
    ``output_2`` (1 = ``output_1`` better, 2 = ``output_2`` better; the
    AlpacaEval 2.0 weighted annotator writes continuous values such as
    1.0000002). Rule: tie iff |p − 1.5| ≤ ``tie_band`` (reader option, default
    0: only exactly 1.5 is a tie), else A (``generator_1``) when p < 1.5, B
    when p > 1.5; ``confidence`` = |p − 1.5|·2 (1 for a hard 1 or 2). Legacy
    0 → tie (as alpaca_eval treats it), NaN/null → invalid; anything else is
    a problem. ``a = generator_1``; ``a_position`` from
    :func:`alpaca_shown_first` (``None`` when the row does not record it --
    never guessed). The prompt id is ``alpaca:<sha1 of the instruction, 12 hex>``
    (the study matches ``prompt_text`` against its prompts).
    """
    try:
        tie_band = float(tie_band)
    except (TypeError, ValueError, OverflowError):
        tie_band = math.nan
    if not (0 <= tie_band < 0.5):
        from planner.errors import UsageError

        raise UsageError(f"`tie_band` ({quote(tie_band)}) must be in [0, 0.5)", parameters=('tie_band',))
    path = Path(path)
    for line, _index, row, problem in iter_json_array_indexed(path):
        if row is None:   # the iterator's problem (exactly one of the two is set)
            yield line, None, problem
            continue
        at = where(path, line)
        g1, g2, instr = _name(row.get("generator_1")), _name(row.get("generator_2")), row.get("instruction")
        if g1 is None or g2 is None or not isinstance(instr, str) or not instr.strip():
            yield line, None, (f"{at}: instruction {quote(instr)}, generator_1 {quote(row.get('generator_1'))}, "
                               f"generator_2 {quote(row.get('generator_2'))}; expected an alpaca_eval annotation")
            continue
        p = row.get("preference")
        v, conf = _alpaca_verdict(p, tie_band)
        if v is None:
            yield line, None, (f"{at}: preference {quote(p)}; expected a number in [1, 2] (1 = output_1 better, "
                               "2 = output_2 better), 0 (legacy tie) or NaN")
            continue
        first = alpaca_shown_first(row, float(p)) if v != "invalid" and p != 0 else None
        if first is None and v == "invalid":
            first = alpaca_shown_first(row, math.nan)
        digest = hashlib.sha1(instr.encode("utf-8")).hexdigest()[:12]
        ann = row.get("annotator")
        ann = opt_str(ann) if isinstance(ann, str) else None
        yield line, {"id": f"alpaca:{digest}:{g1}:{g2}:{ann}", "prompt": f"alpaca:{digest}", "prompt_text": instr,
                     "a": g1, "b": g2, "verdict": v,
                     "a_position": None if first is None else ("left" if first else "right"),
                     "annotator": ann, "reason": None, "seconds": None, "confidence": conf}, None
