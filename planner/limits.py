"""The documented maxima of every option that sets an amount of work, and their checks.

One place for the limits (``docs/guide.md``, section "Limits", lists them and
each ``--help`` text names its own). A value above its maximum is refused with a
:class:`~planner.errors.UsageError` naming the option, the value (quoted with
:func:`planner.errors.quote`, so an integer of hundreds of digits stays one short
line) and the allowed range, before any work is done.

The maxima are chosen so that every command finishes in about a minute or less
on a laptop and never needs more than a few hundred MB of memory:

* ``size``: exact binomial power is computed for every n up to ~1.6 times the
  normal-approximation n, and the minimum detectable effect solves for the
  effect at the budget's n; both cost O(n) per evaluation. ``MAX_EXACT_N``
  comparisons per pair keeps ``size`` under ~15 s. Group-sequential designs
  integrate the boundary crossing recursively, O(looks) grid convolutions:
  ``MAX_LOOKS`` looks take ~8 s.
* ``report`` / ``decide``: posterior draws are held in memory (draws x
  systems, and NUTS traces per chain).
* ``simulate``: every (strategy, repetition) refits the model after each batch.

This module also checks output paths before any work (:func:`check_output_file`,
:func:`check_output_dir`): a directory where a file is expected, a missing or
read-only parent, a path under a file.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from planner.errors import UsageError, parameters_of, quote, shown

# ------------------------------------------------------------------ maxima
MAX_SEED = 2 ** 63 - 1            # seeds are stored in SQLite (signed 64-bit) and fed to numpy
MIN_ALPHA_PER_PAIR = 1e-12        # size: below this 1 - alpha rounds in the binomial quantiles
MAX_LOOKS = 20                    # size/significance/decide --looks
MAX_EXACT_N = 250_000             # size: comparisons per pair the exact binomial search may reach
MAX_JUDGMENTS = 10_000_000        # size --budget/--power-at (total judgments)
MAX_COUNT = 10 ** 12              # significance --wins/--losses/--ties
MAX_SYSTEMS = 1_000               # size --systems
MAX_PER_PROMPT = 100_000          # size --per-prompt
MAX_PROMPT_BUDGET = 1_000_000     # allocate --budget (prompts chosen, with replacement)
MAX_DRAWS = 100_000               # report --draws (posterior draws; per chain for nuts)
MAX_TUNE = 100_000                # report --tune
MAX_CHAINS = 16                   # report --chains
MAX_SIM_SYSTEMS = 200             # simulate --systems
MAX_SIM_BUDGET = 1_000_000        # simulate --budget (comparisons per run)
MAX_SIM_REPS = 10_000             # simulate --reps
MAX_WORKERS = 64                  # simulate --workers
MAX_SPREAD = 5_000.0              # simulate --spread (Elo from best to worst)
MAX_POSITION = 10.0               # simulate --position (|logit shift|)
MAX_ARENA_GAMMA = 100.0           # simulate --arena-gamma
MAX_DEMO_PROMPTS = 10_000         # demo --prompts
MAX_DEMO_ROUNDS = 100             # demo --rounds
MAX_DEMO_SIZE = 10_000            # demo --size
MAX_BATCH_SIZE = 100_000          # next-batch --size, run --batch-size (planned comparisons per batch)
#: the largest token count believed for one judge answer (context windows are ~10**6-10**7 tokens); a
#: server's count outside [0, MAX_TOKENS] is treated as absent (the cost is then the estimate)
MAX_TOKENS = 10 ** 9

#: (name, maximum, what) for the documentation table (docs/guide.md "Limits").
TABLE = (
    ("size --looks, significance --looks, decide --looks", MAX_LOOKS, "planned analyses"),
    ("size (any effect, alpha, power)", MAX_EXACT_N, "comparisons per pair the exact search reaches"),
    ("size --alpha / pairs (per-pair level, a minimum)", MIN_ALPHA_PER_PAIR, "level"),
    ("size --budget, --power-at", MAX_JUDGMENTS, "judgments"),
    ("size --systems", MAX_SYSTEMS, "systems"),
    ("size --per-prompt", MAX_PER_PROMPT, "judgments per prompt"),
    ("significance --wins, --losses, --ties", MAX_COUNT, "judgments"),
    ("allocate --budget", MAX_PROMPT_BUDGET, "prompts"),
    ("report --draws", MAX_DRAWS, "draws (per chain for nuts)"),
    ("report --tune", MAX_TUNE, "tuning steps per chain"),
    ("report --chains", MAX_CHAINS, "chains"),
    ("simulate --systems", MAX_SIM_SYSTEMS, "systems"),
    ("simulate --budget", MAX_SIM_BUDGET, "comparisons per run"),
    ("simulate --reps", MAX_SIM_REPS, "repetitions"),
    ("simulate --workers", MAX_WORKERS, "processes"),
    ("simulate --spread", MAX_SPREAD, "Elo"),
    ("simulate --position", MAX_POSITION, "logit (absolute value)"),
    ("demo --prompts / --rounds / --size", (MAX_DEMO_PROMPTS, MAX_DEMO_ROUNDS, MAX_DEMO_SIZE), ""),
    ("next-batch --size, run --batch-size", MAX_BATCH_SIZE, "planned comparisons per batch"),
    ("--seed (every command)", MAX_SEED, "0 <= seed <= 2**63 - 1"),
)


# ------------------------------------------------------------------ checks
def _is_int(value) -> bool:
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(name: str, value, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]`` or a :class:`UsageError` naming ``name``."""
    if not _is_int(value):
        rng = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high:,}]"
        raise UsageError(f"{shown(name)} ({quote(value)}) must be {rng}", parameters=parameters_of(name))
    if value < low:
        raise UsageError(f"{shown(name)} ({quote(value)}) must be an integer >= {low}"
                         + (f" (and <= {high:,})" if high is not None else ""), parameters=parameters_of(name))
    if high is not None and value > high:
        raise UsageError(f"{shown(name)} ({quote(value)}) must be an integer <= {high:,} "
                         f"(planner's documented maximum; docs/guide.md, Limits)", parameters=parameters_of(name))
    return int(value)


def check_optional_int(name: str, value, low: int, high: int | None = None) -> int | None:
    return None if value is None else check_int(name, value, low, high)


def check_seed(name: str, value) -> int | None:
    """A seed: None (the default) or an integer in ``[0, MAX_SEED]``."""
    if value is None:
        return None
    if not (_is_int(value) and 0 <= value <= MAX_SEED):
        raise UsageError(f"{shown(name)} ({quote(value)}) must be an integer in [0, 2**63 - 1]",
                         parameters=parameters_of(name))
    return int(value)


def plausible_tokens(value) -> int | None:
    """A token count reported by a server, or None when it is not a whole number in ``[0, MAX_TOKENS]``
    (a negative count, 10**30, a string): such a count is treated as absent, never stored or summed."""
    return value if _is_int(value) and 0 <= value <= MAX_TOKENS else None


def _fmt(x: float) -> str:
    return f"{x:g}"


def check_float(name: str, value, low: float, high: float, *, low_open: bool = False,
                high_open: bool = False, unit: str = "") -> float:
    """A finite number in the interval (inf and NaN are refused by name; so are ``True`` and ``False``);
    ``unit`` names what it counts in the message (``"seconds"``: "a finite number of seconds > 0")."""
    try:
        if isinstance(value, bool):
            raise TypeError("a bool is not a number here")
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{shown(name)} ({quote(value)}) must be a finite number{' of ' + unit if unit else ''}",
                         parameters=parameters_of(name)) from None
    ok = math.isfinite(x) and (x > low if low_open else x >= low) and (x < high if high_open else x <= high)
    if not ok:
        lb, rb = "(" if low_open else "[", ")" if high_open else "]"
        where = (f"{'>' if low_open else '>='} {_fmt(low)}" if high == math.inf
                 else f"in {lb}{_fmt(low)}, {_fmt(high)}{rb}")
        what = f"a finite number{' of ' + unit if unit else ''}"
        raise UsageError(f"{shown(name)} ({quote(value)}) must be {what} {where}",
                         parameters=parameters_of(name))
    return x


def check_optional_float(name: str, value, low: float, high: float, **kw) -> float | None:
    """None, or :func:`check_float`."""
    return None if value is None else check_float(name, value, low, high, **kw)


def check_choice(name: str, value, choices) -> str:
    """``value`` when it is one of ``choices`` (strings), else a :class:`UsageError` listing them in order."""
    if not isinstance(value, str) or value not in choices:
        raise UsageError(f"{shown(name)} ({quote(value)}) must be one of {', '.join(choices)}",
                         parameters=parameters_of(name))
    return value


def check_flag(name: str, value) -> bool:
    """``value`` when it is a bool (``True``/``False``, not 1 or "yes"), else a :class:`UsageError`."""
    if not isinstance(value, bool):
        raise UsageError(f"{shown(name)} ({quote(value)}) must be true or false", parameters=parameters_of(name))
    return value


def check_exact_n(name: str, value, n_normal: float) -> None:
    """Refuse a sample-size question whose answer lies beyond :data:`MAX_EXACT_N` per pair."""
    if not (n_normal <= MAX_EXACT_N):  # also NaN/inf
        about = "an unbounded number of" if not math.isfinite(n_normal) else f"about {n_normal:,.0f}"
        raise UsageError(f"{shown(name)} ({quote(value)}) needs {about} comparisons per pair; planner computes "
                         f"exact sizes up to {MAX_EXACT_N:,} per pair (a larger effect, `alpha` or smaller "
                         f"`power` needs fewer)", parameters=parameters_of(name))


# ------------------------------------------------------------------ output paths
def _probe_dir(name: str, path: Path, directory: Path) -> None:
    """``directory`` (existing) must be a directory we can create files in."""
    if not directory.is_dir():
        raise UsageError(f"{shown(name)} ({quote(str(path))}) cannot be written: {quote(str(directory))} is not "
                         f"a directory",
                         parameters=parameters_of(name))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".planner-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise UsageError(f"{shown(name)} ({quote(str(path))}) cannot be written: "
                         f"{exc.strerror or exc} in {quote(str(directory))}", parameters=parameters_of(name)) from None


def _existing_parent(path: Path) -> Path:
    p = path.absolute().parent
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output_file(name: str, path, *, create_parents: bool = False,
                      suffixes: tuple[str, ...] = ()) -> Path | None:
    """An output file we will be able to write: not a directory, under a writable directory.

    With ``create_parents`` the nearest existing ancestor must be writable (the
    writer creates the missing directories); otherwise the parent must exist.
    Nothing is created or changed. ``None`` passes through.
    """
    if path is None:
        return None
    path = Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise UsageError(f"{shown(name)} ({quote(str(path))}) must end in {' or '.join(suffixes)}",
                         parameters=parameters_of(name))
    if path.is_dir():
        raise UsageError(f"{shown(name)} ({quote(str(path))}) is a directory; expected a file name",
                         parameters=parameters_of(name))
    if path.exists():
        if not os.access(path, os.W_OK):
            raise UsageError(f"{shown(name)} ({quote(str(path))}) cannot be written: permission denied",
                             parameters=parameters_of(name))
        _probe_dir(name, path, path.absolute().parent)
        return path
    parent = path.absolute().parent
    if not parent.exists() and not create_parents:
        raise UsageError(f"{shown(name)} ({quote(str(path))}) cannot be written: "
                         f"the directory {quote(str(path.parent))} does not exist", parameters=parameters_of(name))
    _probe_dir(name, path, parent if parent.exists() else _existing_parent(path))
    return path


def check_output_dir(name: str, path) -> Path | None:
    """An output directory: an existing writable directory, or creatable under one."""
    if path is None:
        return None
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{shown(name)} ({quote(str(path))}) is not a directory; expected a directory for "
                             f"the files",
                             parameters=parameters_of(name))
        _probe_dir(name, path, path)
        return path
    _probe_dir(name, path, _existing_parent(path))
    return path


# ------------------------------------------------------------------ per-command option checks
def check_report_options(*, seed, draws, tune, chains) -> None:
    """``report``: seed and the posterior sample sizes (memory grows with draws x systems x chains)."""
    check_seed("seed", seed)
    check_int("draws", draws, 1, MAX_DRAWS)
    check_int("tune", tune, 0, MAX_TUNE)
    check_int("chains", chains, 1, MAX_CHAINS)


def check_allocate_options(*, budget, seed, min_per_stratum=0, gap=None) -> None:
    """``allocate``: budget, seed, --min-per-stratum and --gap."""
    check_int("budget", budget, 1, MAX_PROMPT_BUDGET)
    check_seed("seed", seed)
    check_int("min_per_stratum", min_per_stratum, 0, MAX_PROMPT_BUDGET)
    if gap is not None:
        check_float("gap", gap, 0, math.inf, high_open=True)


def check_simulation_options(*, n_systems, spread, arena_gamma, tie_rate, position, flip, budget, batch, reps,
                             seed, workers, anchor=0) -> None:
    """``simulate``: every synthetic-judge and run-size option, named as on the command line.

    ``n_systems`` is None when the truth comes from a study or a replay (then
    --systems is ignored and --anchor is checked against the truth later).
    """
    if n_systems is not None:
        check_int("systems", n_systems, 2, MAX_SIM_SYSTEMS)
    check_float("spread", spread, 0, MAX_SPREAD)
    check_float("arena_gamma", arena_gamma, 0, MAX_ARENA_GAMMA, low_open=True)
    check_float("tie_rate", tie_rate, 0, 1, high_open=True)
    check_float("position", position, -MAX_POSITION, MAX_POSITION)
    check_float("flip", flip, 0, 0.5, high_open=True)
    check_int("budget", budget, 1, MAX_SIM_BUDGET)
    check_int("batch", batch, 1, budget)
    check_int("reps", reps, 1, MAX_SIM_REPS)
    check_seed("seed", seed)
    if workers is not None:
        check_int("workers", workers, 1, MAX_WORKERS)
    check_int("anchor", anchor, 0, None if n_systems is None else n_systems - 1)


# ------------------------------------------------------------------ input files
def check_input_file(name: str, path):
    """An input file named by an option must exist and be a readable regular file (UsageError, exit 2,
    like ``allocate``'s "--prompts (PATH): no such file")."""
    if path is None:
        return None
    p = Path(path)
    path_text = str(p) if len(str(p)) <= 200 and str(p).isprintable() else quote(str(p))
    if not p.exists():
        raise UsageError(f"{shown(name)} ({path_text}): no such file", parameters=parameters_of(name))
    if p.is_dir():
        raise UsageError(f"{shown(name)} ({path_text}) is a directory; expected a file", parameters=parameters_of(name))
    if not os.access(p, os.R_OK):
        raise UsageError(f"{shown(name)} ({path_text}) cannot be read: permission denied",
                         parameters=parameters_of(name))
    return p
