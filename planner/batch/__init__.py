"""planner.batch: a batch from planned comparisons to blinded items (see docs/architecture.md).

``assemble`` turns planned comparisons into blinded, shuffled items with their QC items (``qc_items``) and
the typed manifest; ``items`` holds the batch vocabulary, ``textnorm`` the annotator-facing text and
``pair_prompts`` which prompts each pair can still take. ``from planner.batch import assemble_batch`` names
any public name of the package; each module is imported when one of its names is first read
(:mod:`planner.reexport`).
"""

from planner.reexport import lazy_reexport

__all__, __getattr__, __dir__ = lazy_reexport(__name__, {
    "assemble": ("Batch", "BatchManifest", "assemble_batch", "build_manifest"),
    "items": ("ID_ALPHABET", "ID_LENGTH", "ID_PREFIX", "Ids", "Item", "KINDS", "PlannedComparison", "Skipped",
              "as_planned", "previous_ids", "swapped"),
    "pair_prompts": ("PairPrompts", "PairUsage"),
    "qc_items": ("ATTENTION_MIN_WORDS", "ATTENTION_WORDS", "Context", "Issuable", "acceptability_items",
                 "attention_items", "overlap_items", "qc_targets", "repeat_items", "round_half_up"),
    "textnorm": ("NORMALIZE_STYLES", "SELF_ID_ANYWHERE", "SELF_ID_OPENINGS", "ShownTexts", "TRAILING_SIGNATURES",
                 "TRUNCATION_MARKER", "count_words", "normalize_text", "truncate_words"),
})
