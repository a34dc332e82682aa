"""Entry point: registers every command module on the Typer app.

Command modules import only typer and the standard library at module level;
library modules (and through them numpy/scipy/pymc) are imported inside the
command functions, so ``planner --help`` stays fast and never imports pymc.
"""

# Order here is the order in `planner --help`.
from . import (
    allocate,  # noqa: F401
    decide,  # noqa: F401
    demo,  # noqa: F401
    example,  # noqa: F401
    export,  # noqa: F401
    judge,  # noqa: F401
    judge_server,  # noqa: F401
    labelstudio,  # noqa: F401  (push, pull)
    lifecycle,  # noqa: F401  (void, retract)
    next_batch,  # noqa: F401
    plan,  # noqa: F401
    report,  # noqa: F401
    run,  # noqa: F401
    simulate,  # noqa: F401
    size,  # noqa: F401  (size, significance)
    study,  # noqa: F401  (init, ingest, status)
)
from .app import app


def main() -> None:
    app()


if __name__ == "__main__":
    main()
