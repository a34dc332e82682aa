"""Real operating-system faults for output tests: a full disk (ENOSPC) and a directory we may not write (EACCES).

* :func:`full_disk` — a command prefix that runs the command with a directory
  turned into a full tmpfs, in a private mount namespace (``unshare -m`` as
  root, ``unshare -rm`` in an unprivileged user namespace otherwise), so nothing
  is mounted outside the command and the host is never filled. ``None`` when
  neither works here (the test skips).
* :func:`no_write` — a command prefix under which a ``chmod 555`` directory
  refuses writes: as root, the capabilities that bypass file permissions
  (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``) are dropped with ``setpriv``;
  as any other user nothing is needed.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TMPFS_BYTES = 64 * 1024

_MOUNT = ('D=$1; shift; mount -t tmpfs -o size={size} tmpfs "$D" && (cat /dev/zero > "$D/.fill" 2>/dev/null; true) '
          '&& exec "$@"')


@functools.cache
def _unshare_flags() -> tuple[str, ...] | None:
    if shutil.which("unshare") is None:
        return None
    for flags in (("-m",), ("-r", "-m")):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run(["unshare", *flags, "sh", "-c", _MOUNT.format(size=TMPFS_BYTES), "sh", d,
                                "dd", "if=/dev/zero", f"of={d}/probe", "bs=1024", "count=8"], capture_output=True)
            if r.returncode != 0 and b"No space left" in r.stderr:
                return flags
    return None


def full_disk(directory: Path, study: Path | None = None) -> list[str] | None:
    """Prefix: run the command with ``directory`` (created if missing) a full tmpfs; None if impossible here.

    With ``study``, that study is first copied to ``directory/study`` (then the disk is filled): a study
    on a full disk.
    """
    flags = _unshare_flags()
    if flags is None:
        return None
    Path(directory).mkdir(parents=True, exist_ok=True)
    if study is None:
        return ["unshare", *flags, "sh", "-c", _MOUNT.format(size=TMPFS_BYTES), "sh", str(directory)]
    size = 2 * sum(f.stat().st_size for f in Path(study).rglob("*") if f.is_file()) + (1 << 20)
    script = (f'S=$1; D=$2; shift 2; mount -t tmpfs -o size={size} tmpfs "$D" && cp -r "$S" "$D/study" && '
              '(cat /dev/zero > "$D/.fill" 2>/dev/null; true) && exec "$@"')
    return ["unshare", *flags, "sh", "-c", script, "sh", str(study), str(directory)]


@functools.cache
def no_write() -> list[str] | None:
    """Prefix under which a ``chmod 555`` directory cannot be written in; None if impossible here."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
              "--inh-caps=-dac_override,-dac_read_search"]
    with tempfile.TemporaryDirectory() as d:
        ro = Path(d) / "ro"
        ro.mkdir(mode=0o555)
        r = subprocess.run([*prefix, "sh", "-c", f'echo x > "{ro}/probe"'], capture_output=True)
        ro.chmod(0o755)
        return prefix if r.returncode != 0 else None


def cli(args: list[str], prefix: list[str] | None = None, **kw) -> subprocess.CompletedProcess:
    """``python -m cli ARGS`` from the checkout, under ``prefix``."""
    return subprocess.run([*(prefix or []), sys.executable, "-m", "cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, **kw)


def python(script: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    """A Python script run from the checkout (tests/ on the path), under ``prefix``."""
    path = f"{ROOT}{os.pathsep}{ROOT / 'tests'}"
    return subprocess.run([*(prefix or []), sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": path})
