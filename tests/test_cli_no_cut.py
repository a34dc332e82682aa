"""Human output never hides a number: every value of `--json` is in the text at 80 and 60 columns.

For `report`, `report --style-control`, `status`, `decide` and `ingest` on the real Vicuna-80
study (8 systems with names up to 13 characters, 9 strata): the command runs twice, with
`--json` and without, at COLUMNS=80 and COLUMNS=60 (stdout is not a terminal, as in a pipe or
a CI log). The JSON is walked leaf by leaf, and every leaf is classified here, so the test
cannot pass by checking nothing:

* shown: the spec says how the table prints it (the renderer's format, e.g. ``.3f`` for
  P(best)); that text must appear in the human output as a whole token (``0.000`` is not
  found in ``0.0…``, ``gpt-4`` not in ``gpt-4o``);
* hidden: a reason says why the human output leaves it out (a logit-scale twin of a shown
  Elo, counts behind a shown rate, a duplicate of another field, the heatmap of --plot).

A JSON leaf the spec does not classify fails the test (so a new field must be decided), and
so does a spec entry that matches nothing (so a renamed field cannot silently skip checks).

Two checks on the shown values:

1. rows are anchored: a value of a table row (a system, a pair, a stratum, a file) must be on
   a line that also holds the row's name, so a table split into parts must repeat the names,
   and a cut name (``guanaco…``) fails;
2. counts: the output must hold each expected token at least as many times as the JSON asks
   for it (``0.000`` seven times for seven P(best) cells means seven, not one).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _example_data import vicuna_dir
from typer.testing import CliRunner

from cli.main import app
from planner.store.study import ingest, init_study

runner = CliRunner()
WIDTHS = (80, 60)


# ---- formats: the renderers' formats, written out here ----------------------------------------
def fmt(spec: str, scale: float = 1.0, suffix: str = ""):
    """A cell format: ``format(scale * value, spec) + suffix``."""
    return lambda v: format(v if scale == 1 else scale * v, spec) + suffix


f3, f2, f0, g3, comma, sign3 = fmt(".3f"), fmt(".2f"), fmt(".0f"), fmt(".3g"), fmt(","), fmt("+.3f")
pct1, pct0 = fmt(".1f", 100, "%"), fmt(".0f", 100, "%")
text = str


def rank(lo: str, hi: str):
    return lambda r: str(r[lo]) if r[lo] == r[hi] else f"{r[lo]}–{r[hi]}"


@dataclass(frozen=True)
class Hidden:
    """A JSON subtree the human output leaves out, and why."""

    reason: str


@dataclass(frozen=True)
class Rows:
    """A JSON list of dicts shown as table rows.

    ``key``: the texts naming a row (each must be on the row's lines); ``fields``: field name
    (or a tuple of names shown together) → formatter of the row; ``hidden``: field → reason.
    ``anchored=False`` for rows whose cells wrap at spaces (their values are only counted).
    """

    key: Callable[[dict], list[str]]
    fields: dict
    hidden: dict = field(default_factory=dict)
    anchored: bool = True


def one(fmt):
    """A field formatter: the field's value through ``fmt`` (None, shown as "—", checks nothing)."""
    return lambda name: (lambda r: None if r[name] is None else fmt(r[name]))


def each(fmt):
    """A list field: every element through ``fmt``."""
    return lambda name: (lambda r: [fmt(v) for v in r[name] if v is not None])


# ---- the specs ----------------------------------------------------------------------------------
LOGIT = "logit scale; the table shows the same posterior as Elo"
BEHIND_RATE = "a count behind a shown rate"

REPORT = {
    "study": text, "systems": Rows(lambda r: [], {}),  # list of names: checked through the rows
    "anchor": text,
    "totals.A": comma, "totals.B": comma, "totals.tie": comma, "totals.invalid": comma,
    "kinds": Hidden("judgments per record kind; status shows the QC kinds"),
    "leaderboard": Rows(lambda r: [r["system"]], {
        "system": one(text), "letters": one(text), "elo": one(f0), "elo_lo": one(f0), "elo_hi": one(f0),
        "p_best": one(f3), "score": one(f3),
        "tied_with_leader": lambda n: (lambda r: "tied" if r[n] else None),
        "p_leader_better": lambda n: (lambda r: "leader" if r[n] is None else f3(r[n])),
        ("rank_low", "rank_high"): rank("rank_low", "rank_high"),
        "pass_rate": one(pct0), "pass_low": one(pct0), "pass_high": one(pct0),
    }, hidden={"mean": LOGIT, "sd": LOGIT, "lo": LOGIT, "hi": LOGIT, "pass_n": BEHIND_RATE,
               "wins": "per-system tallies: planner status", "losses": "per-system tallies: planner status",
               "ties": "per-system tallies: planner status", "invalid": "per-system tallies: planner status"}),
    "tied_with_leader": Hidden("the 'tied' cells of the leaderboard"),
    "pairs.systems": Hidden("the system order, shown as the pairs' order"),
    "pairs.rows": Rows(lambda r: [r["system_a"], r["system_b"]], {
        "system_a": one(text), "system_b": one(text), "a_wins": one(comma), "b_wins": one(comma),
        "ties": one(comma), "invalid": one(comma), "score": one(f3), "p_a_better": one(f3),
        "design_effect": one(f2)}),
    "win_matrix": Hidden("the win-rate heatmap: report --plot and report --html"),
    "anchor_tests.anchor": text, "anchor_tests.ties": text, "anchor_tests.confidence_level": pct0,
    "anchor_tests.rows": Rows(lambda r: [r["system"]], {
        "system": one(text), "wins": one(text), "losses": one(text), "ties": one(text), "invalid": one(text),
        "win_rate": one(pct1), "ci_low": one(pct1), "ci_high": one(pct1), "pvalue": one(g3),
        "design_effect": lambda n: (lambda r: f2(r[n]) if r[n] > 1 else None)},
        hidden={"n": "wins + losses + ties"}),
    "clusters.sentence": text,
    "clusters": Hidden("the figures of the design-effect line under the leaderboard (its sentence)"),
    "ties.overall": Rows(lambda r: ["re-weighted"], {"rate": one(pct1), "ci_low": one(pct1),
                                                     "ci_high": one(pct1), "usable": one(comma)},
                         hidden={"stratum": "none for the overall rate", "ties": "totals.tie"}),
    "ties.per_stratum": Rows(lambda r: [r["stratum"]], {
        "stratum": one(text), "rate": one(pct1), "ci_low": one(pct1), "ci_high": one(pct1)},
        hidden={"ties": BEHIND_RATE, "usable": BEHIND_RATE}),
    "position.left_win_rate": pct1, "position.ci_low": pct1, "position.ci_high": pct1,
    "position.n_decisive": comma, "position.pvalue": g3,
    "position.flagged": Hidden("FLAG and a warning"), "position.left_wins": Hidden(BEHIND_RATE),
    "position.right_wins": Hidden(BEHIND_RATE),
    "position.difference_points": Hidden("in the warning, as points"),
    "position.threshold_points": Hidden("in the warning"), "position.gamma": Hidden("model.gamma"),
    "length.share": pct1, "length.ci_low": pct1, "length.ci_high": pct1, "length.n": comma, "length.pvalue": g3,
    "length.flagged": Hidden("FLAG and a warning"), "length.longer_wins": Hidden(BEHIND_RATE),
    "length.shorter_wins": Hidden(BEHIND_RATE), "length.n_equal": Hidden("pairs of equal length, left out"),
    "length.n_missing": Hidden("judgments without response texts, left out"),
    "triads.d": lambda v: f"{v:g}", "triads.d_max": lambda v: f"{v:g}", "triads.zeta": f3,
    "triads.systems": Hidden("the system list"), "triads.m": Hidden("the number of systems"),
    "triads.scores": Hidden("Kendall's per-system scores behind d"),
    "triads.n_tied_pairs": Hidden("a detail of d"), "triads.n_unobserved_pairs": Hidden("a detail of d"),
    "triads.examples": Hidden("a detail of d"),
    "reasons.rows": Hidden("the reasons table appears only when judgments carry reason codes: none here"),
    "reasons.n_decisive": comma, "reasons.share_without_reason": pct1,
    "reasons.n_without_reason": Hidden(BEHIND_RATE),
    "annotators.annotators": Rows(lambda r: [r["annotator"]], {
        "annotator": one(text), "n_judgments": one(comma), "attention_rate": one(pct0), "swap_rate": one(pct0),
        "kappa": one(f2), "fast_share": one(pct0), "left_share": one(pct0), "longest_run": one(text),
        "flags": lambda n: (lambda r: list(r[n]))},
        hidden={k: BEHIND_RATE for k in ("attention_n", "attention_passed", "swap_pairs", "swap_consistent",
                                          "overlap_items", "timed_items", "fast_items", "n_decisive", "ties",
                                          "n_usable", "longest_run_verdict", "run_pvalue", "fast_item_ids")},
        anchored=False),
    "annotators.overall_tie_rate": Hidden("the diagnostics' tie rate"),
    "annotators.agreement": Hidden("shown only with overlap items (none in this study)"),
    "strata.systems": Hidden("the table's column headers"), "strata.weights_source": text,
    "strata.rows": Rows(lambda r: [r["stratum"]], {
        "stratum": one(text), "weight": one(f3), "judgments": one(comma), "scores": each(f3)},
        hidden={"prompts": "prompts per stratum: planner status", "invalid": "totals.invalid",
                "judgment_share": "judgments / total, both shown", "tie_rate": "ties.per_stratum",
                "usable": BEHIND_RATE, "mean": "--by-stratum only", "sd": "--by-stratum only"}),
    "strata.weighted_scores": Hidden("the re-weighted row, counted through ties.overall's anchor"),
    "strata.max_share_gap": Hidden("in a note when it is large"),
    "acceptability": Hidden("none in this study"), "acceptability_source": Hidden("none in this study"),
    "model.engine": text, "model.nu.mean": f3, "model.nu.lo": f3, "model.nu.hi": f3,
    "model.gamma.mean": f3, "model.gamma.lo": f3, "model.gamma.hi": f3,
    "model.diagnostics.iterations": text,
    "model.diagnostics": Hidden("NUTS diagnostics (laplace here)"),
    "model": Hidden("the fit's settings and nuisance parameters (seed, draws, sigma, tau, sd)"),
    "posterior_artifact": Hidden("none saved here"),
    "flags": Hidden("warnings on stderr, as sentences"), "notes": Hidden("notes on stderr, as sentences"),
    "judges": Hidden("LLM-judge totals (none here)"),
    "ranking": Hidden("how letters and intervals were read (exact Gaussian, rank draws); its notes go to stderr"),
}

STYLE = {k: v for k, v in REPORT.items()} | {
    "style_control.rows": Rows(lambda r: [r["system"]], {
        "system": one(text), "raw_rank": one(text), "raw_mean": one(sign3), "raw_lo": one(sign3),
        "raw_hi": one(sign3), "rank": one(text), "mean": one(sign3), "lo": one(sign3), "hi": one(sign3),
        ("rank_low", "rank_high"): rank("rank_low", "rank_high"), "p_best": one(f3)}),
    "style_control.coefficients": Rows(lambda r: [r["feature"]], {
        "feature": one(text), "scale": one(f3), "mean": one(sign3), "lo": one(sign3), "hi": one(sign3),
        "odds_ratio": one(f2), "odds_lo": one(f2), "odds_hi": one(f2)}, hidden={"sd": "the interval is shown"}),
    "style_control.n_used": comma, "style_control.sentence": text,
    "style_control": Hidden("the style model's settings and nuisance parameters (engine, position, nu, "
                            "exclusions, LC rows: none without --lc-anchor)"),
}

STATUS = {
    "path": text, "judgments": comma, "counted": comma,
    "totals.A": comma, "totals.B": comma, "totals.tie": comma, "totals.invalid": comma,
    "systems": Hidden("the per-system rows"), "files": text,
    "per_system": Rows(lambda r: [r["system"]], {
        "system": one(text), "wins": one(text), "losses": one(text), "ties": one(text), "invalid": one(text),
        "score": one(f3)}),
    "pairs": Rows(lambda r: [f"{r['x']} vs {r['y']}"], {
        "x": one(text), "y": one(text), "x_wins": one(text), "y_wins": one(text), "ties": one(text),
        "invalid": one(text), "score": one(f3)}),
    "annotators": Rows(lambda r: [r["annotator"]], {
        "annotator": one(text), "judgments": one(text), "A": one(text), "B": one(text), "tie": one(text),
        "invalid": one(text), "passed": one(text), "failed": one(text)}),
    "batches": Rows(lambda r: [str(r["id"])], {
        "id": one(text), "created": one(text), "issued": one(text), "returned": one(text),
        "unanswered": one(text), "pending": one(text), "voided": one(text)},
        hidden={"format": "the batch's files: next-batch", "strategy": "the batch manifest",
                "judged": "returned", "path": "the batch's files",
                "manifest": "the batch manifest: next-batch", "void_reason": "planner void prints it"}),
    "unanswered": Hidden("shown when not 0"), "edits": Hidden("shown when not 0"),
    "retracted_files": Hidden("shown when not 0"), "qc": Hidden("shown when present"),
    "judge": Hidden("judge totals (none here)"), "acceptability": Hidden("none here"),
    "aliases": Hidden("annotator aliases learnt at ingest (none here)"),
    "forecast": Hidden("the saved plan forecast, updated (none here; tests/test_plan.py checks its line)"),
}

DECIDE_HIDDEN = {k: "the test statistics behind the verdict (--json)" for k in (
    "z_pass", "z_regress", "p_pass", "p_regress", "p_pass_holm", "p_regress_holm", "crit_pass", "crit_regress")}
DECIDE_HIDDEN |= {"n": "wins + losses + ties", "invalid": "planner status", "tie_rate": "the T of W–L–T",
                  "needed_total": "in the note, as judgments to detect", "note": "printed below the table",
                  "design_effect": "in the clustering note (its range over the strata)"}
DECIDE_FIELDS = {
    "stratum": one(text), "weight": one(f2),
    ("wins", "losses", "ties"): lambda r: f"{r['wins']}–{r['losses']}–{r['ties']}",
    "win_rate": one(pct1), "ci_low": one(lambda v: f"{100 * v:.1f}"), "ci_high": one(lambda v: f"{100 * v:.1f}"),
    "posterior_mean": one(pct1), "posterior_low": one(lambda v: f"{100 * v:.1f}"),
    "posterior_high": one(lambda v: f"{100 * v:.1f}"), "p_posterior": one(f3), "verdict": one(text),
    "more_comparisons": lambda n: (lambda r: None if r[n] is None or r["verdict"] != "undecided" else f"~{r[n]:,}"),
}
DECIDE = {
    "candidate": text, "baseline": text, "mode": text, "margin": lambda v: f"{v:g}",
    "threshold_pass": lambda v: f"{v:.0%}", "threshold_regress": lambda v: f"{v:.0%}",
    "confidence": lambda v: f"{v:.0%}",
    "strata": Rows(lambda r: [r["stratum"]], DECIDE_FIELDS, hidden=DECIDE_HIDDEN),
    "pooled": Rows(lambda r: ["pooled"], DECIDE_FIELDS, hidden=DECIDE_HIDDEN),
    "acceptability.status": text, "acceptability.message": text,
    "acceptability": Hidden("pass counts and rates: none for these systems"),
    "sentence": text, "notes": Hidden("printed as 'Note:' lines"), "multiplicity": Hidden("the first note"),
    "verdict": Hidden("in the sentence, upper case"), "exit_code": Hidden("the exit code"),
    "alpha": Hidden("1 - confidence"), "look": Hidden("group-sequential only"), "looks": Hidden("1 here"),
    "boundary": Hidden("group-sequential only"), "engine": Hidden("laplace, the default"),
    "seed": Hidden("the study's seed"),
}

INGEST = {
    "files": Rows(lambda r: [Path(r["path"]).name], {
        "path": lambda n: (lambda r: Path(r[n]).name), "format": one(text), "rows": one(comma),
        "already": one(comma), "A": one(comma), "B": one(comma), "tie": one(comma), "invalid": one(comma),
        "passed": one(comma), "failed": one(comma), "no_reason": one(comma),
        # the summary line on stderr ("FILE: 48 new, 312 already stored, ...") names the file too
        "replaced": lambda n: (lambda r: f"{r[n]:,} replaced" if r[n] else None),
        "changed": lambda n: (lambda r: f"{r[n]:,} changed" if r[n] and not r["replaced"] else None),
        "unanswered": lambda n: (lambda r: f"{r[n]:,} unanswered" if r[n] else None),
        "skipped": lambda n: (lambda r: f"{sum(r[n].values()):,} skipped" if r[n] else None)},
        hidden={"sha256": "the file's identity in the store", "stored": "the table's title",
                "notes": "lines on stderr, as sentences", "aliases": "lines on stderr"}),
    "dry_run": Hidden("the table's title"),
}


# ---- walking and matching ---------------------------------------------------------------------
def _lookup(spec: dict, path: str):
    """The spec entry for a JSON path: the longest dotted prefix present in the spec."""
    parts = path.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in spec:
            return key, spec[key]
    return None, None


def _row_tokens(rows: Rows, row: dict, where: str) -> tuple[list[str], set[str]]:
    fields_seen: set[str] = set()
    tokens: list[str] = []
    for name, make in rows.fields.items():
        names = name if isinstance(name, tuple) else (name,)
        if not all(n in row for n in names):
            continue
        fields_seen.update(names)
        fmt = make if isinstance(name, tuple) else make(name)
        got = fmt(row)
        tokens += [] if got is None else ([got] if isinstance(got, str) else list(got))
    unknown = set(row) - fields_seen - set(rows.hidden)
    assert not unknown, f"{where}: JSON fields not classified as shown or hidden: {sorted(unknown)}"
    return tokens, fields_seen


def expected(spec: dict, doc: dict):
    """(anchored rows: [(key texts, tokens)], all tokens, spec entries used)."""
    anchored, tokens, used = [], [], set()

    def walk(x, path: str):
        key, entry = _lookup(spec, path) if path else (None, None)
        deeper = any(k.startswith(path + ".") for k in spec) if path else True
        if isinstance(entry, Hidden) and (not deeper or not isinstance(x, (dict, list))):
            used.add(key)
            return
        if isinstance(entry, Rows) and key == path:
            used.add(key)
            rows = x if isinstance(x, list) else [x]
            for row in rows:
                if not isinstance(row, dict):
                    continue
                toks, _ = _row_tokens(entry, row, path)
                tokens.extend(toks)
                if entry.anchored and toks:
                    anchored.append((entry.key(row), toks))
            return
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}" if path else k)
            return
        if isinstance(x, list):
            for v in x:
                walk(v, path)
            return
        assert entry is not None, f"JSON leaf {path!r} is not classified as shown or hidden"
        used.add(key)
        if x is not None:
            tokens.append(entry(x))

    walk(doc, "")
    return anchored, tokens, used


def _pattern(token: str) -> re.Pattern:
    # a whole token: not inside a longer word or number ("0.000" is not in "10.000", "gpt-4" not in "gpt-4o")
    return re.compile(r"(?<![\w.,])" + re.escape(token) + r"(?![\w]|[.,]\d)")


def check(spec: dict, doc: dict, human: str) -> int:
    anchored, tokens, used = expected(spec, doc)
    unused = set(spec) - used
    assert not unused, f"spec entries that matched no JSON value: {sorted(unused)}"
    lines = human.splitlines()
    for keys, toks in anchored:
        pats = [_pattern(k) for k in keys]
        on = [ln for ln in lines if all(p.search(ln) for p in pats)]
        assert on, f"no line of the output names the row {keys}"
        for t in toks:
            assert any(_pattern(t).search(ln) for ln in on), (
                f"{t!r} of row {keys} is on no line naming the row:\n" + "\n".join(on))
    want = Counter(tokens)
    for t, n in want.items():
        found = len(_pattern(t).findall(human))
        assert found >= n, f"{t!r}: the JSON has it {n} time(s), the output {found}"
    return len(tokens)


def run(args: list[str], width: int) -> tuple[dict, str]:
    env = {"COLUMNS": str(width)}
    js = runner.invoke(app, [*args, "--json"], env=env)
    assert js.exit_code in (0, 3, 4), js.output
    human = runner.invoke(app, args, env=env)
    assert human.exit_code == js.exit_code, human.output
    # a table's lines all have its rule's width (box borders or the compact style's header rule);
    # sentences are not tables: they are soft-wrapped by the terminal
    for line in human.stdout.splitlines():
        if any(ch in line for ch in "│┃─━"):
            assert len(line) <= width, f"a table line is wider than COLUMNS={width}: {line!r}"
    return json.loads(js.stdout), human.output


# ---- the study and the tests ------------------------------------------------------------------
@pytest.fixture(scope="module")
def study(tmp_path_factory, request) -> Path:
    data = vicuna_dir()   # the package's Vicuna-80 copy (planner example vicuna80)
    path = tmp_path_factory.mktemp("nocut") / "vicuna80"
    init_study(path, prompts_file=data / "vicuna80" / "prompts.jsonl",
               responses_file=data / "vicuna80" / "responses.jsonl", anchor="gpt-4")
    ingest(path, [data / "judgments" / "qlora_vicuna80_gpt4.jsonl"])
    r = runner.invoke(app, ["next-batch", str(path), "--size", "12", "--reuse-prompts",
                            "--out", str(path.parent / "round1")])
    assert r.exit_code == 0, r.output
    return path


# a floor per command: the number of values checked on this study (well under the real count),
# so a spec that silently stopped matching would fail here as well as in `check`
FLOORS = {"report": 500, "style": 600, "status": 250, "decide": 120, "ingest": 10}


COMMANDS = {   # name: (arguments after the study, spec)
    "report": ((), REPORT),
    "style": (("--style-control",), STYLE),
    "status": ((), STATUS),
    "decide": (("--candidate", "guanaco-7b", "--baseline", "gpt-3.5-turbo"), DECIDE),
    "ingest": ((str(vicuna_dir() / "judgments" / "qlora_vicuna80_human.jsonl"),
                "--dry-run"), INGEST),
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_json_value_is_in_the_text(study, name, width):
    args, spec = COMMANDS[name]
    command = "report" if name == "style" else name
    doc, human = run([command, str(study), *args], width)
    assert check(spec, doc, human) >= FLOORS[name]


def test_the_check_fails_on_a_cut_value(study):
    """The matcher itself: the same output with one P(best) cut as rich cut it at 80 columns fails."""
    doc, human = run(["report", str(study)], 80)
    check(REPORT, doc, human)
    row = next(r for r in doc["leaderboard"] if r["system"] == "bard")
    cut = "\n".join(ln.replace(f3(row["p_best"]), "0.0…", 1) if "bard" in ln and "leader" not in ln else ln
                    for ln in human.splitlines())
    with pytest.raises(AssertionError):
        check(REPORT, doc, cut)
    with pytest.raises(AssertionError):
        check(REPORT, doc, human.replace("guanaco-13b", "guanaco…"))
