"""The peer: LMArena's arena-rank on planner's normalized judgments (pandas → Bradley–Terry → sandwich CIs).

Run with the Python of a separate virtual environment that has ``arena-rank`` (it pins its
own numpy and jax, so it never goes into planner's environment)::

    python -m venv bench/out/arena-rank-venv && bench/out/arena-rank-venv/bin/pip install arena-rank
    bench/out/arena-rank-venv/bin/python bench/arena_rank_script.py JUDGMENTS.jsonl

It does what the package's README example does (``PairDataset.from_pandas`` →
``BradleyTerry.compute_ratings_and_cis(significance_level=0.05)``, the sandwich intervals),
on a JSONL file of planner's normalized judgments: ``A`` → ``model_a``, ``B`` → ``model_b``,
``tie`` → ``tie``, invalid verdicts dropped. Prints the leaderboard (ratings with 95%
intervals, best first) as one JSON document, so the work cannot be skipped.
"""

from __future__ import annotations

import json
import sys

import pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.utils.data_utils import PairDataset


def main(path: str) -> None:
    df = pd.read_json(path, lines=True)
    df = df[df["verdict"].isin(["A", "B", "tie"])]
    df = pd.DataFrame({"model_a": df["a"], "model_b": df["b"],
                       "winner": df["verdict"].map({"A": "model_a", "B": "model_b", "tie": "tie"})})
    dataset = PairDataset.from_pandas(df)
    model = BradleyTerry(n_competitors=len(dataset.competitors))
    res = model.compute_ratings_and_cis(dataset, significance_level=0.05)
    board = pd.DataFrame({k: list(map(float, v)) if k != "competitors" else v for k, v in res.items()})
    board = board.sort_values("ratings", ascending=False)
    json.dump(board.to_dict(orient="records"), sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
