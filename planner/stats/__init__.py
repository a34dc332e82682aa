"""planner.stats: see docs/architecture.md."""
