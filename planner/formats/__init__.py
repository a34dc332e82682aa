"""planner.formats: every file planner reads or writes (see docs/architecture.md).

``from planner.formats import read_prompts`` names any public function of the
package; each module is imported when one of its names is first read
(:mod:`planner.reexport`), so a command that reads a prompts file does not load
matplotlib or the HTML report.
"""

from planner.reexport import lazy_reexport

__all__, __getattr__, __dir__ = lazy_reexport(__name__, {
    "annotation_tools": ("ACCEPTABILITY_QUESTION", "argilla_records", "argilla_settings", "check_reasons",
                         "label_studio_acceptability_config", "label_studio_config", "ls_tasks"),
    "argilla_read": ("read_argilla", "read_argilla_flat"),
    "external": ("ARENA_LABELS", "alpaca_shown_first", "read_alpaca_eval", "read_arena_hard", "read_mt_bench"),
    "html": ("render_html", "write_html"),
    "html_svg": ("esc", "heatmap", "interval_bar", "rank_slopes"),
    "jsonsafe": ("GZIP_MAGIC", "JSONProblem", "MAX_INFLATED_BYTES", "MAX_INT_DIGITS", "check_surrogates", "loads",
                 "open_input", "raw_decode", "read_text"),
    "judge": ("answer_part", "classify", "parse_judge_verdict", "read_judge_outputs", "read_judge_rows"),
    "label_studio": ("NOT_PUSHED", "ls_annotator", "ls_identities", "read_label_studio", "read_label_studio_csv",
                     "read_label_studio_min"),
    "markdown": ("render_markdown", "style_section", "table", "write_document", "write_markdown"),
    "normalized": ("MAX_PROBLEMS", "load_normalized"),
    "plots": ("hybrid_figure", "strength_figure", "win_rate_figure", "write_hybrid_plot", "write_plots"),
    "pointwise": ("read_pointwise",),
    "power_plot": ("plot_power",),
    "prompts": ("FALSE_WORDS", "FLAG_HELP", "PromptRow", "TRUE_WORDS", "parse_flag", "read_prompts"),
    "prompts_writer": ("OUT_FIELDS", "check_out", "write_prompts"),
    "reading": ("BadValue", "FIRST_ELEMENT_BYTES", "Row", "SNIFF_BYTES", "Sniff", "extras", "iter_csv",
                "iter_json_array", "iter_json_array_indexed", "iter_jsonl", "iter_table", "opt_float", "opt_str",
                "read_option_file", "sniff", "text_id", "where"),
    "readers": ("READERS", "Reader", "detect_format", "read_normalized", "read_positions", "register"),
    "simulate_plot": ("plot",),
    "simulate_runs": ("FORMAT", "read_results", "trace_line"),
    "staging": ("JOURNAL_PREFIX", "MAX_NAME_BYTES", "Staged", "TMP_SUFFIX", "check_output", "check_outputs",
                "journals", "new_token", "recover", "sha256", "stage", "write_atomically", "write_failure"),
    "tables": ("ENCODERS", "csv_bytes", "jsonl_bytes", "parquet_bytes"),
    "templates": ("ACCEPTABILITY_FIELDS", "DEFAULT_ACCEPTABILITY_TEMPLATE", "DEFAULT_PAIRWISE_TEMPLATE",
                  "JUDGE_SYSTEM_MESSAGE", "PAIRWISE_FIELDS", "VERDICT_TOKENS", "check_template"),
    "writers": ("CSV_COLUMNS", "DEFAULT_EXT", "FORMATS", "NO_TEMPERATURE_MODELS", "TEMPERATURE_RANGE",
                "check_temperature", "judge_requests", "judge_temperature", "output_paths", "read_attention_pool",
                "render_batch", "staged_files", "write_batch", "write_files"),
})
