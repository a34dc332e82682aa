"""Connectors: move batches to and from live tools (optional extras; never imported by the core).

* :mod:`planner.connectors.openai_judge` — any OpenAI-compatible chat-completions
  endpoint, direct (bounded concurrency) or through the Batch API; needs the
  ``openai`` package (``pip install 'planner[judge]'``), imported lazily;
* :mod:`planner.connectors.cache` — the study's judge response cache and cost
  ledger (schema v3 tables ``judge_cache`` and ``judge_jobs``);
* :mod:`planner.connectors.pricing` — token prices, cost and the cost-cap estimate.
"""
