"""planner: plan, run and analyse pairwise-comparison evaluations of AI systems.

The library is pure computation plus the study store and file adapters. It never
imports typer or rich, and heavy dependencies (pymc, arviz, matplotlib) are
imported lazily inside the functions that need them.
"""

__version__ = "0.1.0"
