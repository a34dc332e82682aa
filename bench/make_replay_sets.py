"""Regenerate the replay sets of bench/data/replays/ from the PRD repository.

    python bench/make_replay_sets.py PRD [--out bench/data/replays]

PRD is github.com/bcdnlp/PRD at commit 35fb99e5d5c7a2f3535811f1edbe417da7563957:
either a checkout (a folder holding ``data/vicuna80``) or its git directory
(read with ``git show <commit>:<path>``, so a bare mirror works). For each LLM
reviewer (Claude, GPT-3.5, Bard, Vicuna-13B, GPT-4) the 20 files
``data/vicuna80/ratings-<reviewer>/answer_<m1>-vs-answer_<m2>-...jsonl`` (one per
ordered pair of the 5 systems) are converted to the shared judgments format
(``{"id", "prompt", "a", "b", "verdict", "judge"}``; ``a`` = ``<m1>``, shown
first as "Assistant 1"). The selection rule and the counts are in
bench/data/replays/README.md; the output is byte-identical on every run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

COMMIT = "35fb99e5d5c7a2f3535811f1edbe417da7563957"
SYSTEMS = {"bard": "bard", "claude": "claude", "gpt35": "gpt-3.5-turbo", "gpt4": "gpt-4",
           "vicuna-13b": "vicuna-13b"}
# set name -> (PRD reviewer folder suffix, judge name written to the records)
REVIEWERS = {
    "prd_vicuna80_claude": ("claude", "claude"),
    "prd_vicuna80_gpt35": ("gpt35", "gpt-3.5-turbo"),
    "prd_vicuna80_bard": ("bard", "bard"),
    "prd_vicuna80_vicuna13b": ("vicuna-13b", "vicuna-13b"),
    "prd_vicuna80_gpt4": ("gpt4", "gpt-4"),
}
VERDICTS = {1: "A", 2: "B", 3: "tie"}
_SYS = "|".join(re.escape(m) for m in SYSTEMS)


class Source:
    """Files of the PRD repository: from a checkout, or from its git directory at COMMIT."""

    def __init__(self, root: Path):
        self.root = root
        self.checkout = (root / "data" / "vicuna80").is_dir()

    def names(self, folder: str) -> list[str]:
        if self.checkout:
            return sorted(p.name for p in (self.root / folder).iterdir() if p.is_file())
        out = subprocess.run(["git", "--git-dir", str(self.root), "ls-tree", "--name-only", f"{COMMIT}:{folder}"],
                             check=True, capture_output=True, text=True).stdout
        return sorted(out.split())

    def text(self, path: str) -> str:
        if self.checkout:
            return (self.root / path).read_text(encoding="utf-8")
        return subprocess.run(["git", "--git-dir", str(self.root), "show", f"{COMMIT}:{path}"],
                              check=True, capture_output=True, text=True).stdout


def pair_files(src: Source, reviewer: str) -> dict[tuple[str, str], str]:
    """The one file per ordered pair (m1, m2): names of the form ``answer_<m1>-vs-answer_<m2>-...``.
    The GPT-3.5 folder also holds two files named ``answer-gpt35-vs-answer-gpt4-...`` (hyphens):
    duplicates of two ordered pairs from another run, left out by the pattern."""
    folder = f"data/vicuna80/ratings-{reviewer}"
    pattern = re.compile(rf"answer_({_SYS})-vs-answer_({_SYS})-{re.escape(reviewer)}-reviewer[-_.].*jsonl$")
    files = {}
    for name in src.names(folder):
        m = pattern.fullmatch(name)
        if not m:
            continue
        key = (m[1], m[2])
        if key in files:
            raise SystemExit(f"{folder}/{name}: a second file for the pair {key}")
        files[key] = f"{folder}/{name}"
    if len(files) != len(SYSTEMS) * (len(SYSTEMS) - 1):
        raise SystemExit(f"{folder}: {len(files)} ordered pairs, expected 20")
    return files


def answer_ids(src: Source) -> dict[str, tuple[str, int]]:
    """answer_id -> (PRD system name, question_id), from data/vicuna80/generations/."""
    ids = {}
    for m in SYSTEMS:
        for line in src.text(f"data/vicuna80/generations/answer_{m}.jsonl").splitlines():
            if line.strip():
                r = json.loads(line)
                ids[r["answer_id"]] = (m, r["question_id"])
    return ids


def convert(src: Source, reviewer: str, judge: str, ids: dict) -> list[dict]:
    """One record per source row, sorted by (question, a, b); orientation checked by answer ids."""
    rows = []
    for (m1, m2), path in sorted(pair_files(src, reviewer).items()):
        for k, line in enumerate(src.text(path).splitlines(), 1):
            if not line.strip():
                continue
            r = json.loads(line)
            q = r["question_id"]
            if ids.get(r["answer1_id"]) != (m1, q) or ids.get(r["answer2_id"]) != (m2, q):
                raise SystemExit(f"{path}:{k}: answer ids do not match {m1} vs {m2} on question {q}")
            a, b = SYSTEMS[m1], SYSTEMS[m2]
            rows.append({"id": f"prd-{reviewer}:q{q}:{a}:{b}", "prompt": f"vicuna80-q{q}", "a": a, "b": b,
                         "verdict": VERDICTS.get(r["score"], "invalid"), "judge": judge})
    rows.sort(key=lambda x: (int(x["prompt"].rsplit("q", 1)[1]), x["a"], x["b"]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prd", type=Path, help="PRD checkout or git directory")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data" / "replays")
    args = ap.parse_args()
    src = Source(args.prd)
    ids = answer_ids(src)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (reviewer, judge) in REVIEWERS.items():
        rows = convert(src, reviewer, judge, ids)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (args.out / f"{name}.jsonl").write_text(text, encoding="utf-8", newline="\n")
        print(f"{name}: {len(rows)} records")


if __name__ == "__main__":
    main()
