"""`planner report --html FILE`: one self-contained page, checked as text and in a real headless Chromium.

Without a browser (tests that read the file): nothing is fetched (no URL in any src/href, a
Content-Security-Policy that allows no network), names are escaped, the bytes are the same on a
rerun, every section the report promises is there. In Chromium (Debian's chromium + chromium-driver
through selenium, the flags of the machine notes: headless, no sandbox as root, no background
networking): the page loads with no console error, the script ran (sortable headers), the
leaderboard, tied-with-leader set, heatmap and style tables hold the numbers `report --json`
prints, and a screenshot is not blank (share of non-background pixels and pixel spread above
floors that a blank page misses). CI (CI=true, as .ci/run sets) fails when the
browser is missing instead of skipping, as the Label Studio stage does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from html.parser import HTMLParser
from io import BytesIO
from pathlib import Path

import pytest
from _example_data import vicuna_dir
from typer.testing import CliRunner

from cli.main import app
from planner.store.study import ingest, init_study

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("PLANNER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PLANNER_CHROMEDRIVER", "/usr/bin/chromedriver")
# the machine notes' flags: as root Chromium needs --no-sandbox; background networking off, since
# this machine has no network and Chromium would otherwise try to reach its services at start
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1200,1600")
# measured at 1200x1600: a blank page has 0 non-background pixels and grey-level sd 0; the
# report's first screen (tables, interval bars, heatmap) 0.106 and 36.7. Floors at a fifth and
# about half of those catch a blank page or one whose body failed to render.
MIN_INK_SHARE = 0.02
MIN_GREY_SD = 20.0


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    data = vicuna_dir()   # the package's Vicuna-80 copy (planner example vicuna80)
    path = tmp_path_factory.mktemp("html") / "vicuna80"
    init_study(path, prompts_file=data / "vicuna80" / "prompts.jsonl",
               responses_file=data / "vicuna80" / "responses.jsonl", anchor="gpt-4")
    ingest(path, [data / "judgments" / "qlora_vicuna80_gpt4.jsonl"])
    return path


@pytest.fixture(scope="module")
def page(study) -> tuple[Path, dict]:
    """The page of `report --style-control --html` and the `--json` of the same command."""
    out = study.parent / "report.html"
    r = runner.invoke(app, ["report", str(study), "--style-control", "--html", str(out)])
    assert r.exit_code == 0, r.output
    assert f"wrote {out}" in r.stderr
    js = runner.invoke(app, ["report", str(study), "--style-control", "--json"])
    assert js.exit_code == 0, js.output
    return out, json.loads(js.stdout)


# ------------------------------------------------------------------------------ the file itself
class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href", "xlink:href", "action", "srcset") and v]


def test_the_page_is_self_contained(page):
    path, _ = page
    html = path.read_text(encoding="utf-8")
    p = _Links()
    p.feed(html)
    assert p.refs == [], p.refs                       # no src/href at all: nothing to fetch
    assert "link" not in p.tags and "iframe" not in p.tags and "img" not in p.tags
    assert not re.search(r"url\(|@import|https?://", html.split('id="report-data"')[0])
    assert "default-src 'none'" in html               # and the browser is told to fetch nothing


def test_every_section_is_there(page):
    html = page[0].read_text(encoding="utf-8")
    for sid in ("leaderboard", "heatmap", "style", "diagnostics", "pairs", "strata", "model"):
        assert f'<section id="{sid}">' in html
    assert 'id="tied-with-leader"' in html and "<svg class=\"heatmap\"" in html and "<svg class=\"slopes\"" in html
    assert 'id="forecast"' not in html                # no forecast in the report result: no section
    assert 'id="hybrid"' not in html                  # no --surrogate


def test_the_page_is_the_same_bytes_on_a_rerun(study, page, tmp_path):
    again = tmp_path / "again.html"
    r = runner.invoke(app, ["report", str(study), "--style-control", "--html", str(again)])
    assert r.exit_code == 0, r.output
    assert again.read_bytes() == page[0].read_bytes()


def test_embedded_data_is_the_json_report(page):
    path, doc = page
    html = path.read_text(encoding="utf-8")
    raw = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S).group(1)
    assert json.loads(raw)["report"] == doc


def test_untrusted_names_are_escaped(study):
    """A hostile stratum, annotator, flag and study name arrive in the page as text, never as markup."""
    from planner.formats.html import render_html
    from planner.workflows.report import build_report

    evil = "<script>alert('x')</script>"
    r = build_report(study)
    strata = dataclasses.replace(r.strata, rows=tuple(dataclasses.replace(s, stratum=evil + s.stratum)
                                                      for s in r.strata.rows))
    ann = dataclasses.replace(r.annotators, annotators=tuple(
        dataclasses.replace(a, annotator=f'"><img src=x onerror=alert(1)>{a.annotator}')
        for a in r.annotators.annotators))
    r = dataclasses.replace(r, strata=strata, annotators=ann, flags=(*r.flags, evil),
                            study=str(study.parent / "<b>study</b>"))
    html = render_html(r)
    assert evil not in html and "<img" not in html and "<b>study" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert html.count("<script") == 2                 # the data block and the page's own script


def test_a_forecast_is_rendered_only_when_the_report_carries_one(study):
    from planner.formats.html import render_html
    from planner.simulation.remaining import Remaining
    from planner.workflows.report import build_report

    r = build_report(study)
    assert r.forecast is None and 'id="forecast"' not in render_html(r)
    fc = Remaining("resolved at <50> Elo", 0.8, 1200.0, 800.0, 1700.0, new=0, ess=20.0, reps=20)
    html = render_html(dataclasses.replace(r, forecast=fc))
    assert 'id="forecast"' in html and "1,200 [800–1,700]" in html and "&lt;50&gt;" in html



def test_html_with_a_surrogate_adds_the_hybrid_fit(tmp_path):
    """report --surrogate JUDGE --html: the PPI table beside the human-only and judge-only ones."""
    data = vicuna_dir()   # the package's Vicuna-80 copy (planner example vicuna80)
    path = tmp_path / "both"
    init_study(path, prompts_file=data / "vicuna80" / "prompts.jsonl",
               responses_file=data / "vicuna80" / "responses.jsonl")
    ingest(path, [data / "judgments" / "qlora_vicuna80_gpt4.jsonl", data / "judgments" / "qlora_vicuna80_human.jsonl"])
    out = tmp_path / "hybrid.html"
    r = runner.invoke(app, ["report", str(path), "--surrogate", "gpt-4", "--html", str(out)])  # "judge": "gpt-4"
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert '<section id="hybrid">' in html and "PPI Elo" in html and 'id="leaderboard"' in html


def test_an_unwritable_html_path_is_a_usage_error(study, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = runner.invoke(app, ["report", str(study), "--html", str(blocker / "sub" / "r.html")])
    assert r.exit_code == 2 and "--html" in r.stderr and "Traceback" not in r.output


# ------------------------------------------------------------------------------ in Chromium
def _browser():
    """A selenium Chrome driver on Debian's chromium, or a skip (a failure when CI is set)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium (pip install selenium)")
    if missing:
        msg = f"headless browser test needs {', '.join(missing)} (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    os.environ.setdefault("HOME", str(tmp_path_factory.mktemp("home")))
    driver = _browser()
    yield driver
    driver.quit()


def _cells(driver, css: str) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    return [[td.text.strip() for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in driver.find_elements(By.CSS_SELECTOR, css)]


def _ink(png: bytes) -> tuple[float, float]:
    """(share of pixels that are not the page background, standard deviation of the grey levels)."""
    import numpy as np
    from PIL import Image

    grey = np.asarray(Image.open(BytesIO(png)).convert("L"), dtype=float)
    background = np.bincount(grey.astype(int).ravel()).argmax()
    return float(np.mean(np.abs(grey - background) > 16)), float(grey.std())


def test_the_page_in_headless_chromium(browser, page):
    path, doc = page
    browser.get(path.as_uri())
    assert browser.execute_script("return document.body.dataset.ready") == "1"   # the script ran to its end
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == [], errors

    rows = _cells(browser, "table.leaderboard tbody tr")
    assert len(rows) == len(doc["leaderboard"])
    for cells, x in zip(rows, doc["leaderboard"]):
        rank = str(x["rank_low"]) if x["rank_low"] == x["rank_high"] else f"{x['rank_low']}–{x['rank_high']}"
        assert cells[:5] == ["tied" if x["tied_with_leader"] else "", x["letters"], x["system"], f"{x['elo']:.0f}",
                             f"[{x['elo_lo']:.0f}, {x['elo_hi']:.0f}]"]
        assert cells[6:9] == [f"{x['p_best']:.3f}", "leader" if x["p_leader_better"] is None
                              else f"{x['p_leader_better']:.3f}", rank]
    tied = browser.execute_script("return document.getElementById('tied-with-leader').textContent")
    assert tied.endswith(": " + ", ".join(doc["tied_with_leader"]))

    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.heatmap g.cell text')).map(t => t.textContent)")
    order = [doc["systems"].index(x["system"]) for x in doc["leaderboard"]]
    want = [f"{doc['win_matrix'][i][j]:.2f}" if doc["win_matrix"][i][j] is not None else "—"
            for i in order for j in order if i != j]
    assert labels == want

    style = _cells(browser, "table.style tbody tr")
    assert [(c[0], c[1], c[3]) for c in style] == [(x["system"], str(x["raw_rank"]), str(x["rank"]))
                                                  for x in doc["style_control"]["rows"]]

    ink, spread = _ink(browser.get_screenshot_as_png())
    print(f"screenshot: {ink:.3f} of pixels not background, grey sd {spread:.1f}")
    assert ink > MIN_INK_SHARE and spread > MIN_GREY_SD, (ink, spread)


def test_the_headers_sort_the_table(browser, page):
    from selenium.webdriver.common.by import By

    browser.get(page[0].as_uri())
    heads = browser.find_elements(By.CSS_SELECTOR, "table.leaderboard thead th")
    elo = [h.text for h in heads].index("Elo")
    heads[elo].click()                                   # ascending by Elo: the weakest first
    first = _cells(browser, "table.leaderboard tbody tr")[0][2]
    assert first == page[1]["leaderboard"][-1]["system"]


def test_the_screenshot_check_fails_on_a_blank_page(browser, tmp_path):
    """The floors catch a page that renders nothing (an empty body, as a broken page shows)."""
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    browser.get(blank.as_uri())
    ink, spread = _ink(browser.get_screenshot_as_png())
    assert ink <= MIN_INK_SHARE and spread <= MIN_GREY_SD


def test_the_console_check_sees_a_script_error(browser, tmp_path):
    """The console-error check is not vacuous: a page whose script throws shows up in the log."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><p>x</p><script>notDefinedAnywhere();</script></body></html>")
    browser.get(bad.as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert any("notDefinedAnywhere" in e["message"] for e in errors), errors
