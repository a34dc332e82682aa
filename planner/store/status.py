"""`status`: what was issued, returned, unanswered, voided and pending; counts per pair, system, annotator.

The totals say where every stored judgment went: ``judgments`` =
``counted`` (kinds regular, overlap, swap, external: the evidence about the
systems, split A / B / tie / invalid in ``totals``) + ``qc`` (attention and
repeat items, and acceptability verdicts: quality control, kept out of the
counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.counts import half_tie_score
from planner.store.queries import Study
from planner.store.records import COUNTED_KINDS, BatchInfo


@dataclass(frozen=True)
class PairStatus:
    """Counts for an unordered pair ``(x, y)``: ``x_wins``, ``y_wins`` over both
    positions; ``score`` is x's half-tie score (None when nothing usable)."""

    x: str
    y: str
    x_wins: int
    y_wins: int
    ties: int
    invalid: int
    score: float | None


@dataclass(frozen=True)
class SystemStatus:
    """A system's wins/losses/ties/invalid over all opponents and its half-tie score."""

    system: str
    wins: int
    losses: int
    ties: int
    invalid: int
    score: float | None


@dataclass(frozen=True)
class AnnotatorStatus:
    """Judgments per annotator (``None`` = no annotator recorded); A/B relative
    to the stored orientation, pass/fail for acceptability items."""

    annotator: str | None
    judgments: int
    A: int
    B: int
    tie: int
    invalid: int
    passed: int
    failed: int


@dataclass(frozen=True)
class StatusResult:
    """What :func:`status` reports.

    ``judgments`` = ``counted`` + sum of ``qc`` (kind → number); ``totals``
    splits the counted ones into A / B / tie / invalid. ``unanswered`` items
    whose judge request failed in transport; ``edits`` audited replacements;
    ``retracted_files`` files whose judgments were withdrawn; ``aliases``
    source identity → annotator name; ``judge`` per judge model sent with
    ``planner judge``: answers, prompt/completion tokens and cost (USD, None
    without prices).
    """

    path: str
    systems: tuple[str, ...]
    judgments: int
    totals: dict
    batches: tuple[BatchInfo, ...]
    pairs: tuple[PairStatus, ...]
    per_system: tuple[SystemStatus, ...]
    annotators: tuple[AnnotatorStatus, ...]
    acceptability: dict
    files: int
    counted: int = 0
    qc: dict | None = None
    unanswered: int = 0
    edits: int = 0
    retracted_files: int = 0
    aliases: dict | None = None
    judge: tuple = ()
    # the saved forecast updated with the data now (planner.simulation.remaining.Remaining), filled by
    # planner.workflows.status; None when no `planner plan` forecast is saved in the study
    forecast: object | None = None

    def totals_sentence(self) -> str:
        """The one-line account of the totals, from the same numbers as the table."""
        t = self.totals
        head = (f"{self.judgments:,} judgments from {self.files} file(s): {self.counted:,} counted "
                f"(A {t['A']:,} / B {t['B']:,} / tie {t['tie']:,} / invalid {t['invalid']:,})")
        if self.qc:
            head += " + " + ", ".join(f"{n:,} {k}" for k, n in self.qc.items()) + " quality-control"
        return head


def _pair_table(study: Study):
    c = study.counts(by_stratum=False)
    return c, c.pair_tensor()  # [x, y] = x's wins, y's wins, ties, invalid, both positions


def status(path) -> StatusResult:
    """Issued/returned/unanswered/pending items per batch; counts per pair, per system
    (half-tie scores) and per annotator. Counts use :data:`planner.store.study.COUNTED_KINDS`."""
    from planner.store.ledger import judge_totals

    judge = tuple(judge_totals(path))
    with Study.open(path) as study:
        c, tab = _pair_table(study)
        names, m = study.systems, len(study.systems)
        pairs = []
        for x in range(m):
            for y in range(x + 1, m):
                w, l, t, inv = (int(v) for v in tab[x, y])
                if w + l + t + inv:
                    pairs.append(PairStatus(names[x], names[y], w, l, t, inv, half_tie_score(w, l, t)))
        per_system = []
        for x in range(m):
            w, l, t, inv = (int(v) for v in tab[x].sum(axis=0))
            per_system.append(SystemStatus(names[x], w, l, t, inv, half_tie_score(w, l, t)))
        con = study.connection
        ann = [AnnotatorStatus(row[0], *(int(v) for v in row[1:])) for row in con.execute(
            "SELECT annotator, count(*), sum(verdict='A'), sum(verdict='B'), sum(verdict='tie'), "
            "sum(verdict='invalid'), sum(verdict='pass'), sum(verdict='fail') FROM judgments "
            "GROUP BY annotator ORDER BY annotator IS NULL, annotator")]
        acc = study.acceptability_counts()
        rates = acc.pass_rate()
        acceptability = {s: {"pass": int(acc.passed[i].sum()), "fail": int(acc.failed[i].sum()),
                             "invalid": int(acc.invalid[i].sum()), "pass_rate": rates[i]}
                         for i, s in enumerate(names) if acc.passed[i].sum() + acc.failed[i].sum()
                         + acc.invalid[i].sum()}
        by_kind = dict(con.execute("SELECT kind, count(*) FROM judgments GROUP BY kind"))
        counted = sum(n for k, n in by_kind.items() if k in COUNTED_KINDS and k != "acceptability")
        # pairwise counted kinds with b NULL cannot exist; acceptability is QC-like: reported apart
        qc = {k: int(n) for k, n in sorted(by_kind.items()) if k not in COUNTED_KINDS}
        batches = tuple(study.batches())
        one = lambda q: int(con.execute(q).fetchone()[0])  # noqa: E731
        return StatusResult(
            str(path), names, sum(by_kind.values()), c.totals(), batches, tuple(pairs), tuple(per_system),
            tuple(ann), acceptability, one("SELECT count(*) FROM files WHERE retracted IS NULL"),
            counted=int(counted), qc=qc, unanswered=sum(b.unanswered for b in batches),
            edits=one("SELECT count(*) FROM judgment_edits"),
            retracted_files=one("SELECT count(*) FROM files WHERE retracted IS NOT NULL"),
            aliases=dict(con.execute("SELECT source, name FROM annotator_aliases ORDER BY source")), judge=judge)
