"""Entry point: registers every command module on the Typer app.

Command modules import only typer and the standard library at module level;
library modules (and through them numpy/scipy/pymc) are imported inside the
command functions, so ``planner --help`` stays fast and never imports pymc.
"""

from .app import app

# Order here is the order in `planner --help`.
from . import size  # noqa: F401,E402  (size, significance)
from . import allocate  # noqa: F401,E402
from . import study  # noqa: F401,E402  (init, ingest, status)
from . import lifecycle  # noqa: F401,E402  (void, retract)
from . import export  # noqa: F401,E402
from . import next_batch  # noqa: F401,E402
from . import report  # noqa: F401,E402
from . import decide  # noqa: F401,E402
from . import simulate  # noqa: F401,E402
from . import plan  # noqa: F401,E402
from . import demo  # noqa: F401,E402
from . import example  # noqa: F401,E402
from . import judge  # noqa: F401,E402
from . import judge_server  # noqa: F401,E402
from . import run  # noqa: F401,E402
from . import labelstudio  # noqa: F401,E402  (push, pull)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
