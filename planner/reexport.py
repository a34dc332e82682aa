"""A package's public names, re-exported from its modules and imported on first use.

``planner.stats`` and ``planner.formats`` hold modules with heavy or optional
imports (scipy.special, matplotlib, pyarrow): re-exporting their names eagerly
from ``__init__.py`` would make every ``import planner.stats.clusters`` (which
``planner status`` needs) pay for ``planner.stats.power``. :func:`lazy_reexport`
gives such a package an explicit ``__all__`` and a module ``__getattr__``
(PEP 562) that imports the home module of a name when the name is first read::

    __all__, __getattr__, __dir__ = lazy_reexport(__name__, {"proportions": ("wilson_interval",)})

so ``from planner.stats import wilson_interval`` works like the other packages'
faces, and a command still imports only the modules it uses.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence


def lazy_reexport(package: str, homes: Mapping[str, Sequence[str]]
                  ) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` of ``package``, whose submodule ``homes[m]`` defines the names listed.

    A name listed twice is an error (one home per name), and so is a name that is also a module's: once
    that module is imported, the package's attribute of that name is the module (``planner.stats.significance``).
    """
    home: dict[str, str] = {}
    for module, names in homes.items():
        for name in names:
            if name in home:
                raise ValueError(f"{package}: {name!r} listed under {home[name]!r} and {module!r}")
            if name in homes:
                raise ValueError(f"{package}: {name!r} is a module of the package, not a name to re-export")
            home[name] = module

    def __getattr__(name: str):
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(set(home) | set(vars(sys.modules[package])))

    return sorted(home), __getattr__, __dir__
