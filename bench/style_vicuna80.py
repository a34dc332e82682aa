"""Style control on the Vicuna80 GPT-4 study: raw vs controlled ranking, coefficients, LC win rates (issue 13).

Builds the study (../shared/data vicuna80 prompts + responses, the 4,480 GPT-4
judgments ingested, as tests/_report_fixture.py does), then runs what
``planner report STUDY --style-control --lc-anchor gpt-3.5-turbo`` computes and
prints the Markdown tables pasted in docs/guide.md, plus the time of the
controlled Laplace fit (best of ``--repeat``; the text scan included).

Usage: python bench/style_vicuna80.py [--data ../shared/data] [--engine laplace|nuts] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--engine", default="laplace")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lc-anchor", default="gpt-3.5-turbo")
    args = ap.parse_args()

    from planner.formats.markdown import style_section
    from planner.model.style_control import controlled_fit
    from planner.services.style_data import read_style_inputs
    from planner.store.study import Study, ingest, init_study
    from planner.workflows.report import build_report

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vicuna80-gpt4"
        init_study(path, prompts_file=args.data / "vicuna80" / "prompts.jsonl",
                   responses_file=args.data / "vicuna80" / "responses.jsonl")
        ingest(path, [args.data / "judgments" / "qlora_vicuna80_gpt4.jsonl"])
        rep = build_report(path, engine=args.engine, style_control=True, lc_anchor=args.lc_anchor)
        print("\n".join(style_section(rep.style_control)))
        for n in rep.notes:
            if n.startswith(("style control", "LC ")):
                print(f"note: {n}")
        if args.engine == "laplace":
            best = float("inf")
            with Study.open(path) as st:
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    controlled_fit(read_style_inputs(st))
                    best = min(best, time.perf_counter() - t0)
            print(f"controlled Laplace fit incl. reading {rep.style_control.n_used:,} judgments and their texts: "
                  f"{best:.3f} s (best of {args.repeat})")


if __name__ == "__main__":
    main()
