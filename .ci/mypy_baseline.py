"""mypy against the committed baseline (.ci/mypy-baseline.json): the error count may only go down.

    python .ci/mypy_baseline.py            # fail if any file has more errors than the baseline says
    python .ci/mypy_baseline.py --update   # write today's counts as the new baseline (after fixing errors)

mypy runs with the configuration of pyproject ``[tool.mypy]`` (the library and the CLI). A file's
count is its ``error:`` lines; a file missing from the baseline has 0 allowed. Counting per file
keeps a new error from hiding behind one fixed elsewhere.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.json"
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+: error: ")


def count_errors() -> tuple[Counter, str]:
    """Errors per file, and mypy's summary line."""
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    if run.returncode not in (0, 1):   # 2: mypy itself failed (a bad config, a crash)
        sys.exit(f"mypy failed (exit {run.returncode}):\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    lines = run.stdout.splitlines()
    return Counter(m["path"] for line in lines if (m := ERROR.match(line))), (lines[-1] if lines else "")


def main(argv: list[str]) -> int:
    got, summary = count_errors()
    if "--update" in argv:
        BASELINE.write_text(json.dumps({"total": sum(got.values()), "files": dict(sorted(got.items()))},
                                       indent=1) + "\n", encoding="utf-8")
        print(f"baseline written: {sum(got.values())} errors in {len(got)} files")
        return 0
    base = json.loads(BASELINE.read_text(encoding="utf-8"))
    allowed = Counter(base["files"])
    worse = sorted(f"{path}: {n} errors (baseline {allowed[path]})" for path, n in got.items() if n > allowed[path])
    print(f"mypy: {sum(got.values())} errors in {len(got)} files; baseline {base['total']} ({summary})")
    if worse:
        print("more mypy errors than the baseline allows (run mypy on these files and fix what is new):\n  "
              + "\n  ".join(worse))
        return 1
    if sum(got.values()) < base["total"]:
        print("fewer errors than the baseline: lower it with `python .ci/mypy_baseline.py --update`")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
