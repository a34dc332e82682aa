"""Entry point: registers every command module on the Typer app.

Command modules import only typer and the standard library at module level;
library modules (and through them numpy/scipy/pymc) are imported inside the
command functions, so ``planner --help`` stays fast and never imports pymc.
"""

from .app import app

# Order here is the order in `planner --help`.
from . import size as _size  # noqa: F401,E402  (size, significance)
from . import allocate as _allocate  # noqa: F401,E402
from . import study as _study  # noqa: F401,E402  (init, ingest, status)
from . import lifecycle as _lifecycle  # noqa: F401,E402  (void, retract)
from . import export as _export  # noqa: F401,E402
from . import next_batch as _next_batch  # noqa: F401,E402
from . import report as _report  # noqa: F401,E402
from . import decide as _decide  # noqa: F401,E402
from . import simulate as _simulate  # noqa: F401,E402
from . import plan as _plan  # noqa: F401,E402
from . import demo as _demo  # noqa: F401,E402
from . import example as _example  # noqa: F401,E402
from . import judge as _judge  # noqa: F401,E402
from . import judge_server as _judge_server  # noqa: F401,E402
from . import run as _run  # noqa: F401,E402
from . import labelstudio as _labelstudio  # noqa: F401,E402  (push, pull)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
