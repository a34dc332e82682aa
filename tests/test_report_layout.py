"""Diagnostics and the report: one home per piece, sizes, and sentences from the table's numbers.

* ``planner.diagnostics`` is a package of small modules; ``__init__`` re-exports every public name.
* The report's Markdown lives in ``planner.formats.markdown`` (one table writer), its sentences in
  ``planner.sentences`` (pure: imports nothing from the package), and ``build_report`` uses them.
* Every sentence the report prints carries the numbers of its table (parsed back here and compared).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import _report_fixture as fx
import pytest

from planner import diagnostics as dg
from planner import sentences
from planner.formats import markdown as md

ROOT = Path(__file__).resolve().parents[1]
OWNED = sorted((ROOT / "planner" / "diagnostics").glob("*.py")) + [
    ROOT / "planner" / "sentences.py", ROOT / "planner" / "report_results.py",
    ROOT / "planner" / "formats" / "markdown.py", ROOT / "planner" / "formats" / "plots.py",
    ROOT / "planner" / "workflows" / "report.py", ROOT / "planner" / "services" / "style_report.py"]
MAX_MODULE_LINES = 500      # a module a reader can hold in mind (docs/architecture.md rule 7)
MAX_FUNCTION_LINES = 80     # a function on one screen (code lines, the docstring not counted; rule 7)


# ------------------------------------------------------------------ layout
def test_diagnostics_reexports_every_public_name_of_its_submodules():
    names = set(dg.__all__)
    assert len(names) == len(dg.__all__), "a name listed twice in __all__"
    for sub in ("records", "pairs", "bias", "consistency", "reasons", "agreement", "acceptability", "letters",
                "ranking"):
        mod = importlib.import_module(f"planner.diagnostics.{sub}")
        tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                    if isinstance(t, ast.Name)}
        public = {n for n in defined if not n.startswith("_")}
        assert public <= names, f"{sub}: not re-exported: {sorted(public - names)}"
        for n in public:
            assert getattr(dg, n) is getattr(mod, n)


@pytest.mark.parametrize("path", OWNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_function_sizes(path):
    src = path.read_text(encoding="utf-8")
    assert src.count("\n") <= MAX_MODULE_LINES
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            lines = node.end_lineno - body[0].lineno + 1
            assert lines <= MAX_FUNCTION_LINES, f"{node.name}: {lines} lines"


def test_sentences_are_pure_and_report_does_not_render():
    tree = ast.parse((ROOT / "planner" / "sentences.py").read_text(encoding="utf-8"))
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert all(m in ("__future__", "collections.abc", "typing", "math") for m in imported), imported
    # the workflows hold no Markdown table writer of their own: one home, planner.formats.markdown.table
    for path in (ROOT / "planner" / "workflows" / "report.py", ROOT / "planner" / "services" / "style_report.py"):
        src = path.read_text(encoding="utf-8")
        assert "def _table" not in src and '"|" + "|".join' not in src and "_table as table" not in src


def test_markdown_table_by_hand():
    assert md.table(["a", "b"], [[1, "x"], [None, 2.5]]) == [
        "| a | b |", "|---|---|", "| 1 | x |", "| None | 2.5 |", ""]
    assert (md.pct(None), md.pct(0.1234), md.pct(0.5, 0)) == ("—", "12.3%", "50%")
    assert (md.num(None), md.num(float("nan")), md.num(float("inf")), md.num(0.12345)) == ("—", "—", "—", "0.123")


# ------------------------------------------------------- sentences vs tables
@pytest.fixture(scope="module")
def synth_report(tmp_path_factory):
    from planner.workflows.report import build_report

    root = fx.synthetic_study(tmp_path_factory.mktemp("layout") / "s", anchor="sys-b",
                              acceptable={"sys-a": 41, "sys-b": 90}, reasons=True)
    return build_report(root, style_control=True)


def _numbers(s: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?", s.replace(",", ""))]


def test_flags_and_notes_come_from_planner_text(synth_report):
    r = synth_report
    p = r.position
    assert p.flagged                                           # fixture: gamma 0.4 logit -> flagged
    flag = sentences.position_bias_flag(p, r.model.gamma)
    assert flag in r.flags
    # 61.6% of decisive, +23.3 points, threshold 8, gamma mean/lo/hi: the table's numbers, rounded
    got = _numbers(flag)
    want = [100 * p.left_win_rate, p.difference_points, p.threshold_points,
            r.model.gamma.mean, r.model.gamma.lo, r.model.gamma.hi]
    assert got == pytest.approx(want, abs=0.051)              # printed to 0.1 points / 0.01 logit
    acc = r.acceptability
    assert acc.leader_flagged
    assert sentences.acceptability_flag(acc.message, 0.8) in r.flags
    lead = acc.rows[0]
    # "sys-a: ranked first, acceptable 41% ± 9%": Wilson 95% of 41/100 is [31.9%, 50.8%] -> ± 9.5 -> "9"
    assert acc.message == f"{lead.system}: ranked first, acceptable 41% ± 9%"
    assert sentences.reasons_note(r.reasons) in r.notes
    n_without, n_decisive, share = _numbers(sentences.reasons_note(r.reasons))
    assert (n_without, n_decisive) == (r.reasons.n_without_reason, r.reasons.n_decisive)
    assert share == round(100 * r.reasons.share_without_reason)


def test_style_sentence_reads_the_tables(synth_report):
    sc = synth_report.style_control
    assert sc.sentence == sentences.style_sentence(sc.coefficients, sc.rows)
    c = next(x for x in sc.coefficients if x.feature == "length")
    nums = _numbers(sc.sentence)
    # ratio (1+s)/(1-s), rms unit s, odds ratio and its interval, as in the coefficient table
    assert nums[:5] == pytest.approx([(1 + c.scale) / (1 - c.scale), c.scale, c.odds_ratio, c.odds_lo, c.odds_hi],
                                     abs=0.051)
    moved = sum(x.rank != x.raw_rank for x in sc.rows)
    assert (("leaves the order unchanged" in sc.sentence) == (moved == 0)) and sc.reordered == moved


def test_markdown_carries_the_report_sentences(synth_report):
    doc = md.render_markdown(synth_report)
    for line in synth_report.flags:
        assert f"- {line}" in doc
    for line in synth_report.notes:
        assert f"- {line}" in doc
    assert synth_report.style_control.sentence in doc
    assert md.style_section(synth_report.style_control)[0].startswith("#")


def test_diagnostics_sentences_carry_the_table_numbers(synth_report):
    r = synth_report
    doc = md.render_markdown(r)
    p, g = r.position, r.model.gamma
    s = sentences.position_sentence(p, g, md.FLAGGED)
    assert f"- {s}" in doc and s.endswith(" — **flagged**.")
    # left %, n, Wilson interval, right %, gamma mean and 95% interval: printed to 0.1 point / 0.001 logit
    assert _numbers(s) == pytest.approx([100 * p.left_win_rate, p.n_decisive, 100 * p.ci_low, 100 * p.ci_high,
                                         100 * (1 - p.left_win_rate), g.mean, g.lo, g.hi], abs=0.051)
    tr = r.ties.overall
    s = sentences.tie_rate_sentence(tr, r.model.nu)
    assert f"- {s}" in doc
    assert _numbers(s) == pytest.approx([100 * tr.rate, tr.usable, 100 * tr.ci_low, 100 * tr.ci_high,
                                         r.model.nu.mean, r.model.nu.lo, r.model.nu.hi], abs=0.051)
    lb = r.length
    assert f"- {sentences.length_sentence(lb, md.FLAGGED if lb.flagged else '')}" in doc
    assert f"- {sentences.reasons_sentence(r.reasons)}" in doc and f"- {sentences.triads_sentence(r.triads)}" in doc
