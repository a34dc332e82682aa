"""The committed real Label Studio exports (tests/data/label_studio) say what their README says.

No server needed: checks each export against ``expected.json`` (the verdicts the live test posted)
with the live test's independent export oracle, so the fixtures the readers are tested on cannot
drift from how they were made.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_label_studio_live import EXPORTS, SUFFIX, _posted

DATA = Path(__file__).resolve().parent / "data" / "label_studio"
USER_IDS = {"alice@example.com": 2, "bob@example.com": 3}


def _expected(which: str, kind: str, emails: bool = False) -> dict:
    exp = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))[which]
    def who(email):
        if emails:
            return email
        return str(USER_IDS[email]) if kind == "CSV" else USER_IDS[email]
    return {j: (item, v, who(email)) for j, (item, v, email) in exp.items()}


@pytest.mark.parametrize("kind", EXPORTS)
@pytest.mark.parametrize("stem, which, emails", [("round1", "round1", False), ("round1.all-tasks", "round1", False),
                                                 ("round2", "round2", False), ("round2.snapshot", "round2", True)])
def test_export_fixture_holds_the_posted_verdicts(stem, which, emails, kind):
    got = _posted(DATA / f"{stem}{SUFFIX[kind]}", kind)
    assert got == _expected(which, kind, emails)


def test_export_fixture_counts():
    exp = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
    key = json.loads((DATA / "key.json").read_text(encoding="utf-8"))
    assert (len(key), len(exp["round1"]), len(exp["round2"])) == (12, 6, 11)
    assert exp["round1"][exp["edited"]][1] != exp["round2"][exp["edited"]][1]
    # The skip appears in the JSON export only; MIN/CSV drop cancelled annotations (and a task whose
    # only annotation is cancelled, even with download_all_tasks).
    task = int(exp["cancelled"].split(":")[1])
    for stem in ("round1", "round1.all-tasks"):
        tasks = {t["id"]: t for t in json.loads((DATA / f"{stem}.json").read_text(encoding="utf-8"))}
        assert [a["was_cancelled"] for a in tasks[task]["annotations"]] == [True]
        assert task not in {r["id"] for r in json.loads((DATA / f"{stem}.min.json").read_text(encoding="utf-8"))}
    rows = json.loads((DATA / "round1.all-tasks.min.json").read_text(encoding="utf-8"))
    never = [r for r in rows if r["item_id"] == exp["never_annotated_item"]]
    assert len(never) == 1 and "verdict" not in never[0] and never[0]["annotation_id"] is None
