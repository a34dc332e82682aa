"""The command blocks of README.md and docs/guide.md, as a test runs them (and as you can, by hand).

Conventions the documents follow (``tests/test_docs_blocks.py`` enforces them):

* Every fenced block carries a tag. ``bash`` blocks are commands, run as one script with
  ``set -e``; ``console`` blocks are transcripts: each ``$ `` line is a command (a line ending in
  ``\\`` continues it) and the lines under it are what it prints; ``text`` blocks show what the
  command block before them printed. Other tags (``json``, ``csv``, ``python``, ``xml``, ...) are
  file contents or library code, not run.
* A document runs top to bottom in a fresh directory after ``planner example vicuna80 ex``: every
  ``bash`` and ``console`` block, in order, with no edits. Commands never contain ``...`` or
  ``…`` (no stand-ins for flags or files).
* Shown output is checked: each run of shown lines must appear, as consecutive lines, in what the
  command printed (stdout or stderr, trailing blanks ignored; output is rendered for a 120-column
  terminal: ``COLUMNS=120``). A shown line that starts with ``…`` stands for lines left out (the
  rest of it is a comment).
* A command that fails (non-zero exit) fails the document, except in a ``console`` block where the
  next command is ``echo $?`` and shows the code.
* A block that cannot run here is marked, with the reason, on the line above its fence:
  ``<!-- docs-test: skip needs a live Label Studio server -->``. Such markers are rare (counted).
* The local judge server's port, 39567, is replaced by a free port in every block of a run (so
  two runs never collide); the server is stopped at the end.

Run by hand: ``python tests/docs_blocks.py docs/guide.md [--keep DIR] [--all]`` prints each block's
time and stops at the first difference, showing what was expected and what was printed (``--all``:
lists every difference and stops only when a command fails; each block's output stays in
``DIR/.out/``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/guide.md")
RUN = ("bash", "console")
SHOWN = "text"
DATA_TAGS = frozenset({"json", "jsonl", "csv", "python", "xml", "toml", "yaml", "markdown", "sql"})
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\b(.*?)-->")
ELISION = "…"
JUDGE_PORT = "39567"
COLUMNS = "120"
BLOCK_TIMEOUT = 1200  # seconds: the longest block (the guide's simulate run) takes ~3 min on a loaded 2-core machine


@dataclass
class Command:
    text: str                 # the command as the shell reads it (continuations kept)
    line: int
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    doc: str
    line: int                 # of the opening fence, 1-based
    lang: str
    body: str
    skip: str | None = None   # the reason given, when marked not to run
    commands: list[Command] = field(default_factory=list)
    shown: list[list[str]] = field(default_factory=list)   # text blocks after it

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


class DocError(AssertionError):
    pass


def parse(doc: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``doc`` (relative to the repository root), with skip markers and shown output."""
    lines = (text if text is not None else (ROOT / doc).read_text(encoding="utf-8")).splitlines()
    blocks, i, last_run, problems = [], 0, None, []
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(2), i
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = "\n".join(ln[len(m.group(1)):] if ln.startswith(m.group(1)) else ln for ln in lines[i + 1:j])
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = SKIP.search(lines[k]) if k >= 0 else None
        b = Block(doc, start + 1, lang, body, marker.group(1).strip() if marker else None)
        if marker and not b.skip:
            problems.append(f"{b.where}: a skip marker needs its reason (docs-test: skip REASON)")
        if not lang:
            problems.append(f"{b.where}: untagged block; tag it bash, console, text, or a data format "
                            "(json, csv, python, ...)")
        elif lang in RUN:
            b.commands = _commands(b)
            last_run = b
        elif lang == SHOWN:
            if last_run is None:
                problems.append(f"{b.where}: a text block (shown output) before any command block")
            else:
                last_run.shown.append(body.splitlines())
        elif lang not in DATA_TAGS:
            problems.append(f"{b.where}: unknown tag {lang!r}")
        blocks.append(b)
        i = j + 1
    if problems:
        raise DocError("\n".join(problems))
    return blocks


def _commands(b: Block) -> list[Command]:
    out: list[Command] = []
    lines = b.body.splitlines()
    if b.lang == "bash":
        return [Command(b.body, b.line + 1)]
    cont = False
    for n, ln in enumerate(lines):
        if ln.startswith("$ ") or cont:
            piece = ln[2:] if ln.startswith("$ ") and not cont else ln
            if cont:
                out[-1].text += "\n" + piece
            else:
                out.append(Command(piece, b.line + 1 + n))
            cont = ln.rstrip().endswith("\\")
        elif out:
            out[-1].shown.append(ln)
        elif ln.strip():
            raise DocError(f"{b.where}: a console block starts with output; commands start with '$ '")
    return out


_REDIRECT = re.compile(r"(?:\d|&)?>>?\s*&?[^\s;&|()]+|<(?!<)\s*[^\s;&|()]+")
_HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")


def _shell_lines(command: str) -> list[str]:
    """The command's lines as the shell reads them: continuations joined, heredoc bodies dropped."""
    out, lines, k = [], command.replace("\\\n", " ").splitlines(), 0
    while k < len(lines):
        ln = lines[k]
        m = _HEREDOC.search(ln)
        out.append(ln[:m.start()] if m else ln)
        k += 1
        if m:
            while k < len(lines) and lines[k].strip() != m.group(1):
                k += 1
            k += 1
    return out


def invocations(command: str) -> list[list[str]]:
    """The ``planner ...`` argument lists in a shell command (operators, redirections and comments cut)."""
    out = []
    for line in _shell_lines(command):
        lex = shlex.shlex(_REDIRECT.sub(" ", line), posix=True, punctuation_chars=";&|()")
        lex.whitespace_split, lex.commenters = True, "#"
        state: list | bool | None = None      # None: a command starts; a list: planner's words; False: another
        for w in lex:
            if set(w) <= set(";&|()"):
                if isinstance(state, list):
                    out.append(state)
                state = None
            elif state is None:
                if not re.match(r"^[A-Za-z_]\w*=", w):   # VAR=value before a command
                    state = [] if w == "planner" else False
            elif isinstance(state, list):
                state.append(w)
        if isinstance(state, list):
            out.append(state)
    return out


def find_problems(blocks: list[Block]) -> list[str]:
    """What a document breaks without running it: stand-ins in commands, options the CLI does not have."""
    import typer.main

    from cli.main import app

    group = typer.main.get_command(app)
    probs = []
    for b in blocks:
        for c in b.commands:
            if "..." in c.text or ELISION in c.text:
                probs.append(f"{b.where}: a command with a stand-in ('...'): {c.text.splitlines()[0][:80]}")
            for args in invocations(c.text):
                probs.extend(f"{b.where}: {p}" for p in _parse_problems(group, args))
                if args[:1] == ["judge-server"] and "--port" not in args:
                    probs.append(f"{b.where}: planner judge-server without --port {JUDGE_PORT} (the test gives "
                                 "each run its own port by replacing that number)")
    return probs


def _parse_problems(group, args: list[str]) -> list[str]:
    if not args or args[0].startswith("-"):
        return []
    try:
        from typer import _click as click
    except ImportError:  # pragma: no cover
        import click
    cmd = group.commands.get(args[0])
    if cmd is None:
        return [f"planner has no command {args[0]!r}"]
    if any(a in ("-h", "--help") for a in args):
        return []
    try:
        with click.Context(group, info_name="planner") as parent:
            cmd.make_context(args[0], list(args[1:]), parent=parent)
    except click.exceptions.ClickException as exc:
        return [f"planner {' '.join(args)[:100]}: {exc.format_message()}"]
    return []


# ------------------------------------------------------------------ running
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(work: Path) -> dict:
    """The commands' environment: ``planner`` is this checkout's CLI; a 120-column terminal; no keys."""
    bin_dir = work / ".bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "planner"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cli \"$@\"\n", encoding="utf-8")
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LABEL_STUDIO_", "PYTEST_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT), COLUMNS=COLUMNS,
               MPLBACKEND="Agg", NO_COLOR="1", TERM="dumb", LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8")
    env.pop("FORCE_COLOR", None)
    return env


def _script(b: Block, port: str, work: Path) -> tuple[str, list[Path]]:
    """The block as a bash script; for a console block, each command's output goes to its own files."""
    if b.lang == "bash":
        return "set -e\n" + b.body.replace(JUDGE_PORT, port) + "\n", []
    parts, outs = [], []
    for n, c in enumerate(b.commands):
        stem = work / ".out" / f"{b.line}-{n}"
        outs.append(stem)
        q = shlex.quote(str(stem))
        parts.append(f"{{ {c.text.replace(JUDGE_PORT, port)}\n}} > {q}.out 2> {q}.err\n"
                     f"__rc=$?; echo $__rc > {q}.rc; (exit $__rc)")
    return "\n".join(parts) + "\n", outs


def run_block(b: Block, work: Path, env: dict, port: str, mismatches: list | None = None) -> None:
    """Run one block in ``work``; raise :class:`DocError` on a failure or a shown line not printed
    (with ``mismatches``, a list, a shown line not printed is appended there instead)."""
    (work / ".out").mkdir(exist_ok=True)
    script, outs = _script(b, port, work)
    path = work / ".out" / f"block-{b.line}.sh"
    path.write_text(script, encoding="utf-8")
    with open(work / ".out" / f"block-{b.line}.stdout", "wb") as fo, \
            open(work / ".out" / f"block-{b.line}.stderr", "wb") as fe:
        rc = subprocess.run(["bash", str(path)], cwd=work, env=env, stdout=fo, stderr=fe,
                            timeout=BLOCK_TIMEOUT).returncode
    stdout = (work / ".out" / f"block-{b.line}.stdout").read_text(encoding="utf-8", errors="replace")
    stderr = (work / ".out" / f"block-{b.line}.stderr").read_text(encoding="utf-8", errors="replace")
    if b.lang == "bash":
        if rc != 0:
            raise DocError(f"{b.where}: the block exited {rc}\n--- stderr (end)\n{stderr[-3000:]}")
        for shown in b.shown:
            _collect(mismatches, check_shown, b, shown, stdout, stderr, port)
        return
    for n, (c, stem) in enumerate(zip(b.commands, outs)):
        out = stem.with_suffix(".out").read_text(encoding="utf-8", errors="replace")
        err = stem.with_suffix(".err").read_text(encoding="utf-8", errors="replace")
        code = int(stem.with_suffix(".rc").read_text().strip() or "-1")
        nxt = b.commands[n + 1].text.strip() if n + 1 < len(b.commands) else ""
        if code != 0 and nxt != "echo $?":
            raise DocError(f"{b.doc}:{c.line}: `{c.text[:80]}` exited {code}\n--- stderr (end)\n{err[-3000:]}")
        shown = c.shown + ([ln for s in b.shown for ln in s] if n == len(b.commands) - 1 else [])
        _collect(mismatches, check_shown, b, shown, out, err, port, line=c.line)


def _collect(mismatches: list | None, check, *args, **kw) -> None:
    try:
        check(*args, **kw)
    except DocError as exc:
        if mismatches is None:
            raise
        mismatches.append(str(exc))


def _chunks(shown: list[str]) -> list[list[str]]:
    out, cur = [], []
    for ln in shown:
        if ln.lstrip().startswith(ELISION):
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(ln.rstrip())
    if cur:
        out.append(cur)
    # blank lines at the edges of a run carry nothing
    return [c for c in (_trim(c) for c in out) if c]


def _trim(c: list[str]) -> list[str]:
    while c and not c[0]:
        c = c[1:]
    while c and not c[-1]:
        c = c[:-1]
    return c


def _find(run: list[str], lines: list[str], start: int) -> int:
    n = len(run)
    for k in range(start, len(lines) - n + 1):
        if lines[k:k + n] == run:
            return k + n
    return -1


def check_shown(b: Block, shown: list[str], stdout: str, stderr: str, port: str, line: int | None = None) -> None:
    """Each run of shown lines appears, consecutively and in order, in stdout or stderr."""
    streams = {"stdout": [ln.rstrip() for ln in stdout.splitlines()],
               "stderr": [ln.rstrip() for ln in stderr.splitlines()]}
    pos = dict.fromkeys(streams, 0)
    for run in _chunks([s.replace(JUDGE_PORT, port) for s in shown]):
        for name, lines in streams.items():
            end = _find(run, lines, pos[name])
            if end >= 0:
                pos[name] = end
                break
        else:
            where = f"{b.doc}:{line or b.line}"
            raise DocError(f"{where}: shown output not printed:\n" + "\n".join(f"  | {x}" for x in run)
                           + "\n--- stdout\n" + stdout[-6000:] + "\n--- stderr\n" + stderr[-3000:])


def stop_server(port: str) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/shutdown", data=b"", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            json.loads(r.read() or b"{}")
    except (OSError, ValueError):
        pass


def run_document(doc: str, work: Path, *, log=None, mismatches: list | None = None) -> list[tuple[str, float]]:
    """Run a document's blocks in order in ``work`` (empty), after ``planner example vicuna80 ex``.

    Stops at the first failure; a shown line not printed stops it too unless ``mismatches`` (a list)
    collects them."""
    blocks = parse(doc)
    env = environment(work)
    port = str(free_port())
    times = []
    try:
        subprocess.run(["planner", "example", "vicuna80", "ex"], cwd=work, env=env, check=True,
                       capture_output=True, timeout=120)
        for b in blocks:
            if b.lang not in RUN or b.skip:
                continue
            t0 = time.monotonic()
            run_block(b, work, env, port, mismatches)
            times.append((b.where, time.monotonic() - t0))
            if log:
                log(f"{b.where}: {times[-1][1]:.1f} s")
    finally:
        stop_server(port)
    return times


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="Run a document's command blocks as the docs test does.")
    ap.add_argument("doc", choices=DOCS)
    ap.add_argument("--keep", type=Path, help="Run in this (new, empty) directory and keep it.")
    ap.add_argument("--all", action="store_true", help="Report every shown line not printed; stop only when a "
                                                        "command fails.")
    a = ap.parse_args(argv)
    for p in find_problems(parse(a.doc)):
        print(p)
    work = a.keep or Path(tempfile.mkdtemp(prefix="docs-blocks-"))
    work.mkdir(parents=True, exist_ok=True)
    mismatches: list | None = [] if a.all else None
    try:
        times = run_document(a.doc, work, log=print, mismatches=mismatches)
    except DocError as exc:
        print(exc)
        return 1
    for m in mismatches or ():
        print(m)
    print(f"{a.doc}: {len(times)} blocks, {sum(t for _, t in times):.0f} s (in {work})")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
