"""A small Label Studio REST client on the standard library (``urllib``).

Connection from the environment: ``LABEL_STUDIO_URL`` (``http(s)://host[:port][/prefix]``,
no credentials in it) and ``LABEL_STUDIO_API_KEY``:

* a Personal Access Token (a JWT: two dots) — what Label Studio >= 1.20 issues
  ("Account & Settings → Personal Access Token"). It is exchanged at
  ``POST /api/token/refresh/`` for a short-lived access token sent as
  ``Authorization: Bearer …``; the access token is refreshed shortly before its
  ``exp`` and once more after any 401;
* a legacy token (anything else), sent as ``Authorization: Token …`` (off by
  default in Label Studio 1.23; an administrator can enable it).

The key is never written to disk, logged or put in an error message: every
message built here passes :meth:`LabelStudioClient._scrub`, which replaces the key
and the current access token with ``***``. Errors are one line:
:class:`~planner.errors.UsageError` for configuration (missing/malformed URL,
missing or refused key), :class:`~planner.errors.DataError` for anything the
server refuses or when it cannot be reached.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from planner.errors import DataError, UsageError, quote

URL_ENV = "LABEL_STUDIO_URL"
KEY_ENV = "LABEL_STUDIO_API_KEY"
TIMEOUT_S = 60.0
REFRESH_MARGIN_S = 30.0  # refresh an access token this long before its ``exp``
PAGE_SIZE = 100
BODY_QUOTE = 80


def normalize_url(url) -> str:
    """``scheme://host[:port][/prefix]`` without a trailing slash; refuses credentials, query and fragment."""
    if not isinstance(url, str) or not url.strip():
        raise UsageError(f"{URL_ENV} is missing; set it to the server's address, e.g. http://localhost:8080")
    raw = url.strip()
    try:
        parts = urllib.parse.urlsplit(raw)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        raise UsageError(f"{URL_ENV} is not a URL; expected http(s)://host[:port]") from None
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"{URL_ENV} must not carry credentials (user:password@); put the token in {KEY_ENV}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = raw if "@" not in raw else "(not shown)"
        raise UsageError(f"{URL_ENV} ({quote(shown)}) is not an http(s) URL; expected http(s)://host[:port]")
    if parts.query or parts.fragment:
        raise UsageError(f"{URL_ENV} must not have a query or fragment; expected http(s)://host[:port][/prefix]")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def is_jwt(key: str) -> bool:
    """A Personal Access Token is a JWT (``header.payload.signature``); legacy tokens are hex."""
    return key.count(".") == 2


def jwt_exp(token: str) -> float | None:
    """The ``exp`` claim of a JWT (seconds since the epoch) without checking its signature, or None."""
    try:
        payload = token.split(".")[1]
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = data.get("exp")
        return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None
    except (IndexError, ValueError, TypeError, AttributeError):
        return None


class LabelStudioClient:
    """Calls the Label Studio API; JSON in and out. See the module docstring for auth and errors."""

    def __init__(self, url: str, api_key: str, *, timeout: float = TIMEOUT_S,
                 opener: Callable | None = None, clock: Callable[[], float] = time.time):
        self.url = normalize_url(url)
        if not isinstance(api_key, str) or not api_key.strip():
            raise UsageError(f"{KEY_ENV} is missing; create a Personal Access Token in Label Studio "
                             "(Account & Settings) and export it")
        self._key = api_key.strip()
        self._access: str | None = None
        self._access_exp: float | None = None
        self.timeout = timeout
        self._open = opener or urllib.request.urlopen
        self._clock = clock

    @classmethod
    def from_env(cls, env=None, **kw) -> LabelStudioClient:
        env = os.environ if env is None else env
        return cls(env.get(URL_ENV), env.get(KEY_ENV), **kw)

    @property
    def personal_token(self) -> bool:
        return is_jwt(self._key)

    def __repr__(self) -> str:  # never the key
        return f"LabelStudioClient({self.url!r})"

    # -------------------------------------------------------------- internals
    def _scrub(self, text: str) -> str:
        for secret in (self._key, self._access):
            if secret:
                text = text.replace(secret, "***")
        return text

    def _send(self, method: str, path: str, body, auth: str | None) -> bytes:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if auth:
            headers["Authorization"] = auth
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        with self._open(req, timeout=self.timeout) as resp:
            return resp.read()

    def _fail(self, method: str, path: str, exc: Exception):
        where = f"Label Studio {method} {path.split('?')[0]}"
        if isinstance(exc, urllib.error.HTTPError):
            try:
                raw = exc.read()[:2000].decode("utf-8", "replace")
            except Exception:  # noqa: BLE001  (the body is only decoration)
                raw = ""
            text = " ".join(self._scrub(raw).split())
            detail = f": {quote(text, BODY_QUOTE)}" if text else ""
            if exc.code in (401, 403):
                return UsageError(f"{where}: HTTP {exc.code}: the server refused {KEY_ENV} (expired, revoked or "
                                  f"for another server? Legacy tokens need legacy auth enabled){detail}")
            return DataError(f"{where}: HTTP {exc.code}{detail}")
        reason = getattr(exc, "reason", None) or exc
        return DataError(f"{where}: cannot reach {self.url}: {quote(self._scrub(str(reason)), BODY_QUOTE)}")

    def _refresh(self) -> None:
        try:
            got = self._send("POST", "/api/token/refresh/", {"refresh": self._key}, None)
            access = json.loads(got)["access"]
        except urllib.error.HTTPError as exc:
            if exc.code in (400, 401, 403):
                raise UsageError(f"Label Studio at {self.url} refused {KEY_ENV} (HTTP {exc.code} at "
                                 "/api/token/refresh/): not a valid Personal Access Token for this server") from None
            raise self._fail("POST", "/api/token/refresh/", exc) from None
        except (OSError, ValueError) as exc:
            raise self._fail("POST", "/api/token/refresh/", exc) from None
        except (KeyError, TypeError):
            raise DataError(f"Label Studio at {self.url}: /api/token/refresh/ gave no access token") from None
        if not isinstance(access, str) or not access:
            raise DataError(f"Label Studio at {self.url}: /api/token/refresh/ gave no access token")
        self._access, self._access_exp = access, jwt_exp(access)

    def _auth(self, fresh: bool) -> str:
        if not self.personal_token:
            return f"Token {self._key}"
        stale = self._access_exp is not None and self._clock() > self._access_exp - REFRESH_MARGIN_S
        if fresh or self._access is None or stale:
            self._refresh()
        return f"Bearer {self._access}"

    # -------------------------------------------------------------- the API
    def request(self, method: str, path: str, body=None, *, raw: bool = False):
        """Call ``path`` (``/api/...``); JSON (or bytes with ``raw``) out. A 401 refreshes the token once."""
        for attempt in (0, 1):
            auth = self._auth(fresh=attempt == 1)
            try:
                data = self._send(method, path, body, auth)
                break
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and attempt == 0 and self.personal_token:
                    continue
                raise self._fail(method, path, exc) from None
            except (OSError, ValueError) as exc:  # URLError, timeouts, connection resets
                raise self._fail(method, path, exc) from None
        if raw:
            return data
        try:
            return json.loads(data) if data else None
        except ValueError:
            raise DataError(f"Label Studio {method} {path.split('?')[0]}: the answer is not JSON "
                            f"({quote(data[:200].decode('utf-8', 'replace'), BODY_QUOTE)})") from None

    def whoami(self) -> dict:
        return self.request("GET", "/api/current-user/whoami")

    def users(self) -> list[dict]:
        got = self.request("GET", "/api/users/")
        return got.get("results", []) if isinstance(got, dict) else list(got or [])

    def project(self, pid: int) -> dict | None:
        """The project, or None when the server has no such project (404)."""
        try:
            return self.request("GET", f"/api/projects/{int(pid)}/")
        except DataError as exc:
            if ": HTTP 404" in exc.message:
                return None
            raise

    def validate_config(self, config: str) -> None:
        self.request("POST", "/api/projects/validate/", {"label_config": config})

    def create_project(self, title: str, config: str, description: str = "") -> int:
        got = self.request("POST", "/api/projects/", {"title": title, "label_config": config,
                                                      "description": description})
        return int(got["id"])

    def tasks(self, pid: int) -> list[dict]:
        """Every task of a project (paged through ``GET /api/tasks/``)."""
        out: list[dict] = []
        page = 1
        while True:
            got = self.request("GET", f"/api/tasks/?project={int(pid)}&page_size={PAGE_SIZE}&page={page}")
            batch = got.get("tasks", []) if isinstance(got, dict) else list(got or [])
            out.extend(batch)
            total = got.get("total") if isinstance(got, dict) else None
            if not batch or len(batch) < PAGE_SIZE or (isinstance(total, int) and len(out) >= total):
                return out
            page += 1

    def import_tasks(self, pid: int, tasks: list[dict]) -> int:
        if not tasks:
            return 0
        got = self.request("POST", f"/api/projects/{int(pid)}/import", tasks)
        return int(got.get("task_count", len(tasks))) if isinstance(got, dict) else len(tasks)

    def snapshot_export(self, pid: int, *, title: str = "planner pull", timeout: float = 300.0,
                        sleep: Callable[[float], None] = time.sleep) -> bytes:
        """Full JSON export through the snapshot API with ``completed_by`` expanded (carries e-mails).

        ``POST /api/projects/{id}/exports/`` with
        ``serialization_options.annotations__completed_by.only_id = false``; waits
        until the snapshot is ``completed``; downloads ``exportType=JSON``; deletes the
        snapshot on the server (best effort).
        """
        snap = self.request("POST", f"/api/projects/{int(pid)}/exports/",
                            {"title": title, "serialization_options":
                             {"annotations__completed_by": {"only_id": False}}})
        sid = int(snap["id"])
        deadline = time.monotonic() + timeout
        while snap.get("status") not in ("completed", None):
            if snap.get("status") == "failed":
                raise DataError(f"Label Studio project {pid}: export snapshot {sid} failed on the server")
            if time.monotonic() > deadline:
                raise DataError(f"Label Studio project {pid}: export snapshot {sid} not ready within {timeout:.0f} s")
            sleep(0.5)
            snap = self.request("GET", f"/api/projects/{int(pid)}/exports/{sid}")
        data = self.request("GET", f"/api/projects/{int(pid)}/exports/{sid}/download?exportType=JSON", raw=True)
        try:  # the snapshot is kept in the study; do not pile them up on the server
            self.request("DELETE", f"/api/projects/{int(pid)}/exports/{sid}")
        except DataError:
            pass
        return data
