"""planner.simulation: see docs/architecture.md."""
