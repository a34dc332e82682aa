"""planner.services: the steps of the study loop that several commands share, each on one open study.

A service takes an open :class:`planner.store.study.Study` (it never opens one: the workflow that
runs the command does) and returns a frozen, typed result. Workflows call services; services call the
edge (store, formats, connectors) and the core; no service imports a workflow. See docs/architecture.md.
"""
