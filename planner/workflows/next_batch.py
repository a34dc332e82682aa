"""`next-batch`: choose the next comparisons and write a blinded batch.

The data flow (each step owned by its module)::

    study (counts, pending)  ──► model.fit (Laplace or NUTS)
                             ──► acquisition.select_pairs  (which system pairs; greedy,
                                                            pending items fantasized)
                             ──► allocation.plan_strata / choose_prompts
                                                           (which stratum and prompt per pair)
                             ──► batch.assemble_batch      (positions, QC items, opaque ids)
                             ──► formats.writers           (files, atomically)
                             ──► study.record_batch        (the key; same step as the files)

``size`` is the number of planned comparisons (regular items). QC items are
added on top so that each QC kind is its requested fraction of the final
batch, and ``both_orders`` adds the swapped order of every regular item (see
:mod:`planner.batch`).

Same study state + same seed → byte-identical files. The default seed is the
study's configured seed plus the number of batches already issued, so
consecutive batches differ yet are reproducible.

Outputs are checked before the fit and before anything changes (a directory
in place of a file, a missing or unwritable directory, an existing file
without ``--force``: one-line :class:`UsageError`).

Atomicity and crash recovery (:mod:`planner.formats.staging`): a journal in
the study directory names the run's token and every temporary file; the
temporaries are written next to their targets; the batch is recorded in one
transaction with the token in its manifest (``issue_token``); then the
temporaries are renamed and the journal removed. A failure before the commit
leaves neither files nor a batch. After a hard kill, the next ``next-batch``
(or ``--rewrite``/``--retry-failed``) finds the journal: when the token was
recorded it puts every file in place (renaming the temporary, or regenerating
the bytes from the study, checked against the SHA-256 in the journal), else it
removes the temporaries. A recorded batch's files can always be written again
with ``--rewrite BATCH`` (:mod:`planner.workflows.reissue`); the manifest's
``rendering`` holds everything the files depend on.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from planner.errors import DataError, UsageError, quote

DEFAULT_SIZE = 50
MAX_SIZE = 100_000  # planned comparisons per batch; larger asks run for minutes and exhaust memory


@dataclass(frozen=True)
class NextBatchResult:
    """What ``next-batch`` did (or, with ``dry_run``, would do).

    Attributes
    ----------
    batch_id : int or None
        Study batch id (None for a dry run).
    files : tuple of str
        Files written (empty for a dry run).
    manifest : dict
        Seed, strategy, objective, engine, model summary, counts per
        pair/stratum/kind, expected uncertainty reduction, stopping advice.
    settled : bool
        Whether the objective's decision is already settled (stopping advice).
    advice : str
        One sentence of stopping advice.
    notes : tuple of str
        Everything skipped or changed on the way (never silent).
    """

    batch_id: int | None
    files: tuple[str, ...]
    manifest: dict
    settled: bool
    advice: str
    notes: tuple[str, ...] = ()
    dry_run: bool = False
    items: tuple = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return {"batch_id": self.batch_id, "files": list(self.files), "dry_run": self.dry_run,
                "settled": self.settled, "advice": self.advice, "notes": list(self.notes),
                "manifest": self.manifest}


def _target_shares(prompts, strata: Sequence[str]) -> dict[str, float]:
    """Population share of each stratum: the one rule, :func:`planner.strata.stratum_weights`."""
    from planner.strata import stratum_weights

    return stratum_weights(prompts, strata).weights


def _model_summary(fit) -> dict:
    lo, hi = fit.interval()
    return {
        "engine": fit.engine,
        "usable_judgments": fit.n_usable,
        "invalid_judgments": fit.n_invalid,
        "strengths": {s: {"mean": round(float(m), 6), "sd": round(float(sd), 6),
                          "lo": round(float(a), 6), "hi": round(float(b), 6)}
                      for s, m, sd, a, b in zip(fit.systems, fit.mean, fit.sd, lo, hi)},
        "gamma": round(float(fit.gamma.mean), 6),
        "nu": round(float(fit.nu.mean), 6),
        "warnings": list(fit.diagnostics.warnings),
    }


def plan_next_batch(study, *, size: int, strategy: str, objective: str, top_k: int | None, engine: str,
                    seed: int, rng: np.random.Generator, frozen_first: bool = True, reuse_prompts: bool = False,
                    max_words: int | None = None, style_control: bool = False):
    """Choose ``size`` (prompt, system pair, stratum) comparisons for the study.

    A pair takes prompts not yet judged or issued for it; with ``reuse_prompts``
    a pair that has used all of its prompts may take one again (a fresh
    judgment of the same comparison).

    With ``max_words`` (skip mode, no truncation) responses longer than that
    are not eligible, so pairs take other prompts and ``size`` is honoured as
    far as eligible prompts allow; one note names the prompts affected.

    Returns ``(planned, selection, fit, notes)``; ``planned`` is a list of
    :class:`planner.batch.PlannedComparison`.
    """
    from planner.acquisition import select_pairs
    from planner.allocation import choose_prompts, plan_strata
    from planner.batch import PlannedComparison
    from planner.model import fit as fit_model

    systems = tuple(study.systems)
    notes: list[str] = []
    judged_s = study.counts(by_stratum=True)          # one scan each; pooled below for the model
    pending_s = study.pending_counts(by_stratum=True)
    judged, pending = judged_s.pooled(), pending_s.pooled()
    if style_control:   # the style-controlled strengths (planner.workflows.style_report)
        from planner.workflows.style_report import controlled_fit

        fit = controlled_fit(study, engine=engine, seed=seed)[0].fit
        notes.append("style control: pairs chosen on the strengths controlled for length and markdown style")
    else:
        fit = fit_model(judged, engine=engine, seed=seed, progressbar=False)

    # pairs with at least one prompt that has responses from both systems
    prompts = list(study.prompts())
    have = defaultdict(set)
    too_long: dict[str, list[str]] = defaultdict(list)
    from planner.batch import count_words

    for r in study.responses():
        if max_words is not None and count_words(r.text) > max_words:
            too_long[r.prompt].append(r.system)
            continue
        have[r.system].add(r.prompt)
    if too_long:
        n = sum(len(v) for v in too_long.values())
        ids = sorted(too_long)
        notes.append(f"--max-words {max_words}: {n} response(s) longer than {max_words} words are not shown; "
                     f"other prompts were chosen instead. Prompts affected ({len(ids)}): "
                     + ", ".join(f"{p} ({', '.join(sorted(too_long[p]))})" for p in ids[:12])
                     + (" …" if len(ids) > 12 else "")
                     + ". This biases the sample against long answers; use --truncate to show them cut")
    pair_prompts = {}
    for i in range(len(systems)):
        for j in range(i + 1, len(systems)):
            pair_prompts[(i, j)] = have[systems[i]] & have[systems[j]]
    usage = study.pair_prompt_usage()
    unused = {}
    for (i, j), ps in pair_prompts.items():
        used = usage.get((systems[i], systems[j]), frozenset())
        unused[(i, j)] = (ps - used) or (ps if reuse_prompts else set())
    allowed = {p for p, ps in unused.items() if ps}
    reused = sum(1 for (i, j), ps in pair_prompts.items()
                 if ps and not ps - usage.get((systems[i], systems[j]), frozenset()) and (i, j) in allowed)
    if reused:
        notes.append(f"{reused} system pair(s) have used every prompt; --reuse-prompts lets them take one again")
    missing = [f"{systems[i]} vs {systems[j]}" for (i, j), ps in pair_prompts.items() if not ps]
    if missing:
        notes.append(f"{len(missing)} system pair(s) have no prompt with responses from both systems and "
                     f"cannot be issued: {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
    if not allowed:
        raise DataError("no comparison can be issued: every system pair has used all prompts that have "
                        "responses from both systems (add prompts or responses, or allow --reuse-prompts)")
    anchor = study.anchor
    if strategy == "anchor" or objective == "anchor":
        if anchor is None:
            raise UsageError(f"--strategy/--objective anchor needs an anchor system; the study has none "
                             f"(set one with planner init --anchor)")
    draws = fit.beta_draws if engine == "nuts" else None
    selection = select_pairs(fit.posterior, size, strategy=strategy, objective=objective, top_k=top_k,
                             anchor=anchor, judged=judged, pending=pending, rng=rng, draws=draws,
                             allowed=allowed, capacity={p: len(ps) for p, ps in unused.items()})
    notes.extend(selection.notes)   # what the strategy could not do (short batch, swiss fallback)

    # strata: aim the batch at the population shares, counting what each stratum already received
    strata = sorted({p.stratum or "all" for p in prompts})
    stratum_of = {p.id: (p.stratum or "all") for p in prompts}
    target = _target_shares(prompts, strata)
    received = judged_s + pending_s
    already = Counter()
    for s_idx, n in zip(received.stratum, received.usable + received.invalid):
        already[received.strata[int(s_idx)]] += int(n)
    k = len(selection.pairs)
    n_prompts = Counter(stratum_of.values())
    available = {s: n_prompts[s] * len(allowed) for s in strata}
    if k > sum(available.values()):   # more picks than stratum slots: issue what can be, say so
        notes.append(f"{k - sum(available.values())} pick(s) dropped: the strata hold only "
                     f"{sum(available.values())} unused comparison slot(s) for the pairs that can be issued")
        k = sum(available.values())
    plan = plan_strata(target, already, k, available)
    slots = [s for s in strata for _ in range(plan.get(s, 0))]
    slots = [slots[int(i)] for i in rng.permutation(len(slots))]

    by_id = {p.id: p for p in prompts}
    planned = []
    used_now: dict[tuple[int, int], set] = defaultdict(set)
    fallbacks = 0
    dropped = Counter()
    for (i, j), stratum in zip(selection.pairs, slots):
        key = (min(i, j), max(i, j))
        candidates = [by_id[pid] for pid in sorted(unused[key] - used_now[key]) if pid in by_id]
        pid = None
        for s in [stratum] + [x for x in strata if x != stratum]:
            got = choose_prompts(candidates, s, 1, used=frozenset(), rng=rng, frozen_first=frozen_first)
            if got:
                pid = got[0]
                fallbacks += s != stratum
                break
        if pid is None:
            dropped[(systems[key[0]], systems[key[1]])] += 1
            continue
        used_now[key].add(pid)
        planned.append(PlannedComparison(pid, systems[key[0]], systems[key[1]], stratum_of[pid]))
    if fallbacks:
        notes.append(f"{fallbacks} comparison(s) took a prompt from another stratum: their planned stratum had "
                     "no unused prompt for the pair")
    if dropped:
        notes.append("no unused prompt was left for " + ", ".join(f"{a} vs {b} (x{n})" for (a, b), n in
                                                                   sorted(dropped.items()))
                     + "; those picks were dropped")
    if not planned:
        raise DataError("no comparison can be issued: the chosen pairs have no unused prompts left")
    return planned, selection, fit, notes


#: ``planner init`` stored ``max_words: 400`` in every study config whether asked or not; that silent
#: default dropped 22 of 640 Vicuna80 answers (12 of them gpt-4's, under a judge whose longer answer
#: wins 73%). In those configs (``planner_study`` 1) it is treated as "no limit" (issue 13); any other stored
#: value was chosen and is honoured. ``planner_study`` 2 configs store only what was asked for (null: no limit).
LEGACY_DEFAULT_MAX_WORDS = 400


def _word_limit(max_words: int | None, config: dict) -> int | None:
    """The word limit in force: ``--max-words`` if given, else the study's unless it is the old silent default."""
    if max_words is not None:
        return int(max_words)
    stored = config.get("max_words")
    legacy = config.get("planner_study", 1) == 1 and int(stored or 0) == LEGACY_DEFAULT_MAX_WORDS
    if stored is None or legacy:
        return None
    return int(stored)


def _check_options(size, strategy, objective, top_k, engine, fmt, normalize_style, seed=None):
    from planner.acquisition import OBJECTIVES, STRATEGIES
    from planner.batch import NORMALIZE_STYLES
    from planner.formats.writers import FORMATS

    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size ({quote(size)}) must be a whole number from 1 to {MAX_SIZE:,}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise UsageError(f"--seed ({quote(seed)}) must be a whole number >= 0")
    public = [s for s in STRATEGIES if s != "oracle"]
    if strategy not in public:
        raise UsageError(f"--strategy ({strategy!r}) must be one of {', '.join(public)}")
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective ({objective!r}) must be one of {', '.join(OBJECTIVES)}")
    if objective == "top-k" and (top_k is None or top_k < 1):
        raise UsageError("--objective top-k needs --top-k K with K >= 1")
    if engine not in ("laplace", "nuts"):
        raise UsageError(f"--engine ({engine!r}) must be one of 'laplace' or 'nuts'")
    if fmt not in FORMATS:
        raise UsageError(f"--format ({fmt!r}) must be one of {', '.join(FORMATS)}")
    if normalize_style not in NORMALIZE_STYLES:
        raise UsageError(f"--normalize-style ({normalize_style!r}) must be one of {', '.join(NORMALIZE_STYLES)}")


def _annotator_names(annotators) -> list[str] | None:
    if annotators is None:
        return None
    if isinstance(annotators, int) or (isinstance(annotators, str) and annotators.strip().isdigit()):
        n = int(annotators)
        if n < 1:
            raise UsageError(f"--annotators ({n}) must be >= 1 or a comma-separated list of names")
        return [f"a{i + 1}" for i in range(n)]
    names = [a.strip() for a in (annotators.split(",") if isinstance(annotators, str) else annotators)]
    names = [a for a in names if a]
    if not names:
        raise UsageError("--annotators must be a number or a comma-separated list of names")
    return names


def _read_template(template) -> str | None:
    if template is None:
        return None
    p = Path(template)
    try:
        return p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"--template: {quote(str(p))} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"--template: {quote(str(p))} is a directory; give a template file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"--template: {quote(str(p))} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"--template: cannot read {quote(str(p))} ({exc.strerror or exc})") from None


def _qc_rates(config, names, attention, repeat, overlap, acceptability, notes) -> dict[str, float]:
    qc = dict(config.get("qc", {}))
    rates = {k: (v if v is not None else float(qc.get(k, 0.0)))
             for k, v in (("attention", attention), ("repeat", repeat), ("overlap", overlap),
                          ("acceptability", acceptability))}
    if (names is None or len(names) < 2) and rates["overlap"] > 0 and overlap is None:
        # the study's default overlap rate does not apply to a single annotator: silently 0 (a note on
        # every single-annotator batch was noise, issue 13); an explicit --overlap is refused in batch.py
        rates["overlap"] = 0.0
    return rates


def _manifest(n_batches, seed, strategy, objective, top_k, engine, size, format, selection, fit, batch, notes):
    return {
        "batch": n_batches + 1,
        "seed": int(seed),
        "strategy": strategy,
        "objective": objective if objective != "top-k" else f"top-k={top_k}",
        "engine": engine,
        "size": int(size),
        "format": format,
        "expected_reduction": float(selection.expected_reduction),
        "objective_before": float(selection.value_before),
        "objective_after": float(selection.value_after),
        "settled": bool(selection.settled),
        "advice": selection.reason,
        "model": _model_summary(fit) if fit is not None else {"engine": "none (--for humans)", "warnings": []},
        "batch_manifest": batch.manifest,
        "attention_expected": {it.item_id: it.expected for it in batch.items if it.kind == "attention"},
        "notes": notes,
    }


def _name_note(batch, systems, redact: bool, notes: list[str]) -> dict:
    """Count system names in response texts; a note for stderr; the manifest's ``name_mentions``."""
    from planner.blinding import mentions_note, name_mentions

    mentions = name_mentions(batch.items, systems)
    note = mentions_note(mentions, redacted=redact)
    if note:
        notes.append(note)
    return {"items": len(mentions), "mentions": sum(sum(v.values()) for v in mentions.values()),
            "first_items": list(mentions)[:10], "redacted": bool(redact and mentions)}


def next_batch(study_path, *, size: int = DEFAULT_SIZE, strategy: str = "active", objective: str = "ranking",
               top_k: int | None = None, engine: str = "laplace", seed: int | None = None,
               out: str | Path | None = None, format: str = "jsonl", force: bool = False, dry_run: bool = False,
               attention: float | None = None, repeat: float | None = None, overlap: float | None = None,
               both_orders: bool = False, acceptability: float | None = None,
               annotators: Sequence[str] | int | str | None = None,
               attention_pool: str | Path | None = None, template: str | Path | None = None,
               max_words: int | None = None, truncate: bool = False, normalize_style: str = "none",
               judge_model: str | None = None, frozen_first: bool = True,
               reuse_prompts: bool = False, temperature: float | None = None,
               redact_names: bool = False, style_control: bool = False, for_: str = "ranking",
               surrogate: str | None = None, floor: float = 0.2) -> NextBatchResult:
    """Choose the next comparisons for a study and write them as a blinded batch.

    Parameters
    ----------
    study_path : path of the study directory.
    size : int
        Planned comparisons (regular items), from 1 to :data:`MAX_SIZE`.
    strategy, objective, top_k : see :func:`planner.acquisition.select_pairs`.
    engine : {"laplace", "nuts"}
        Model engine for the posterior the selection uses.
    seed : int >= 0, optional
        Default: the study's seed + the number of batches already issued.
    out : path, optional
        Output file (extension optional). Default: ``<study>/batches/batch-<n>.<ext>``.
    format : {"jsonl", "csv", "label-studio", "argilla", "judge"}
    force : overwrite existing files.
    dry_run : plan and report, write nothing.
    attention, repeat, overlap, acceptability : float in [0, 1), optional
        QC fractions of the final batch (sum < 1). Default: the study's ``qc``
        settings. Repeat and overlap items need annotators to be meaningful;
        without ``annotators`` overlap is set to 0 (noted).
    both_orders : also issue every comparison in swapped order.
    annotators : int N (names ``a1..aN``) or names: one file per annotator.
    attention_pool : file of texts for the broken side of attention items.
    template : file with a judge prompt template (``--format judge``).
    max_words, truncate, normalize_style : one-screen, style-blind items (see
        :mod:`planner.batch`); ``max_words`` defaults to no limit (a study's
        stored ``max_words`` other than the old silent default 400 is honoured).
        In skip mode (no ``truncate``) long responses are excluded before the
        prompts are chosen, so ``size`` is honoured with other prompts.
    judge_model : ``body.model`` of judge requests.
    temperature : explicit judge ``temperature`` (default: 0, or none for
        models that reject it; see :func:`planner.formats.writers.judge_temperature`).
    reuse_prompts : let a pair that has used every prompt take one again.
    redact_names : replace system-name mentions in response texts by
        ``[a model]`` (a note reports mentions either way).
    style_control : select on the style-controlled strengths (``report --style-control``).
    for_, surrogate, floor : ``for_="humans"``: choose (prompt, pair) items for human labels where the
        ``surrogate`` judge is least reliable, with known probabilities (``size`` = expected
        labels, ``floor`` the uniform share); see :func:`planner.workflows.hybrid_report.plan_for_humans`.
        The design is recorded in the manifest (``for_humans``) for ``report --surrogate``.
    """
    from planner.batch import assemble_batch
    from planner.formats.writers import check_temperature, output_paths, read_attention_pool
    from planner.workflows.reissue import recover_interrupted
    from planner.store.study import Study

    _check_options(size, strategy, objective, top_k, engine, format, normalize_style, seed)
    if for_ not in ("ranking", "humans"):
        raise UsageError(f"--for ({str(for_)[:40]!r}) must be one of ranking, humans")
    if for_ != "humans" and surrogate is not None:
        raise UsageError("--surrogate is used only with --for humans")
    temperature = check_temperature(temperature)
    names = _annotator_names(annotators)
    template_text = _read_template(template)
    pool = read_attention_pool(attention_pool) if attention_pool is not None else None

    with Study.open(study_path) as study:
        config = study.config
        notes: list[str] = []
        rates = _qc_rates(config, names, attention, repeat, overlap, acceptability, notes)
        n_batches = len(study.batches())
        if format == "judge":  # model, template, temperature: refused before the fit
            from planner.formats.writers import judge_requests

            judge_requests([], reasons=config.get("reasons", ()), template=template_text, model=judge_model,
                           temperature=temperature)
        if dry_run and _interrupted(study):
            notes.append("an interrupted next-batch left files to complete or roll back; the next run without "
                         "--dry-run does it")
        if not dry_run:
            out = _default_out(study_path, out, n_batches)
            from planner.formats.staging import check_outputs

            check_outputs(output_paths(out, format, names, acceptability=rates["acceptability"] > 0), "--out",
                          force=force)
            notes.extend(recover_interrupted(study))
            n_batches = len(study.batches())
        if seed is None:
            seed = int(config.get("seed", 0)) + n_batches
        rng = np.random.default_rng(seed)
        words = _word_limit(max_words, config)
        design = None
        if for_ == "humans":
            from planner.workflows.hybrid_report import plan_for_humans

            planned, selection, design, plan_notes = plan_for_humans(study, surrogate=surrogate, size=size,
                                                                     rng=rng, floor=floor)
            fit = None
        else:
            planned, selection, fit, plan_notes = plan_next_batch(
                study, size=size, strategy=strategy, objective=objective, top_k=top_k, engine=engine, seed=seed,
                rng=rng, frozen_first=frozen_first, reuse_prompts=reuse_prompts,
                max_words=None if truncate else words, style_control=style_control)
        notes.extend(plan_notes)
        batch = assemble_batch(planned, prompt_text={p.id: p.text for p in study.prompts()},
                               response_text={(r.prompt, r.system): r.text for r in study.responses()}, rng=rng,
                               attention=rates["attention"], repeat=rates["repeat"], overlap=rates["overlap"],
                               both_orders=both_orders, acceptability=rates["acceptability"], annotators=names,
                               attention_pool=pool, max_words=words, truncate=truncate,
                               normalize_style=normalize_style, previous_items=[it.item_id for it in study.items()])
        if not batch.items:
            raise DataError("no item could be issued: every planned comparison was skipped "
                            f"({len(batch.skipped)} skipped; see --max-words/--truncate)")
        if batch.skipped:
            reasons = Counter(s.reason for s in batch.skipped)
            notes.append("skipped " + "; ".join(f"{n} × {r}" for r, n in reasons.most_common()))
        mentions = _name_note(batch, study.systems, redact_names, notes)
        manifest = _manifest(n_batches, seed, strategy, objective, top_k, engine, size, format, selection, fit,
                             batch, notes)
        manifest["name_mentions"] = mentions
        if design is not None:
            manifest.update(strategy="for humans", objective="hybrid (IPW-PPI)", for_humans=design)
        if dry_run:
            return NextBatchResult(None, (), manifest, bool(selection.settled), selection.reason, tuple(notes),
                                   True, batch.items)
        rendering = {"format": format, "out": str(Path(out).absolute()), "reasons": list(config.get("reasons", ())),
                     "template": template_text, "acceptability_template": None, "judge_model": judge_model,
                     "temperature": temperature, "redact_names": list(study.systems) if redact_names else None,
                     "max_words": words, "truncate": bool(truncate), "normalize_style": normalize_style}
        batch_id, targets = _issue(study, batch, manifest, rendering, out, force)
    return NextBatchResult(batch_id, tuple(str(t) for t in targets), manifest, bool(selection.settled),
                           selection.reason, tuple(notes), False, batch.items)


def _interrupted(study) -> bool:
    from planner.formats.staging import journals

    return bool(journals(study.path))


def _default_out(study_path, out, n_batches: int) -> Path:
    if out is not None:
        return Path(out)
    out_dir = Path(study_path) / "batches"
    if not out_dir.is_dir():
        from planner.formats.staging import check_output

        check_output(out_dir, "--out")  # the study directory must take a new directory
        out_dir.mkdir()
    return out_dir / f"batch-{n_batches + 1:03d}"


def _issue(study, batch, manifest: dict, rendering: dict, out, force: bool):
    """Render, stage (journaled), record, put in place. Returns ``(batch_id, targets)``."""
    from planner.formats.staging import new_token, sha256, stage
    from planner.formats.writers import render_batch
    from planner.store.study import BatchItem

    rendering["attention_texts"] = {it.item_id: (it.right_text if it.expected == "left" else it.left_text)
                                    for it in batch.items if it.kind == "attention"}
    files = render_batch(batch, out, rendering["format"], reasons=rendering["reasons"],
                         template=rendering["template"], judge_model=rendering["judge_model"],
                         temperature=rendering["temperature"], redact_names=rendering["redact_names"])
    items = [BatchItem(it.item_id, it.prompt_id, it.left_system, it.right_system, it.kind, it.annotator,
                       it.link, it.link if it.kind == "swap" else None)
             for it in batch.items]
    token = new_token()
    staged = stage(files, force=force, journal_dir=study.path, token=token, meta={"batch": manifest["batch"]})
    try:
        manifest["files"] = [str(p) for p, _ in files]
        manifest["files_sha256"] = [sha256(data) for _, data in files]
        manifest["issue_token"] = token
        manifest["rendering"] = rendering
        batch_id = study.record_batch(manifest, items)
    except BaseException:
        staged.abort()
        raise
    try:
        staged.commit()
        targets = [p for p, _ in files]
    except OSError as exc:
        staged.release()
        raise DataError(f"batch {batch_id} was recorded but its files could not be put in place "
                        f"({exc.strerror or exc}); the next `planner next-batch` completes them, or run "
                        f"`planner next-batch STUDY --rewrite {batch_id} --out PATH`") from None
    return batch_id, targets
