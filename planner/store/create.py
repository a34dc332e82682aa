"""``init``: create a study directory (``study.json`` + ``study.sqlite``) from systems, prompts, responses.

Everything is checked before anything is written; both files are written as
temporaries and moved into place last, so a failed ``init`` leaves no study.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from planner.counts import DEFAULT_STRATUM
from planner.errors import DataError, UsageError, quote
from planner.names import NAME_RULE, id_problem, name_problem, text_problem
from planner.store import schema
from planner.store.db import CONFIG_NAME, DB_NAME, db_path, now
from planner.store.records import StudyInfo

CONFIG_VERSION = 2  # "planner_study" in study.json; 1: max_words stored 400 when not asked for (see init_study)
DEFAULT_REASONS = ("accuracy", "completeness", "format", "concision", "safety")
DEFAULT_QC = {"attention": 0.05, "repeat": 0.05, "overlap": 0.15, "acceptability": 0.0}


def _read_rows(path: Path, what: str):
    from planner.formats.reading import iter_table

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: {what} file not found")
    problems, rows = [], []
    for line, row, problem in iter_table(path):
        if problem:
            problems.append(problem)
        else:
            rows.append((line, row))
    return rows, problems


def _parse_bool(v, where, field_name, problems):
    """A flag cell by the one flag vocabulary (:func:`planner.formats.prompts.parse_flag`).

    Responses' ``acceptable`` also takes ``pass``/``fail``; ``frozen`` does not.
    """
    from planner.formats.prompts import parse_flag

    extra = (("pass",), ("fail",)) if field_name == "acceptable" else ((), ())
    flag, problem = parse_flag(v, where, field_name, true_words=extra[0], false_words=extra[1])
    if problem:
        problems.append(problem)
    return flag


def _load_prompts(path: Path) -> tuple[list[tuple], list[str]]:
    """Prompt rows for the ``prompts`` table, read by the one prompts reader
    (:func:`planner.formats.prompts.read_prompts`, shared with ``allocate``)."""
    from planner.formats.prompts import read_prompts

    rows, problems = read_prompts(path)
    return [(r.id, i, r.text, r.stratum, r.weight, r.difficulty, int(r.frozen))
            for i, r in enumerate(rows)], problems


def init_study(path, systems: Sequence[str] | None = None, anchor: str | None = None,
               prompts_file=None, responses_file=None, reasons: Sequence[str] = DEFAULT_REASONS,
               seed: int = 0, qc: dict | None = None, tie_convention: str = "half",
               max_words: int | None = None) -> StudyInfo:
    """Create a study directory with ``study.json`` and ``study.sqlite``.

    Parameters
    ----------
    path : path-like
        The study directory; must not already hold a study.
    systems : sequence of str, optional
        System names; when omitted they are inferred from the responses file
        (first-appearance order). When given, responses of other systems are an error.
    anchor : str, optional
        The reference system (must be one of ``systems``).
    prompts_file : path-like, optional
        CSV or JSONL with ``id``, ``text`` and optional ``stratum``, ``weight``,
        ``difficulty``, ``frozen``.
    responses_file : path-like, optional
        JSONL (or CSV) with ``prompt``, ``system``, ``text`` and optional
        ``acceptable`` (true/false); needs ``prompts_file``.
    reasons : sequence of str
        Reason codes annotators may give.
    seed : int
        The study's default seed (for next-batch).
    qc : dict, optional
        QC rates (fractions of a batch): attention, repeat, overlap, acceptability.
    tie_convention : str
        ``"half"``: a tie counts half a win in the half-tie score.
    max_words : int, optional
        Default limit of words per response shown to annotators; ``None`` (the
        default) is no limit, stored as ``"max_words": null``.

    Raises
    ------
    DataError
        Bad rows in the files (up to 20 named ``file:line``); nothing is created.
    UsageError
        Fewer than two systems, an anchor not among them, an existing study.
    """
    path = Path(path)
    _check_arguments(path, prompts_file, responses_file, reasons, seed, max_words)
    problems: list[str] = []
    prompts: list[tuple] = []
    if prompts_file is not None:
        prompts, problems = _load_prompts(Path(prompts_file))
    given = _given_systems(systems)
    names = list(given)
    responses: list[tuple] = []
    if responses_file is not None:
        responses = _load_responses(Path(responses_file), {p[0] for p in prompts}, given, names, problems)
    if problems:
        raise DataError(f"study not created: {len(problems)} problem(s) in the input files", problems)
    _check_names(names, anchor, tie_convention)
    rates = dict(DEFAULT_QC)
    rates.update(qc or {})
    # planner_study 2: "max_words" is what was asked for (null = no limit); version 1 configs stored 400
    # whether asked or not, and next-batch reads their 400 as no limit (planner.services.batch_plan.word_limit)
    config = {"planner_study": CONFIG_VERSION, "systems": names, "anchor": anchor, "reasons": list(reasons),
              "qc": rates, "tie_convention": tie_convention, "seed": int(seed),
              "max_words": None if max_words is None else int(max_words),
              "created": now()}
    try:
        _create_study_files(path, config, names, prompts, responses)
    except OSError as exc:
        raise UsageError(f"STUDY ({quote(str(path))}) cannot be created: {exc.strerror or exc}",
                         parameters=('path',)) from None
    strata = tuple(dict.fromkeys(p[3] or DEFAULT_STRATUM for p in prompts)) or (DEFAULT_STRATUM,)
    have = {(p, s) for p, s, *_ in responses}
    missing = len(prompts) * len(names) - len(have) if responses else 0
    return StudyInfo(str(path), tuple(names), anchor, len(prompts), len(responses), strata, missing, config)


def _check_arguments(path: Path, prompts_file, responses_file, reasons: Sequence[str], seed: int,
                     max_words: int | None) -> None:
    """The checks that need no file read: a new directory, readable inputs, seed, word limit, reason codes."""
    from planner import limits

    if path.exists() and not path.is_dir():
        raise UsageError(f"STUDY ({quote(str(path))}) is an existing file; expected a new directory for the study",
                         parameters=('path',))
    if any(os.path.lexists(path / n) for n in (CONFIG_NAME, DB_NAME)):
        raise UsageError(f"STUDY ({quote(str(path))}) already holds a study; choose a new directory",
                         parameters=('path',))
    limits.check_output_dir("STUDY", path)
    if responses_file is not None and prompts_file is None:
        raise UsageError("`responses` needs `prompts` (responses refer to prompt ids)",
                         parameters=('responses', 'prompts'))
    limits.check_input_file("prompts", prompts_file)
    limits.check_input_file("responses", responses_file)
    limits.check_seed("seed", seed)
    if max_words is not None:
        limits.check_int("max_words", max_words, 1, 10 ** 6)
    for r in reasons:
        if name_problem(r):
            raise UsageError(f"`reasons`: reason code {quote(r)} {name_problem(r)}; "
                             f"allowed: {NAME_RULE}", parameters=('reasons',))
    if len(set(reasons)) != len(reasons):
        raise UsageError(f"`reasons` ({quote(','.join(reasons))}) must be distinct", parameters=('reasons',))


def _given_systems(systems: Sequence[str] | None) -> list[str]:
    """The ``systems`` argument, stripped and checked (distinct, non-empty, allowed names)."""
    given = [s.strip() for s in systems] if systems else []
    if len(set(given)) != len(given) or any(not s for s in given):
        raise UsageError(f"`systems` ({quote(','.join(given))}) must be distinct, non-empty names",
                         parameters=('systems',))
    for s in given:
        if name_problem(s):
            raise UsageError(f"`systems`: system name {quote(s)} {name_problem(s)}; "
                             f"allowed: {NAME_RULE}", parameters=('systems',))
    return given


def _load_responses(path: Path, pids: set, given: list[str], names: list[str], problems: list[str]) -> list[tuple]:
    """Response rows ``(prompt, system, text, length, acceptable)`` for the ``responses`` table.

    Bad rows go to ``problems`` (named ``file:line``); systems first seen here are
    appended to ``names`` unless ``given`` fixes them.
    """
    rows, rproblems = _read_rows(path, "responses")
    problems.extend(rproblems)
    seen: set = set()
    responses = []
    for line, r in rows:
        where = f"{path.name}:{line}"
        got = _response_key(r, where, pids, given, names, problems)
        if got is None:
            continue
        p, s = got
        if (p, s) in seen:
            problems.append(f"{where}: duplicate response for prompt {quote(p)}, system {quote(s)}")
            continue
        seen.add((p, s))
        t = r.get("text")
        acc = _parse_bool(r.get("acceptable"), where, "acceptable", problems)
        responses.append((p, s, str(t), len(str(t)), None if acc is None else int(acc)))
    return responses


def _response_key(r: dict, where: str, pids: set, given: list[str], names: list[str],
                  problems: list[str]) -> tuple[str, str] | None:
    """A response row's ``(prompt, system)``, or None with its problem appended."""
    p, s, t = r.get("prompt"), r.get("system"), r.get("text")
    if p is None or s is None or t is None:
        problems.append(f"{where}: missing prompt, system or text; expected all three")
        return None
    why = ((id_problem(p) and f"prompt {quote(p)} {id_problem(p)}")
           or (id_problem(s) and f"system {quote(s)} {id_problem(s)}")
           or (text_problem(t) and f"text {text_problem(t)}"))
    if why:
        problems.append(f"{where}: {why}")
        return None
    p, s = str(p).strip(), str(s).strip()
    if s not in names and name_problem(s):
        problems.append(f"{where}: system name {quote(s)} {name_problem(s)}; "
                        f"allowed: {NAME_RULE}")
        return None
    if p not in pids:
        problems.append(f"{where}: unknown prompt {quote(p)}; expected an id from the prompts file")
        return None
    if s not in names:
        if given:
            problems.append(f"{where}: unknown system {quote(s)}; expected one of {', '.join(given)}")
            return None
        names.append(s)
    return p, s


def _check_names(names: list[str], anchor: str | None, tie_convention: str) -> None:
    if len(names) < 2:
        raise UsageError(f"`systems` ({','.join(names) or 'none'}) must name at least two systems "
                         "(or give `responses` to infer them)", parameters=('systems', 'responses'))
    if anchor is not None and anchor not in names:
        shown = anchor if len(anchor) <= 80 and anchor.isprintable() else quote(anchor)
        raise UsageError(f"`anchor` ({shown}) must be one of the systems: {', '.join(names)}", parameters=('anchor',))
    if tie_convention != "half":
        raise UsageError(f"`tie_convention` ({tie_convention!r}) must be 'half'", parameters=("tie_convention",))


def _create_study_files(path: Path, config: dict, names, prompts, responses) -> None:
    """Write both files as temporaries, then move the database and the config into place
    (init_study's last step); on an OS error the temporaries are removed."""
    path.mkdir(parents=True, exist_ok=True)
    tmp_db, tmp_cfg = path / (DB_NAME + ".tmp"), path / (CONFIG_NAME + ".tmp")
    try:
        _write_new_study(tmp_db, tmp_cfg, config, names, prompts, responses)
    except BaseException:
        for t in (tmp_db, tmp_cfg):
            if t.exists():
                t.unlink()
        raise
    os.replace(tmp_db, db_path(path))
    os.replace(tmp_cfg, path / CONFIG_NAME)


def _write_new_study(tmp_db: Path, tmp_cfg: Path, config: dict, names, prompts, responses) -> None:
    if tmp_db.exists():
        tmp_db.unlink()
    tmp_cfg.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    con = sqlite3.connect(str(tmp_db), isolation_level=None)
    try:
        con.execute("PRAGMA foreign_keys = ON")
        con.execute("BEGIN")
        schema.create(con)
        con.executemany("INSERT INTO systems (id, name) VALUES (?, ?)", list(enumerate(names)))
        con.executemany("INSERT INTO prompts (id, ord, text, stratum, weight, difficulty, frozen) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)", prompts)
        sid = {n: i for i, n in enumerate(names)}
        con.executemany("INSERT INTO responses (prompt, system, text, length, acceptable) VALUES (?, ?, ?, ?, ?)",
                        [(p, sid[s], t, n, a) for p, s, t, n, a in responses])
        con.execute("COMMIT")
        con.execute("PRAGMA journal_mode = WAL")
    finally:
        con.close()
