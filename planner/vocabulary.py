"""The tool's vocabulary: the words that name verdicts, record kinds, engines and strategies, defined once.

Each tuple is the one definition; modules that list the allowed values (readers,
writers, the study, the model, batch assembly) import it from here instead of
writing the literal again, so two lists of "the same" words cannot drift apart.
Orders are meaningful where they are printed (error messages list the choices in
this order) and where they index arrays (``OUTCOMES`` orders a cell's counts).

Verdicts come in two orientations:

* a **position verdict** names what the annotator saw: ``left`` / ``right`` /
  ``tie`` for a pairwise item, ``pass`` / ``fail`` for an acceptability item,
  ``invalid`` for either (batch files and judge outputs speak this way);
* an **outcome** names the systems: ``A`` (system ``a``, shown first, wins),
  ``B`` (system ``b`` wins), ``tie`` or ``invalid`` (normalized judgment files
  and :class:`planner.counts.Counts` speak this way).
"""

from __future__ import annotations

# ------------------------------------------------------------------ verdicts
#: oriented outcome of one judgment; the order of a cell's counts in :class:`planner.counts.Counts`
OUTCOMES = ("A", "B", "tie", "invalid")
#: position verdicts of a pairwise item, as batch files offer them to annotators
PAIRWISE_VERDICTS = ("left", "right", "tie", "invalid")
#: position verdicts of an acceptability item (one response: would you send it?)
ACCEPTABILITY_VERDICTS = ("pass", "fail", "invalid")
#: every position verdict a returned file may hold (pairwise, then the acceptability-only ones)
POSITION_VERDICTS = PAIRWISE_VERDICTS + ("pass", "fail")

# --------------------------------------------------------------- record kinds
#: kinds of batch items (and of the judgments recorded for them) in the study
ITEM_KINDS = ("regular", "attention", "repeat", "overlap", "swap", "acceptability")
#: quality-control item kinds (a batch's QC rates are given per kind)
QC_KINDS = ("attention", "repeat", "overlap", "acceptability")
#: judgment kinds: the item kinds plus judgments ingested without an item
JUDGMENT_KINDS = ITEM_KINDS + ("external",)
#: kinds that are evidence about the systems (attention, repeat and acceptability items are QC)
COUNTED_KINDS = ("regular", "overlap", "swap", "external")
#: kinds whose unanswered items count as pending comparisons
PENDING_KINDS = ("regular", "overlap", "swap")

# ------------------------------------------------------------------ engines
#: posterior engines of the Bradley–Terry–Davidson model (planner.model.fit)
ENGINES = ("laplace", "nuts")

# ------------------------------------------------------------------ clusters
#: which judgments share a cluster for cluster-robust intervals (planner.stats.clusters): same prompt and
#: unordered pair (the default), same prompt, same annotator, or none (every judgment independent)
CLUSTER_BY = ("item", "prompt", "annotator", "none")

# -------------------------------------------------------- selection strategies
#: comparison-selection strategies (planner.acquisition)
STRATEGIES = ("active", "round-robin", "random", "anchor", "swiss", "arena", "oracle")
#: the strategies a study's batches are chosen by (``oracle`` needs the simulator's truth)
STUDY_STRATEGIES = tuple(s for s in STRATEGIES if s != "oracle")
#: objectives of the active strategy (planner.acquisition)
OBJECTIVES = ("ranking", "entropy", "variance", "anchor", "top-k")

__all__ = ["ACCEPTABILITY_VERDICTS", "CLUSTER_BY", "COUNTED_KINDS", "ENGINES", "ITEM_KINDS", "JUDGMENT_KINDS",
           "OBJECTIVES", "OUTCOMES", "PAIRWISE_VERDICTS", "PENDING_KINDS", "POSITION_VERDICTS", "QC_KINDS",
           "STRATEGIES", "STUDY_STRATEGIES"]
