"""planner.hybrid.ppi: see docs/architecture.md."""
