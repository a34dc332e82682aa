"""`example`: the real data planner ships, written out as files for the docs and your first study.

The package holds one copy of each example (``planner/data/<name>/``: gzip-compressed data plus
its README with provenance and licences); :func:`write_example` writes it into a directory,
checked against the SHA-256 recorded here, and the tests read the same copy. Writing is safe to
repeat: a file already there with the same bytes is left alone and counted as unchanged; a file
there with other bytes is refused (nothing written) unless ``force``. Every check runs before the
first directory is created.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from planner.errors import DataError, UsageError, quote


@dataclass(frozen=True)
class ExampleFile:
    """One file of an example: where it goes (relative to the directory), its packaged source, its checks."""

    path: str
    source: str
    rows: int
    size: int
    sha256: str
    what: str


@dataclass(frozen=True)
class Example:
    name: str
    title: str
    files: tuple[ExampleFile, ...]


_Q = "qlora_vicuna80"
EXAMPLES: dict[str, Example] = {"vicuna80": Example("vicuna80", "Vicuna-80 (QLoRA): 8 systems on 80 questions", (
    ExampleFile("README.md", "README.md", 0, 0, "", "what is here, provenance and licences"),
    ExampleFile("CONVERSION.md", "CONVERSION.md", 0, 0, "", "how the files were converted from their sources"),
    ExampleFile("vicuna80/prompts.jsonl", "prompts.jsonl.gz", 80, 13_045,
                "c8ae3ec9100eac38a01b6ec3f65f2d6f9ce1669c40fbfcca6f1457995615522d", "questions in 9 strata"),
    ExampleFile("vicuna80/responses.jsonl", "responses.jsonl.gz", 640, 1_011_912,
                "79857398ed54447bb047f1e11701e829cfb97fefccdfbb49e66067161f0adadd", "answers of 8 systems"),
    ExampleFile(f"judgments/{_Q}_gpt4.jsonl", f"{_Q}_gpt4.jsonl.gz", 4_480, 671_654,
                "55c6fa30da082d85480daf8045b22f951caccb6a14c31191124c667fc9a65210",
                "GPT-4 verdicts, every pair in both orders"),
    ExampleFile(f"judgments/{_Q}_human.jsonl", f"{_Q}_human.jsonl.gz", 6_720, 1_044_978,
                "845522f2fba630413bd4608a65b949ec358877b04cf35f6e47881e82d6892640",
                "crowd votes, 3 per (question, pair)"),
))}


@dataclass(frozen=True)
class WrittenFile:
    """``status``: ``written`` (new), ``replaced`` (other bytes were there; ``force``) or ``unchanged``."""

    path: str
    rows: int
    size: int
    what: str
    status: str


@dataclass(frozen=True)
class ExampleResult:
    name: str
    title: str
    directory: str
    files: tuple[WrittenFile, ...]

    @property
    def written(self) -> int:
        return sum(f.status != "unchanged" for f in self.files)


def get_example(name: str) -> Example:
    """The example called ``name``, or a usage error listing the ones there are."""
    if name not in EXAMPLES:
        raise UsageError(f"`name` ({quote(name)}) is not an example planner ships; choose one of "
                         + ", ".join(sorted(EXAMPLES)), parameters=("name",))
    return EXAMPLES[name]


def example_bytes(name: str, path: str) -> bytes:
    """The bytes of one file of an example (decompressed and checked against its SHA-256)."""
    ex = get_example(name)
    f = next((f for f in ex.files if f.path == path), None)
    if f is None:
        raise UsageError(f"`path` ({quote(path)}) is not a file of the {name} example",
                         parameters=("path",))
    return _read(name, f)


def _read(name: str, f: ExampleFile) -> bytes:
    raw = resources.files("planner").joinpath("data", name, f.source).read_bytes()
    data = gzip.decompress(raw) if f.source.endswith(".gz") else raw
    if f.sha256 and (len(data) != f.size or hashlib.sha256(data).hexdigest() != f.sha256):
        raise DataError(f"the installed copy of {name}/{f.source} is damaged (SHA-256 differs from the "
                        "recorded one); reinstall planner")
    return data


def write_example(name: str, directory, *, force: bool = False) -> ExampleResult:
    """Write example ``name`` into ``directory`` (created if missing); see the module docstring."""
    from planner.formats.staging import write_atomically
    from planner.limits import check_output_dir

    ex = get_example(name)
    root = Path(directory)
    check_output_dir("directory", root)
    plan = []
    for f in ex.files:
        target = root / f.path
        data = _read(name, f)
        if target.is_dir() or (target.parent.exists() and not target.parent.is_dir()):
            raise UsageError(f"`directory` ({quote(str(root))}): something is in the way of the example's file "
                             f"{f.path}", parameters=("directory",))
        status = "written"
        if target.exists():
            if target.read_bytes() == data:
                status = "unchanged"
            elif not force:
                raise UsageError(f"`directory` ({quote(str(root))}): its {f.path} exists with other content; "
                                 "nothing was written (use `force` to replace the example's files)",
                                 parameters=("directory", "force"))
            else:
                status = "replaced"
        plan.append((f, target, data, status))
    todo = [(t, d) for _, t, d, s in plan if s != "unchanged"]
    for parent in sorted({t.parent for t, _ in todo}):
        parent.mkdir(parents=True, exist_ok=True)
    if todo:
        write_atomically(todo, force=True, option="directory")
    return ExampleResult(ex.name, ex.title, str(root),
                         tuple(WrittenFile(str(t), f.rows, len(d), f.what, s) for f, t, d, s in plan))
