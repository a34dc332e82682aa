"""Run the checkout's CLI in a real subprocess (for kill -9, Ctrl-C and concurrency tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: a key shaped like OpenAI's project keys; tests check it never appears anywhere planner writes or prints
KEY = "sk-proj-T3stKeyNeverStored0123456789abcdefXYZ"


def env(**extra: str) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LABEL_STUDIO_"))}
    out.update({"PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY, "NO_COLOR": "1", "COLUMNS": "200"}, **extra)
    return out


def start(*args: str, **extra_env: str) -> subprocess.Popen:
    """``python -m cli ARGS`` in the background, its own process group, output captured."""
    return subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env(**extra_env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def run(*args: str, timeout: float = 120, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env(**extra_env), timeout=timeout,
                          capture_output=True, text=True, check=False)


def wait_until(cond, timeout: float = 60.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def kill9(proc: subprocess.Popen) -> None:
    """SIGKILL, as a crash or an OOM kill does: no handler runs, nothing is flushed."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL


def interrupt(proc: subprocess.Popen, timeout: float = 60) -> tuple[float, str, str]:
    """Ctrl-C (SIGINT) as a terminal sends it; ``(seconds until the process ended, stdout, stderr)``."""
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=timeout)
    return time.monotonic() - t0, out, err
