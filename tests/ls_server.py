"""A real Label Studio server for tests: start, authenticate, call the REST API, stop.

The server is the ``label-studio`` executable named by ``PLANNER_LABEL_STUDIO``
(installed in its own virtual environment; ``.ci/run`` installs 1.23.2). It
runs on a free loopback port with a throw-away data directory and a
pre-created admin user; annotator users and their Personal Access Tokens are
created with Django in the server's own environment (``LSAPIToken.for_user``,
the object the UI's "Account & Settings → Personal Access Token" creates).
API calls exchange a PAT at ``/api/token/refresh/`` for a short-lived access
token and send ``Authorization: Bearer …`` (legacy ``Token`` auth is off by
default in 1.23).

Without ``PLANNER_LABEL_STUDIO`` the :func:`label_studio` fixture skips, unless
``CI`` is set: then it fails, so CI cannot silently drop the round trip.
``PLANNER_LS_DATA_DIR`` (optional) keeps the data directory between local runs:
the first start applies ~200 Django migrations (about 3 minutes on a busy
2-core machine), later starts reuse them.

Only the standard library is used on the test side (``urllib``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ADMIN = "admin@example.com"
PASSWORD = "planner-test-password"
START_TIMEOUT = float(os.environ.get("PLANNER_LS_START_TIMEOUT", "900"))  # seconds; migrations dominate
HTTP_TIMEOUT = 60.0

# Run in the server's Python: create users (idempotent) and a PAT for each.
_TOKENS_SCRIPT = r"""
import json, os, pathlib, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "label_studio.core.settings.label_studio")
import label_studio
sys.path.insert(0, str(pathlib.Path(label_studio.__file__).parent))
import django
django.setup()
from jwt_auth.models import LSAPIToken
from users.models import User
admin = User.objects.get(email=sys.argv[1])
org = admin.active_organization
out = {}
for email in sys.argv[1:]:
    user = User.objects.filter(email=email).first()
    if user is None:
        user = User.objects.create_user(email=email, username=email.split("@")[0], password=None)
        user.active_organization = org
        user.save()
        org.add_user(user)
    out[email] = {"id": user.id, "username": user.username, "token": LSAPIToken.for_user(user).get_full_jwt()}
print("TOKENS " + json.dumps(out))
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_python(exe: Path) -> str:
    """The interpreter of the label-studio script (its venv's python, else its shebang)."""
    sibling = exe.parent / "python"
    if sibling.exists():
        return str(sibling)
    first = exe.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    if first.startswith("#!"):
        return first[2:].strip().split()[0]
    raise RuntimeError(f"{exe}: cannot find the Python that runs it")


def _server_env(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE") and not k.startswith("LABEL_STUDIO_")}
    env.update({"LABEL_STUDIO_USERNAME": ADMIN, "LABEL_STUDIO_PASSWORD": PASSWORD,
                "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true", "COLLECT_ANALYTICS": "false",
                "LATEST_VERSION_CHECK": "false",  # no call to pypi.org at start
                "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir)})
    return env


@dataclass
class LabelStudio:
    """A running server: ``url``, users ``{email: {"id", "username", "token"}}``."""

    url: str
    proc: subprocess.Popen
    data_dir: Path
    log: Path
    users: dict = field(default_factory=dict)
    start_seconds: float = 0.0
    _access: dict = field(default_factory=dict)

    # ------------------------------------------------------------ lifecycle
    def stop(self) -> None:
        """Terminate the server's whole process group (runserver forks), then kill it if it lingers."""
        if self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------------ API
    def access_token(self, user: str, fresh: bool = False) -> str:
        if fresh or user not in self._access:
            got = self._http("POST", "/api/token/refresh/", {"refresh": self.users[user]["token"]}, None)
            self._access[user] = json.loads(got)["access"]
        return self._access[user]

    def api(self, method: str, path: str, body=None, *, user: str = ADMIN, raw: bool = False):
        """Call the API as ``user``; JSON in, JSON (or bytes with ``raw``) out. Retries once on 401."""
        for attempt in (0, 1):
            token = self.access_token(user, fresh=attempt == 1)
            try:
                data = self._http(method, path, body, token)
                break
            except urllib.error.HTTPError as exc:
                if exc.code != 401 or attempt:
                    raise AssertionError(f"{method} {path} -> HTTP {exc.code}: "
                                         f"{exc.read()[:500].decode('utf-8', 'replace')}") from None
        if raw:
            return data
        return json.loads(data) if data else None

    def _http(self, method: str, path: str, body, token: str | None) -> bytes:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:
            return resp.read()


def _wait_ready(ls: LabelStudio, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if ls.proc.poll() is not None:
            raise RuntimeError(f"label-studio exited with {ls.proc.returncode} while starting:\n{ls.log_tail()}")
        try:
            with urllib.request.urlopen(ls.url + "/api/version", timeout=5) as resp:
                if resp.status == 200 and json.loads(resp.read()).get("release"):
                    return
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"label-studio did not answer /api/version within {timeout:.0f} s:\n{ls.log_tail()}")
        time.sleep(1.0)


def start(exe, workdir, annotators=(), *, data_dir=None, timeout: float = START_TIMEOUT) -> LabelStudio:
    """Start ``exe`` on a free loopback port; create ``annotators`` (emails) and PATs. Stops it on failure."""
    exe, workdir = Path(exe), Path(workdir)
    data_dir = Path(data_dir) if data_dir else workdir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = workdir / "label-studio.log"
    env = _server_env(data_dir)
    t0 = time.monotonic()
    with open(log, "ab") as fh:
        proc = subprocess.Popen([str(exe), "start", "--no-browser", "--host", "127.0.0.1", "--port", str(port),
                                 "--data-dir", str(data_dir), "--internal-host", "127.0.0.1"],
                                stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                cwd=workdir, start_new_session=True)
    ls = LabelStudio(f"http://127.0.0.1:{port}", proc, data_dir, log)
    try:
        _wait_ready(ls, timeout)
        ls.start_seconds = time.monotonic() - t0
        done = subprocess.run([_server_python(exe), "-c", _TOKENS_SCRIPT, ADMIN, *annotators], check=False,
                              env=env, cwd=workdir,
                              capture_output=True, text=True, timeout=300)
        lines = [x for x in done.stdout.splitlines() if x.startswith("TOKENS ")]
        if done.returncode or not lines:
            raise RuntimeError(f"creating users/tokens failed ({done.returncode}):\n{done.stderr[-2000:]}")
        ls.users = json.loads(lines[-1][len("TOKENS "):])
        ls.api("GET", "/api/current-user/whoami")  # the PAT works
    except BaseException:
        ls.stop()
        raise
    return ls


ANNOTATORS = ("alice@example.com", "bob@example.com")


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory, request):
    """A real Label Studio 1.23 with users ``admin``, ``alice`` and ``bob`` (``@example.com``)."""
    exe = os.environ.get("PLANNER_LABEL_STUDIO")
    if not exe:
        if os.environ.get("CI"):
            pytest.fail("CI is set but PLANNER_LABEL_STUDIO is not: .ci/run must install Label Studio and export "
                        "PLANNER_LABEL_STUDIO=<venv>/bin/label-studio")
        pytest.skip("PLANNER_LABEL_STUDIO (path of a label-studio executable) is not set")
    if not Path(exe).is_file():
        pytest.fail(f"PLANNER_LABEL_STUDIO ({exe}) is not a file")
    ls = start(exe, tmp_path_factory.mktemp("label-studio"), ANNOTATORS, data_dir=os.environ.get("PLANNER_LS_DATA_DIR"))
    try:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        capman = request.config.pluginmanager.getplugin("capturemanager")
        if reporter is not None and capman is not None:
            with capman.global_and_fixture_disabled():
                reporter.write_line(f"label-studio at {ls.url}: answered /api/version after {ls.start_seconds:.0f} s")
        yield ls
    finally:
        ls.stop()
