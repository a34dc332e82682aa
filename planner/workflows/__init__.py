"""planner.workflows: see docs/architecture.md."""
