"""A hostile Label Studio on loopback (stdlib HTTP server, threads, free port): the REST routes planner's client
calls, in the shapes of Label Studio 1.23.2 (checked against the real server by tests/test_label_studio_live.py
and tests/test_connector_label_studio.py), with faults injected per route.

Routes: ``POST /api/token/refresh/`` (a Personal Access Token, a JWT, for a short-lived access token),
``GET /api/current-user/whoami``, ``GET /api/users/``, ``GET /api/projects/`` (``page``, ``page_size``;
``{"count", "next", "previous", "results"}``), ``GET /api/projects/{id}/``, ``POST /api/projects/validate/``,
``POST /api/projects/``, ``GET /api/tasks/`` (``project``, ``page``, ``page_size`` and the data manager's
``query`` filter ``filter:tasks:id greater N`` with ``ordering ["tasks:id"]``, as the real server honours
them; offset paging without a filter), ``POST /api/projects/{id}/import``, the snapshot export
(``POST /api/projects/{id}/exports/``, ``GET …/exports/{sid}``, ``GET …/exports/{sid}/download``,
``DELETE …/exports/{sid}``).

Faults: ``server.faults[(METHOD, route)] = [fault, …]`` consumed by successive calls, ``route`` being the
path with ids replaced by ``{id}`` (``("POST", "/api/projects/")``, ``("GET", "/api/tasks/")``,
``("POST", "/api/projects/{id}/import")``, ``("GET", "/api/projects/{id}/exports/{id}/download")``, …):

* ``hang`` — the call takes effect (the project is created, the tasks imported), then no answer comes until
  ``server.release`` is set;
* ``echo400``/``echo401``/``echo500`` — an error whose body repeats the ``Authorization`` header (whole, and
  its first 20 characters);
* ``dribble`` — the answer sent one byte every ``server.dribble_s`` seconds;
* ``id_str`` — a created project whose id is ``"12abc"``; ``ints`` — a task list of numbers;
  ``users_str`` — users as strings; ``always_full`` — the same full page for every request;
  ``fabricate`` — full pages of made-up tasks with ever larger ids, forever;
  ``delete_between`` — after this page is served, two of its tasks are deleted (offset paging then skips
  two later tasks);
* ``echo_export`` — an export whose annotation text holds the credentials.

``server.redirect_to``: every request answers ``302`` to that origin (the same path), as a misconfigured
proxy would. ``server.auth`` records every ``Authorization`` header received.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from http.server import BaseHTTPRequestHandler

from _loopback import LoopbackServer, write_body


def jwt(payload: dict, sig: str = "c2lnbmF0dXJlLXNpZ25hdHVyZQ") -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()  # noqa: E731
    return f"{enc({'alg': 'HS256', 'typ': 'JWT'})}.{enc(payload)}.{sig}"


PAT = jwt({"token_type": "refresh", "exp": 4_000_000_000, "jti": "pat-1"}, "UEFULXNlY3JldC1zaWduYXR1cmUtMTIzNDU2")
ACCESS = jwt({"token_type": "access", "exp": 4_000_000_000, "jti": "acc-1"}, "QUNDRVNTLXNpZ25hdHVyZS05ODc2NTQ")
LEGACY = "0123456789abcdef0123456789abcdef01234567"
USERS = [{"id": 1, "email": "admin@example.com", "username": "admin"},
         {"id": 2, "email": "alice@example.com", "username": "alice"},
         {"id": 3, "email": "bob@example.com", "username": "bob"}]


def _route(path: str) -> str:
    return re.sub(r"/\d+", "/{id}", path)


class FakeLabelStudio(LoopbackServer):
    """``with FakeLabelStudio() as ls: ls.url``; ``ls.projects``, ``ls.tasks`` ({project id: [task]})."""

    def __init__(self, host: str = "127.0.0.1"):
        self.projects: dict[int, dict] = {}
        self.tasks: dict[int, list[dict]] = {}
        self.faults: dict[tuple[str, str], list] = {}
        self.hits: dict[tuple[str, str], int] = {}
        self.auth: list[str] = []
        self.redirect_to = ""
        self.dribble_s = 0.05
        self._next = 100
        super().__init__(host)
        self.url = f"http://{host}:{self.port}"

    def new_id(self) -> int:
        with self.lock:
            self._next += 1
            return self._next

    def fault(self, method: str, route: str):
        with self.lock:
            self.hits[(method, route)] = self.hits.get((method, route), 0) + 1
            got = self.faults.get((method, route))
            return got.pop(0) if got else None

    def items(self, pid: int) -> list[str]:
        return [t["data"]["item_id"] for t in self.tasks.get(pid, [])]

    def annotate(self, item: str, verdict: str, user: dict) -> None:
        for tasks in self.tasks.values():
            for t in tasks:
                if t["data"]["item_id"] == item:
                    to = "response" if "response" in t["data"] else "prompt"
                    result = [{"from_name": "verdict", "to_name": to, "type": "choices",
                               "value": {"choices": [verdict]}}]
                    t["annotations"].append({"id": self.new_id(), "completed_by": user, "result": result,
                                             "was_cancelled": False, "lead_time": 3.0})
                    return
        raise AssertionError(f"no task for {item}")

    # ------------------------------------------------------------ routes
    def task_page(self, pid: int, q: dict, fault) -> dict:
        size = int(q.get("page_size", ["100"])[0])
        tasks = sorted(self.tasks.get(pid, []), key=lambda t: t["id"])
        if fault == "ints":
            return {"total": 3, "tasks": [1, 2, 3]}
        if fault == "always_full":
            return {"total": 10 ** 6, "tasks": [{"id": i, "data": {"item_id": f"x{i}"}} for i in range(1, size + 1)]}
        if fault == "fabricate":
            start = self.new_id() * 1000
            return {"total": 10 ** 9, "tasks": [{"id": start + i, "data": {"item_id": f"made-up-{start + i}"}}
                                                for i in range(size)]}
        if "query" in q:
            after = json.loads(q["query"][0])["filters"]["items"][0]["value"]
            rows = [t for t in tasks if t["id"] > after][:size]
            total = sum(t["id"] > after for t in tasks)
        else:
            page = int(q.get("page", ["1"])[0])
            rows = tasks[(page - 1) * size: page * size]
            total = len(tasks)
            if not rows and page > 1:
                return {"status": 404}
        if fault == "delete_between":
            gone = {t["id"] for t in rows[:2]}
            self.tasks[pid] = [t for t in self.tasks[pid] if t["id"] not in gone]
        return {"total": total, "tasks": [self._row(t) for t in rows]}

    @staticmethod
    def _row(t: dict) -> dict:
        return {"id": t["id"], "data": t["data"], "total_annotations": len(t["annotations"]),
                "cancelled_annotations": 0}

    def export(self, pid: int, fault, auth: str) -> bytes:
        rows = [{"id": t["id"], "data": t["data"], "annotations": t["annotations"], "drafts": [],
                 "predictions": [], "project": pid} for t in self.tasks.get(pid, [])]
        if fault == "echo_export" and rows:
            rows[0]["meta"] = {"note": f"exported for {auth}"}
        return json.dumps(rows).encode()

    # ------------------------------------------------------------ HTTP
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, payload, dribble: bool = False, headers=None):
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                write_body(self.wfile, data, fake.dribble_s if dribble else None)

            def _authorized(self) -> bool:
                auth = self.headers.get("Authorization") or ""
                return auth in (f"Bearer {ACCESS}", f"Token {LEGACY}")

            def _handle(self, method: str):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                body = json.loads(raw) if raw else None
                path, _, qs = self.path.partition("?")
                q = urllib.parse.parse_qs(qs)
                auth = self.headers.get("Authorization") or ""
                with fake.lock:
                    fake.auth.append(auth)
                if fake.redirect_to:
                    return self._send(302, {}, headers={"Location": fake.redirect_to + self.path})
                route = _route(path)
                fault = fake.fault(method, route)
                if fault in ("echo400", "echo401", "echo500"):
                    return self._send(int(fault[4:]), {"detail": f"bad request from {auth} ({auth[:26]}…)"})
                if path == "/api/token/refresh/":
                    ok = isinstance(body, dict) and body.get("refresh") == PAT
                    return self._send(200, {"access": ACCESS}) if ok else self._send(401, {"detail": "bad"})
                if not self._authorized():
                    return self._send(401, {"detail": "Authentication credentials were not provided."})
                return self._route(method, route, path, q, body, fault, auth)

            def _route(self, method, route, path, q, body, fault, auth):
                ids = [int(x) for x in re.findall(r"/(\d+)", path)]
                if (method, route) == ("GET", "/api/current-user/whoami"):
                    return self._send(200, USERS[0])
                if (method, route) == ("GET", "/api/users/"):
                    return self._send(200, ["alice", "bob"] if fault == "users_str" else USERS)
                if (method, route) == ("POST", "/api/projects/validate/"):
                    return self._send(200, {})
                if (method, route) == ("GET", "/api/projects/"):
                    rows = sorted(fake.projects.values(), key=lambda p: p["id"])
                    return self._send(200, {"count": len(rows), "next": None, "previous": None, "results": rows})
                if (method, route) == ("POST", "/api/projects/"):
                    pid = fake.new_id()
                    fake.projects[pid] = {"id": pid, **body}
                    fake.tasks[pid] = []
                    if fault == "hang":
                        fake.release.wait()
                    return self._send(201, {**fake.projects[pid], "id": "12abc" if fault == "id_str" else pid})
                if (method, route) == ("GET", "/api/projects/{id}/"):
                    p = fake.projects.get(ids[0])
                    return self._send(200, p) if p else self._send(404, {"detail": "Not found."})
                if (method, route) == ("GET", "/api/tasks/"):
                    got = fake.task_page(int(q["project"][0]), q, fault)
                    return self._send(got.pop("status", 200), got)
                if (method, route) == ("POST", "/api/projects/{id}/import"):
                    for t in body:
                        fake.tasks[ids[0]].append({"id": fake.new_id(), "data": t["data"], "annotations": []})
                    if fault == "hang":
                        fake.release.wait()
                    return self._send(201, {"task_count": len(body)})
                if (method, route) == ("POST", "/api/projects/{id}/exports/"):
                    return self._send(201, {"id": fake.new_id(), "status": "completed"})
                if (method, route) == ("GET", "/api/projects/{id}/exports/{id}"):
                    return self._send(200, {"id": ids[1], "status": "completed"})
                if (method, route) == ("GET", "/api/projects/{id}/exports/{id}/download"):
                    return self._send(200, fake.export(ids[0], fault, auth), dribble=fault == "dribble")
                if (method, route) == ("DELETE", "/api/projects/{id}/exports/{id}"):
                    return self._send(204, b"")
                return self._send(404, {"detail": f"no route {method} {path}"})

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_DELETE(self):
                self._handle("DELETE")

        return Handler
