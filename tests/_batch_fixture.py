"""Shared synthetic study for the batch tests (tests/test_batch.py, test_writers.py, test_judge_format.py).

Six systems whose names never occur in the texts; 24 prompts over 3 strata; one
response per (prompt, system), some with markdown and self-identifying openings,
one very long, one starting with a spreadsheet formula.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

SYSTEMS = ("alpha-7b", "beta-chat", "gamma", "delta-2", "epsilon-xl", "zeta")
STRATA = ("coding", "writing", "math")
WORDS = ("river", "stone", "lamp", "garden", "violet", "copper", "harbor", "meadow", "signal", "orbit")


def prompts() -> dict[str, str]:
    return {f"p{k:02d}": f"Question {k}: explain the {WORDS[k % 10]} and the {WORDS[(3 * k) % 10]}."
            for k in range(24)}


def stratum(pid: str) -> str:
    return STRATA[int(pid[1:]) % 3]


def responses() -> dict[tuple[str, str], str]:
    out = {}
    for k, pid in enumerate(sorted(prompts())):
        for s, name in enumerate(SYSTEMS):
            n = 20 + 7 * ((k + 3 * s) % 9)  # 20..76 words
            body = " ".join(WORDS[(k * s + j) % 10] for j in range(n))
            if s == 1:
                body = "## Answer\n\n- **" + body + "**\n- *done*"
            if s == 2:
                body = "As an AI language model, " + body + "\n\nI hope this helps!"
            out[(pid, name)] = body
    out[("p05", "gamma")] = " ".join(["long"] * 500)
    out[("p07", "zeta")] = "=HYPERLINK(\"http://x\") " + " ".join(["cell"] * 30)
    return out


def planned(repeat_pairs: int = 1) -> list[tuple[str, str, str, str]]:
    """Every pair on `repeat_pairs` prompts each (15 pairs)."""
    pids = sorted(prompts())
    out = []
    for n, (a, b) in enumerate(itertools.combinations(SYSTEMS, 2)):
        for r in range(repeat_pairs):
            pid = pids[(n * repeat_pairs + r) % len(pids)]
            out.append((pid, a, b, stratum(pid)))
    return out


def vicuna(vicuna_data: Path):
    """(prompt_text, response_text, strata, systems) from the real Vicuna-80 files (`planner example vicuna80`)."""
    ptext, strata, resp = {}, {}, {}
    for line in (vicuna_data / "vicuna80" / "prompts.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        ptext[r["id"]], strata[r["id"]] = r["text"], r["stratum"]
    for line in (vicuna_data / "vicuna80" / "responses.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        resp[(r["prompt"], r["system"])] = r["text"]
    systems = tuple(sorted({s for _, s in resp}))
    return ptext, resp, strata, systems
