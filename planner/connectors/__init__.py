"""Connectors: move batches to and from live tools (optional extras; never imported by the core).

* :mod:`planner.connectors.openai_judge` — any OpenAI-compatible chat-completions
  endpoint, direct (bounded concurrency) or through the Batch API; needs the
  ``openai`` package (``pip install 'planner[judge]'``), imported lazily; a
  request's key in the study's judge cache (the cache and cost ledger are store
  tables: :mod:`planner.store.ledger`);
* :mod:`planner.connectors.pricing` — token prices, cost and the cost-cap estimate.
"""
