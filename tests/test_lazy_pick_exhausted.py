"""A hang of the lazy greedy, fixed in session 5 (found replaying bench/data/replays/prd_vicuna80_gpt35.jsonl).

`planner.acquisition.greedy._lazy_pick` loops for ever when every open candidate is
either at the batch cap (``taken >= cap``) or exhausted (``taken >= pcap``) and
the first candidate is a capped one: its ``while not blocked.all()`` ignores the
exhausted ("dead") ones, ``argmax`` of an all ``-inf`` array picks index 0, which
is blocked and never fresh, the chunk to re-score is empty, and nothing changes.
The state below is the one the replay reached (`active`, repetition 1, seed 0,
budget 1,000, batch 50: 3 of the 10 pairs' pools used up, 7 candidates left, cap 5
per pair, so at most 34 of the batch's 50 picks fit). Run in a subprocess with a
timeout so a hang cannot stall the suite. Now the loop looks only at open candidates and
the capped ones are compared: the best capped candidate (index 0, the largest bound) wins.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import numpy as np
from planner.acquisition.greedy import _lazy_pick
from planner.acquisition.options import SelectionOptions
taken = np.array([5, 5, 5, 5, 4, 5, 5])
pcap = np.array([85.0, 76, 118, 121, 4, 136, 110])
stale = np.linspace(0.07, 0.01, 7)
print(_lazy_pick(lambda t: stale[t] * 0.5, stale.copy(), taken, pcap, 5, SelectionOptions()))
"""


def test_lazy_pick_returns_when_every_candidate_is_capped_or_exhausted():
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("_lazy_pick did not return within 20 s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
