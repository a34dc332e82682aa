"""README.md and docs/guide.md run as written: every command block, in order, after `planner example vicuna80 ex`.

The conventions (tags, shown output, the skip marker) are in ``tests/docs_blocks.py``. The fast
tests check what needs no run: every block tagged, no stand-in ``...`` in a command, every
``planner`` invocation accepted by the command line as it is today, skip markers rare and
explained, and that the checker itself fails when it should. The slow tests run both documents.
"""

from __future__ import annotations

import docs_blocks as db
import pytest

#: the blocks a document may leave unrun (each marked with its reason); raising a cap needs a reason too
MAX_SKIPS = {"README.md": 2,        # installing the package; running the test suite itself
             "docs/guide.md": 4}    # installing the judge extra; three Label Studio blocks need a live server


@pytest.mark.parametrize("doc", db.DOCS)
def test_blocks_are_tagged_and_every_command_parses(doc):
    blocks = db.parse(doc)
    assert [b for b in blocks if b.lang in db.RUN], f"{doc} has no command block"
    assert db.find_problems(blocks) == []


@pytest.mark.parametrize("doc", db.DOCS)
def test_blocks_left_unrun_are_few_and_say_why(doc):
    skipped = [(b.where, b.skip) for b in db.parse(doc) if b.skip]
    assert len(skipped) <= MAX_SKIPS[doc], skipped
    assert all(len(reason.split()) >= 3 for _, reason in skipped)


def test_the_checker_fails_on_what_it_must_catch(tmp_path):
    good = "```bash\necho alpha; echo beta\necho gamma >&2\n```\n\n```text\nalpha\n… anything\ngamma\n```\n"
    blocks = db.parse("x.md", good)
    env = db.environment(tmp_path)
    db.run_block(blocks[0], tmp_path, env, "1")                     # alpha (stdout) … gamma (stderr)
    for bad, message in (
            ("```bash\necho alpha\n```\n\n```text\nalphx\n```\n", "shown output not printed"),
            ("```bash\necho alpha; echo beta\n```\n\n```text\nbeta\nalpha\n```\n", "shown output not printed"),
            ("```bash\nfalse\necho never\n```\n", "exited 1"),
            ("```console\n$ false\n$ echo done\ndone\n```\n", "exited 1")):
        with pytest.raises(db.DocError, match=message):
            db.run_block(db.parse("x.md", bad)[0], tmp_path, env, "1")
    # a failing command is fine when the transcript shows its code
    db.run_block(db.parse("x.md", "```console\n$ (exit 3)\n$ echo $?\n3\n```\n")[0], tmp_path, env, "1")
    for bad, message in (("```\nls\n```\n", "untagged block"),
                         ("<!-- docs-test: skip -->\n```bash\nls\n```\n", "needs its reason"),
                         ("```text\nout\n```\n", "before any command block")):
        with pytest.raises(db.DocError, match=message):
            db.parse("x.md", bad)
    probs = db.find_problems(db.parse("x.md", "```bash\nplanner size --effect 0.04 --no-such-flag\n"
                                              "planner ingest my-study ...\nplanner nosuch\n```\n"))
    assert len(probs) == 3 and "stand-in" in probs[0] and "No such option: --no-such-flag" in probs[1]
    assert "no command 'nosuch'" in probs[2]


def test_invocations_are_found_in_shell_lines():
    assert db.invocations("rc=0; planner decide s --json > gate.json || rc=$?") == [["decide", "s", "--json"]]
    assert db.invocations("D=x planner a $D/p 2>&1; echo planner | planner b  # planner c") == [["a", "$D/p"], ["b"]]
    assert db.invocations("python - <<'PY'\nplanner in a heredoc is python's\nPY\nplanner q \\\n  --k 1") == \
        [["q", "--k", "1"]]


@pytest.mark.slow
@pytest.mark.parametrize("doc", db.DOCS)
def test_the_document_runs_as_written(doc, tmp_path):
    db.run_document(doc, tmp_path)
