"""planner.store: see docs/architecture.md."""
