"""`planner example vicuna80 DIR`: the shipped data written out, checked, safe to repeat; and shipped in the wheel."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from planner.workflows.example import EXAMPLES, example_bytes

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DATA = ROOT / "planner" / "data"
runner = CliRunner()
FILES = {f.path: f for f in EXAMPLES["vicuna80"].files}


def test_files_match_the_recorded_rows_and_hashes(tmp_path):
    r = runner.invoke(app, ["example", "vicuna80", str(tmp_path / "ex")])
    assert r.exit_code == 0, r.output
    readme = (tmp_path / "ex" / "README.md").read_text(encoding="utf-8")
    for rel, f in FILES.items():
        data = (tmp_path / "ex" / rel).read_bytes()
        if not f.sha256:      # the two documents: copied as they are in the package
            assert data == (PACKAGE_DATA / "vicuna80" / f.source).read_bytes()
            continue
        digest = hashlib.sha256(data).hexdigest()
        # the README's table (provenance, written by hand) and the code's record agree with the bytes
        assert digest == f.sha256 and f"| `{rel}` | {f.rows:,} | {len(data):,} | `{digest}` |" in readme
        rows = [json.loads(x) for x in data.decode("utf-8").splitlines()]
        assert len(rows) == f.rows
    # ../shared/data/README.md (CONVERSION.md here): "Verdicts: A 2,512 / B 1,355 / tie 600 / invalid 13"
    gpt4 = [json.loads(x) for x in example_bytes("vicuna80", "judgments/qlora_vicuna80_gpt4.jsonl").splitlines()]
    assert [sum(r["verdict"] == v for r in gpt4) for v in ("A", "B", "tie", "invalid")] == [2512, 1355, 600, 13]
    assert "Next: planner init my-study --prompts" in r.output


def test_again_is_a_no_op_and_other_content_is_refused_whole(tmp_path):
    d = tmp_path / "ex"
    assert runner.invoke(app, ["example", "vicuna80", str(d)]).exit_code == 0
    again = runner.invoke(app, ["example", "vicuna80", str(d), "--json"])
    assert again.exit_code == 0
    assert {f["status"] for f in json.loads(again.stdout)["files"]} == {"unchanged"}
    # a user's edit in one file, another file removed: refused, and the removed file is NOT written
    (d / "vicuna80" / "prompts.jsonl").write_text("mine\n", encoding="utf-8")
    (d / "judgments" / "qlora_vicuna80_human.jsonl").unlink()
    r = runner.invoke(app, ["example", "vicuna80", str(d)])
    assert r.exit_code == 2
    assert re.fullmatch(r"error: DIR \('.*'\): its vicuna80/prompts\.jsonl exists with other content; nothing "
                        r"was written \(use --force to replace the example's files\)\n", r.stderr)
    assert not (d / "judgments" / "qlora_vicuna80_human.jsonl").exists()
    forced = runner.invoke(app, ["example", "vicuna80", str(d), "--force", "--json"])
    assert forced.exit_code == 0
    status = {Path(f["path"]).name: f["status"] for f in json.loads(forced.stdout)["files"]}
    assert status["prompts.jsonl"] == "replaced" and status["qlora_vicuna80_human.jsonl"] == "written"
    assert status["responses.jsonl"] == "unchanged"
    assert hashlib.sha256((d / "vicuna80" / "prompts.jsonl").read_bytes()).hexdigest() == \
        FILES["vicuna80/prompts.jsonl"].sha256


def test_bad_targets_create_nothing(tmp_path):
    r = runner.invoke(app, ["example", "vicuna81", str(tmp_path / "a")])
    assert r.exit_code == 2 and "choose one of vicuna80" in r.stderr and not (tmp_path / "a").exists()
    (tmp_path / "file").write_text("x")
    r = runner.invoke(app, ["example", "vicuna80", str(tmp_path / "file")])
    assert r.exit_code == 2 and r.stderr.startswith("error: DIR")
    # a file where the example needs a folder: refused before any folder or file is created
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "judgments").write_text("x")
    r = runner.invoke(app, ["example", "vicuna80", str(tmp_path / "b")])
    assert r.exit_code == 2 and "in the way" in r.stderr
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["judgments"]


def test_listing_without_a_name():
    r = runner.invoke(app, ["example"])
    assert r.exit_code == 0 and r.stdout.startswith("vicuna80: ")


def test_damaged_install_is_one_line(tmp_path, monkeypatch):
    import planner.workflows.example as ex

    bad = ex.ExampleFile("x.jsonl", "prompts.jsonl.gz", 80, 13_045, "0" * 64, "")
    monkeypatch.setitem(ex.EXAMPLES, "vicuna80", ex.Example("vicuna80", "t", (bad,)))
    r = runner.invoke(app, ["example", "vicuna80", str(tmp_path / "d")])
    assert r.exit_code == 1 and "damaged" in r.stderr and not (tmp_path / "d").exists()


def test_package_data_globs_cover_every_data_file_and_stay_small():
    """pyproject's package-data globs name every file under planner/data (so the wheel has them)."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = conf["tool"]["setuptools"]["package-data"]["planner"]
    files = [p.relative_to(ROOT / "planner").as_posix() for p in PACKAGE_DATA.rglob("*") if p.is_file()
             and "__pycache__" not in p.parts]
    assert files and all(any(fnmatch.fnmatch(f, g) for g in globs) for f in files)
    # the example ships compressed: 408,097 bytes of gzip for 2.7 MB of JSONL (plus two READMEs)
    assert sum((PACKAGE_DATA / "vicuna80" / f.source).stat().st_size for f in FILES.values() if f.sha256) < 450_000


@pytest.mark.slow
def test_the_wheel_ships_the_data_and_the_command_works_from_it(tmp_path):
    """Build the wheel (pip, isolated build), unpack it, run `planner example` from it alone."""
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "w"), str(ROOT)],
                       capture_output=True, text=True, cwd=tmp_path)
    if r.returncode != 0 and "Could not find a version" in r.stderr:
        pytest.skip("no package index for the isolated build")
    assert r.returncode == 0, r.stderr
    (wheel,) = (tmp_path / "w").glob("planner-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "site")
    assert {f"planner/data/vicuna80/{f.source}" for f in FILES.values()} <= names
    code = "import sys; from planner_cli.main import main; sys.argv = ['planner', 'example', 'vicuna80', 'ex']; main()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    for rel, f in FILES.items():
        if f.sha256:
            assert hashlib.sha256((tmp_path / "ex" / rel).read_bytes()).hexdigest() == f.sha256
