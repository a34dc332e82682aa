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

The key is never written to disk, logged, put in an error message or sent to
another host: the key and every access token are registered with
:func:`planner.connectors.guard.redact` (the one redaction rule: also partial
echoes and ``Bearer``/``Token`` values), and a redirect to another origin than
``LABEL_STUDIO_URL``'s is refused (urllib would carry ``Authorization`` along).
Every request has a total deadline (``timeout`` seconds, body included: a body
dribbled byte by byte is cut off). Answers are checked for the types planner
relies on (a project id that is not an integer, a task list of numbers, users
as strings are one-line errors). Errors are one line:
:class:`~planner.errors.UsageError` for configuration (missing/malformed URL,
missing or refused key), :class:`~planner.errors.DataError` for anything the
server refuses or when it cannot be reached.

Tasks are listed **by id** (``GET /api/tasks/`` with the data manager's
``query`` filter ``tasks:id > last`` ordered by id, 100 a page): tasks deleted
between two pages cannot shift others out of the listing as offset paging did,
and a listing is bounded (:data:`MAX_TASKS`; a page that does not advance the
id is an error).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from planner.connectors.guard import Deadline, origin, redact, register, within
from planner.errors import DataError, UsageError, quote

URL_ENV = "LABEL_STUDIO_URL"
KEY_ENV = "LABEL_STUDIO_API_KEY"
TIMEOUT_S = 120.0  # one request, body included (an export of 10,000 tasks is ~10 MB)
MAX_TASKS = 1_000_000  # the longest task listing planner follows
REFRESH_MARGIN_S = 30.0  # refresh an access token this long before its ``exp``
PAGE_SIZE = 100
BODY_QUOTE = 80


def normalize_url(url) -> str:
    """``scheme://host[:port][/prefix]`` without a trailing slash; refuses credentials, query and fragment."""
    if not isinstance(url, str) or not url.strip():
        raise UsageError(f"{URL_ENV} is missing; set it to the server's address, e.g. http://localhost:8080",
                         parameters=())
    raw = url.strip()
    try:
        parts = urllib.parse.urlsplit(raw)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        raise UsageError(f"{URL_ENV} is not a URL; expected http(s)://host[:port]", parameters=()) from None
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"{URL_ENV} must not carry credentials (user:password@); put the token in {KEY_ENV}",
                         parameters=())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = raw if "@" not in raw else "(not shown)"
        raise UsageError(f"{URL_ENV} ({quote(shown)}) is not an http(s) URL; expected http(s)://host[:port]",
                         parameters=())
    if parts.query or parts.fragment:
        raise UsageError(f"{URL_ENV} must not have a query or fragment; expected http(s)://host[:port][/prefix]",
                         parameters=())
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


class OffOrigin(urllib.error.URLError):
    """A redirect to another origin than the server's (refused: the credentials would go along)."""

    def __init__(self, target: str):
        super().__init__(target)
        self.target = target


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if origin(newurl) != origin(req.full_url):
            raise OffOrigin(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _opener():
    return urllib.request.build_opener(_SameOriginRedirects()).open


def _int_id(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 63:
        raise DataError(f"{where}: the answer's id is {quote(value)}; expected a whole number")
    return value


def _dict(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise DataError(f"{where}: the answer is {quote(value)}; expected a JSON object")
    return value


class LabelStudioClient:
    """Calls the Label Studio API; JSON in and out. See the module docstring for auth and errors."""

    def __init__(self, url: str, api_key: str, *, timeout: float = TIMEOUT_S,
                 opener: Callable | None = None, clock: Callable[[], float] = time.time):
        self.url = normalize_url(url)
        if not isinstance(api_key, str) or not api_key.strip():
            raise UsageError(f"{KEY_ENV} is missing; create a Personal Access Token in Label Studio "
                             "(Account & Settings) and export it", parameters=())
        self._key = api_key.strip()
        register(self._key)
        self._access: str | None = None
        self._access_exp: float | None = None
        self.timeout = timeout
        self._open = opener or _opener()
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
    def _exchange(self, req) -> bytes:
        with self._open(req, timeout=self.timeout) as resp:
            return resp.read()

    def _send(self, method: str, path: str, body, auth: str | None) -> bytes:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if auth:
            headers["Authorization"] = auth
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        return within(self.timeout, self._exchange, req)

    def _fail(self, method: str, path: str, exc: Exception):
        where = f"Label Studio {method} {path.split('?', maxsplit=1)[0]}"
        if isinstance(exc, OffOrigin):
            scheme, host, port = origin(exc.target)
            return DataError(f"{where}: the server redirected to {scheme}://{host}:{port}, another host; planner "
                             f"does not follow (the {KEY_ENV} credentials would go there)")
        if isinstance(exc, Deadline):
            return DataError(f"{where}: no complete answer within {self.timeout:g} s")
        if isinstance(exc, urllib.error.HTTPError):
            try:
                raw = exc.read()[:2000].decode("utf-8", "replace")
            except Exception:
                raw = ""
            text = " ".join(redact(raw).split())
            detail = f": {quote(text, BODY_QUOTE)}" if text else ""
            if exc.code in (401, 403):
                return UsageError(f"{where}: HTTP {exc.code}: the server refused {KEY_ENV} (expired, revoked or "
                                  f"for another server? Legacy tokens need legacy auth enabled){detail}", parameters=())
            return DataError(f"{where}: HTTP {exc.code}{detail}")
        reason = getattr(exc, "reason", None) or exc
        return DataError(f"{where}: cannot reach {self.url}: {quote(redact(str(reason)), BODY_QUOTE)}")

    def _refresh(self) -> None:
        try:
            got = self._send("POST", "/api/token/refresh/", {"refresh": self._key}, None)
            access = json.loads(got)["access"]
        except urllib.error.HTTPError as exc:
            if exc.code in (400, 401, 403):
                raise UsageError(f"Label Studio at {self.url} refused {KEY_ENV} (HTTP {exc.code} at "
                                 "/api/token/refresh/): not a valid Personal Access Token for this server",
                                 parameters=()) from None
            raise self._fail("POST", "/api/token/refresh/", exc) from None
        except (OSError, ValueError, RecursionError) as exc:
            raise self._fail("POST", "/api/token/refresh/", exc) from None
        except (KeyError, TypeError, IndexError):
            raise DataError(f"Label Studio at {self.url}: /api/token/refresh/ gave no access token") from None
        if not isinstance(access, str) or not access:
            raise DataError(f"Label Studio at {self.url}: /api/token/refresh/ gave no access token")
        register(access)
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
            except (OSError, ValueError, Deadline) as exc:  # URLError, timeouts, resets, off-origin redirects
                raise self._fail(method, path, exc) from None
        if raw:
            return data
        try:
            return json.loads(data) if data else None
        except (ValueError, RecursionError):
            raise DataError(f"Label Studio {method} {path.split('?', maxsplit=1)[0]}: the answer is not JSON "
                            f"({quote(redact(data[:200].decode('utf-8', 'replace')), BODY_QUOTE)})") from None

    def whoami(self) -> dict:
        return self.request("GET", "/api/current-user/whoami")

    def users(self) -> list[dict]:
        """The organisation's users (objects); a DataError when the answer is not a list of them."""
        got = self.request("GET", "/api/users/")
        users = got.get("results") if isinstance(got, dict) else got
        if not isinstance(users, list) or not all(isinstance(u, dict) for u in users):
            raise DataError(f"Label Studio GET /api/users/: the answer is {quote(users)}; expected a list of users")
        return users

    def project(self, pid: int) -> dict | None:
        """The project, or None when the server has no such project (404)."""
        try:
            got = self.request("GET", f"/api/projects/{int(pid)}/")
        except DataError as exc:
            if ": HTTP 404" in exc.message:
                return None
            raise
        return _dict(got, f"Label Studio GET /api/projects/{int(pid)}/")

    def projects(self, max_pages: int = 50) -> list[dict]:
        """The projects this user sees (``GET /api/projects/``, 100 a page, at most ``max_pages`` pages)."""
        out: list[dict] = []
        for page in range(1, max_pages + 1):
            got = self.request("GET", f"/api/projects/?page={page}&page_size={PAGE_SIZE}")
            rows = got.get("results") if isinstance(got, dict) else got
            if not isinstance(rows, list):
                raise DataError(f"Label Studio GET /api/projects/: the answer is {quote(got)}; expected a page of "
                                "projects")
            out.extend(r for r in rows if isinstance(r, dict))
            if len(rows) < PAGE_SIZE or not (isinstance(got, dict) and got.get("next")):
                break
        return out

    def validate_config(self, config: str) -> None:
        self.request("POST", "/api/projects/validate/", {"label_config": config})

    def create_project(self, title: str, config: str, description: str = "") -> int:
        got = self.request("POST", "/api/projects/", {"title": title, "label_config": config,
                                                      "description": description})
        where = "Label Studio POST /api/projects/"
        return _int_id(_dict(got, where).get("id"), where)

    def tasks(self, pid: int) -> list[dict]:
        """Every task of a project, by increasing id (see the module docstring)."""
        out: list[dict] = []
        last = -1
        where = f"Label Studio GET /api/tasks/ (project {int(pid)})"
        while True:
            query = {"filters": {"conjunction": "and", "items": [
                {"filter": "filter:tasks:id", "operator": "greater", "type": "Number", "value": last}]},
                "ordering": ["tasks:id"]}
            got = self.request("GET", f"/api/tasks/?project={int(pid)}&page_size={PAGE_SIZE}&page=1&query="
                               + urllib.parse.quote(json.dumps(query, separators=(",", ":"))))
            batch = got.get("tasks") if isinstance(got, dict) else got
            if not isinstance(batch, list) or not all(isinstance(t, dict) for t in batch):
                raise DataError(f"{where}: the answer is {quote(got)}; expected a list of task objects")
            ids = [_int_id(t.get("id"), where) for t in batch]
            if ids and min(ids) <= last:
                raise DataError(f"{where}: the listing does not advance (task {min(ids)} again after task {last}); "
                                "the server ignores planner's id filter")
            out.extend(batch)
            if len(out) > MAX_TASKS:
                raise DataError(f"{where}: more than {MAX_TASKS:,} tasks; expected a project planner pushed")
            if len(batch) < PAGE_SIZE:
                return out
            last = max(ids)

    def import_tasks(self, pid: int, tasks: list[dict]) -> int:
        if not tasks:
            return 0
        got = self.request("POST", f"/api/projects/{int(pid)}/import", tasks)
        n = got.get("task_count") if isinstance(got, dict) else None
        return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= len(tasks) else len(tasks)

    def snapshot_export(self, pid: int, *, title: str = "planner pull", timeout: float = 300.0,
                        sleep: Callable[[float], None] = time.sleep) -> bytes:
        """Full JSON export through the snapshot API with ``completed_by`` expanded (carries e-mails).

        ``POST /api/projects/{id}/exports/`` with
        ``serialization_options.annotations__completed_by.only_id = false``; waits
        until the snapshot is ``completed``; downloads ``exportType=JSON``; deletes the
        snapshot on the server (best effort).
        """
        where = f"Label Studio POST /api/projects/{int(pid)}/exports/"
        snap = _dict(self.request("POST", f"/api/projects/{int(pid)}/exports/",
                                  {"title": title, "serialization_options":
                                   {"annotations__completed_by": {"only_id": False}}}), where)
        sid = _int_id(snap.get("id"), where)
        deadline = time.monotonic() + timeout
        while snap.get("status") not in ("completed", None):
            if snap.get("status") == "failed":
                raise DataError(f"Label Studio project {pid}: export snapshot {sid} failed on the server")
            if time.monotonic() > deadline:
                raise DataError(f"Label Studio project {pid}: export snapshot {sid} not ready within {timeout:.0f} s")
            sleep(0.5)
            snap = _dict(self.request("GET", f"/api/projects/{int(pid)}/exports/{sid}"), where)
        data = self.request("GET", f"/api/projects/{int(pid)}/exports/{sid}/download?exportType=JSON", raw=True)
        with contextlib.suppress(DataError):  # the snapshot is kept in the study; do not pile them up on the server
            self.request("DELETE", f"/api/projects/{int(pid)}/exports/{sid}")
        return data
