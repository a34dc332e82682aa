"""The plumbing the loopback test servers share (tests/fake_openai_server.py, tests/fake_label_studio.py):
a threaded stdlib HTTP server on a free port, started and stopped as a context manager, with a ``release``
event that hanging handlers wait on (set on exit, so no handler outlives the test)."""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import ThreadingHTTPServer

import pytest


class LoopbackServer:
    """Subclasses define ``_handler()`` (a request handler class) and may use ``self.lock``/``self.release``."""

    def __init__(self, host: str = "127.0.0.1"):
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, 0), self._handler())
        self.server.daemon_threads = True
        self.host, self.port = host, self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self):  # pragma: no cover
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def second_host(cls):
    """A ``cls`` server on 127.0.0.2 (another origin on the same machine), or skip where that is no loopback."""
    try:
        srv = cls(host="127.0.0.2")
    except OSError:
        pytest.skip("127.0.0.2 is not a loopback address here")
    with srv:
        yield srv


def write_body(wfile, data: bytes, dribble_s: float | None = None) -> None:
    """Send ``data`` at once, or one byte every ``dribble_s`` seconds; a client that left is not an error."""
    try:
        if dribble_s:
            for i in range(len(data)):
                wfile.write(data[i:i + 1])
                wfile.flush()
                time.sleep(dribble_s)
        else:
            wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
        pass
