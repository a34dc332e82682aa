"""The Label Studio client without a server: URLs, auth headers, token refresh, errors, paging, state.

A fake ``opener`` stands in for ``urllib.request.urlopen`` and records each
request; it answers with canned bodies or raises ``HTTPError`` like urllib does.
One test talks to a closed loopback port for a real connection error.
"""

from __future__ import annotations

import base64
import io
import json
import urllib.error

import pytest

from planner.connectors.label_studio import (
    LabelStudioClient,
    is_jwt,
    jwt_exp,
    normalize_url,
)
from planner.errors import DataError, UsageError


def _jwt(payload: dict, sig: str = "c2lnbmF0dXJl") -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
    return f"{enc({'alg': 'HS256', 'typ': 'JWT'})}.{enc(payload)}.{sig}"


PAT = _jwt({"token_type": "refresh", "exp": 4_000_000_000, "jti": "x"}, "UEFULXNlY3JldC1zaWduYXR1cmU")
LEGACY = "0123456789abcdef0123456789abcdef01234567"


class _Resp(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class FakeServer:
    """``routes[(method, path)]`` -> list of answers (bytes/dict, or an int HTTP status with optional body)."""

    def __init__(self, routes):
        self.routes = {k: list(v) for k, v in routes.items()}
        self.calls = []

    def __call__(self, req, timeout=None):
        path = req.full_url.split("127.0.0.1:9", 1)[1]
        self.calls.append((req.get_method(), path, req.get_header("Authorization"),
                           json.loads(req.data) if req.data else None))
        answers = self.routes.get((req.get_method(), path.split("?")[0])) or [404]
        ans = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(ans, (tuple, int)):
            code, body = ans if isinstance(ans, tuple) else (ans, b'{"detail": "nope"}')
            raise urllib.error.HTTPError(req.full_url, code, "err", {}, io.BytesIO(body))
        return _Resp(ans if isinstance(ans, bytes) else json.dumps(ans).encode())


def _client(routes, key=PAT, **kw):
    server = FakeServer(routes)
    return LabelStudioClient("http://127.0.0.1:9", key, opener=server, **kw), server


# ---------------------------------------------------------------- URL and key
@pytest.mark.parametrize("url, want", [
    ("http://localhost:8080/", "http://localhost:8080"),
    ("  https://ls.example.org/label-studio/ ", "https://ls.example.org/label-studio"),
    ("http://127.0.0.1:9", "http://127.0.0.1:9"),
])
def test_url_normalized(url, want):
    assert normalize_url(url) == want


@pytest.mark.parametrize("url, says", [
    (None, "missing"), ("", "missing"), ("localhost:8080", "not an http(s) URL"), ("ftp://x", "not an http(s) URL"),
    ("http://x:99999", "not a URL"), ("http://x/?a=1", "query"),
])
def test_bad_url_is_a_usage_error(url, says):
    with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")) as e:
        normalize_url(url)
    assert "None" not in str(e.value)


def test_url_with_credentials_is_refused_without_echoing_them():
    with pytest.raises(UsageError) as e:
        normalize_url("http://admin:s3cret-pass@localhost:8080")
    assert "s3cret" not in str(e.value) and "LABEL_STUDIO_API_KEY" in str(e.value)


def test_missing_key_names_the_variable():
    with pytest.raises(UsageError, match="LABEL_STUDIO_API_KEY is missing"):
        LabelStudioClient.from_env({"LABEL_STUDIO_URL": "http://localhost:8080"})


def test_jwt_detection_and_exp():
    assert is_jwt(PAT) and not is_jwt(LEGACY)
    assert jwt_exp(_jwt({"exp": 1234})) == 1234.0
    assert jwt_exp("not.a.jwt") is None and jwt_exp(LEGACY) is None
    assert PAT not in repr(LabelStudioClient("http://127.0.0.1:9", PAT))


# ----------------------------------------------------------------- auth
def test_pat_is_exchanged_for_an_access_token_and_reused():
    access = _jwt({"token_type": "access", "exp": 4_000_000_000})
    c, srv = _client({("POST", "/api/token/refresh/"): [{"access": access}],
                      ("GET", "/api/current-user/whoami"): [{"id": 1}]})
    c.whoami()
    c.whoami()
    assert [x[:3] for x in srv.calls] == [("POST", "/api/token/refresh/", None),
                                          ("GET", "/api/current-user/whoami", f"Bearer {access}"),
                                          ("GET", "/api/current-user/whoami", f"Bearer {access}")]
    assert srv.calls[0][3] == {"refresh": PAT}


def test_legacy_token_uses_token_auth_and_no_refresh():
    c, srv = _client({("GET", "/api/current-user/whoami"): [{"id": 1}]}, key=LEGACY)
    c.whoami()
    assert srv.calls == [("GET", "/api/current-user/whoami", f"Token {LEGACY}", None)]


def test_access_token_refreshed_before_it_expires():
    now = [1000.0]
    old, new = _jwt({"exp": 1100}), _jwt({"exp": 2000})
    c, srv = _client({("POST", "/api/token/refresh/"): [{"access": old}, {"access": new}],
                      ("GET", "/api/current-user/whoami"): [{"id": 1}]}, clock=lambda: now[0])
    c.whoami()
    now[0] = 1080.0  # 20 s before exp: inside the refresh margin
    c.whoami()
    assert [x[2] for x in srv.calls if x[1] != "/api/token/refresh/"] == [f"Bearer {old}", f"Bearer {new}"]


def test_a_401_refreshes_once_and_retries():
    a1, a2 = _jwt({"exp": 4_000_000_000, "n": 1}), _jwt({"exp": 4_000_000_000, "n": 2})
    c, srv = _client({("POST", "/api/token/refresh/"): [{"access": a1}, {"access": a2}],
                      ("GET", "/api/projects/3/"): [401, {"id": 3}]})
    assert c.project(3) == {"id": 3}
    assert [x[1] for x in srv.calls].count("/api/token/refresh/") == 2


def test_refused_pat_is_one_line_without_the_key():
    c, _ = _client({("POST", "/api/token/refresh/"): [(401, f'{{"detail": "bad token {PAT}"}}'.encode())]})
    with pytest.raises(UsageError) as e:
        c.whoami()
    msg = str(e.value)
    assert "LABEL_STUDIO_API_KEY" in msg and "\n" not in msg
    assert PAT not in msg and PAT[:20] not in msg


def test_refused_legacy_token_is_one_line_without_the_key():
    c, _ = _client({("GET", "/api/current-user/whoami"): [(401, f"Invalid token {LEGACY}".encode())]}, key=LEGACY)
    with pytest.raises(UsageError) as e:
        c.whoami()
    assert LEGACY not in str(e.value) and "***" in str(e.value) and "HTTP 401" in str(e.value)


# ----------------------------------------------------------------- errors
def test_server_error_quotes_a_short_body_and_scrubs_the_key():
    c, _ = _client({("GET", "/api/current-user/whoami"): [(500, (f"boom {LEGACY} " + "x" * 5000).encode())]},
                   key=LEGACY)
    with pytest.raises(DataError) as e:
        c.whoami()
    msg = str(e.value)
    assert msg.startswith("Label Studio GET /api/current-user/whoami: HTTP 500: ")
    assert LEGACY not in msg and len(msg) < 220 and "\n" not in msg


def test_404_project_is_none():
    c, _ = _client({("GET", "/api/projects/7/"): [404]}, key=LEGACY)
    assert c.project(7) is None


def test_non_json_answer_is_a_data_error():
    c, _ = _client({("GET", "/api/current-user/whoami"): [b"<html>proxy login</html>"]}, key=LEGACY)
    with pytest.raises(DataError, match="not JSON"):
        c.whoami()


def test_unreachable_server_is_one_line():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = LabelStudioClient(f"http://127.0.0.1:{port}", LEGACY, timeout=5)
    with pytest.raises(DataError) as e:
        c.whoami()
    assert f"cannot reach http://127.0.0.1:{port}" in str(e.value) and LEGACY not in str(e.value)


# ----------------------------------------------------------------- paging, export
def test_tasks_are_paged_by_id():
    """Each page asks for the tasks after the last id seen (the data manager's filter), ordered by id."""
    import urllib.parse

    page = lambda a, b: {"tasks": [{"id": i, "data": {"item_id": f"i{i}"}} for i in range(a, b)], "total": 230}
    c, srv = _client({("GET", "/api/tasks/"): [page(1, 101), page(101, 201), page(201, 231)]}, key=LEGACY)
    got = c.tasks(5)
    assert [t["id"] for t in got] == list(range(1, 231))
    after = []
    for _, path, _, _ in srv.calls:
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        assert (q["project"], q["page_size"], q["page"]) == (["5"], ["100"], ["1"])
        (item,) = json.loads(q["query"][0])["filters"]["items"]
        assert (item["filter"], item["operator"]) == ("filter:tasks:id", "greater")
        after.append(item["value"])
    assert after == [-1, 100, 200]


def test_snapshot_export_waits_for_completion_and_expands_completed_by():
    c, srv = _client({("POST", "/api/projects/4/exports/"): [{"id": 9, "status": "in_progress"}],
                      ("GET", "/api/projects/4/exports/9"): [{"id": 9, "status": "in_progress"},
                                                             {"id": 9, "status": "completed"}],
                      ("GET", "/api/projects/4/exports/9/download"): [b"[]"]}, key=LEGACY)
    assert c.snapshot_export(4, sleep=lambda s: None) == b"[]"
    assert srv.calls[0][3]["serialization_options"] == {"annotations__completed_by": {"only_id": False}}
    assert [x[:2] for x in srv.calls[-2:]] == [("GET", "/api/projects/4/exports/9/download?exportType=JSON"),
                                               ("DELETE", "/api/projects/4/exports/9")]


def test_failed_snapshot_is_a_data_error():
    c, _ = _client({("POST", "/api/projects/4/exports/"): [{"id": 9, "status": "failed"}]}, key=LEGACY)
    with pytest.raises(DataError, match="failed"):
        c.snapshot_export(4, sleep=lambda s: None)
