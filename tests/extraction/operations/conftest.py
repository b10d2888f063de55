"""Fixtures of the operations tests: a reviewer, and a real ERP receiver on loopback."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def reviewer(db) -> int:
    return get_user_model().objects.create_user(username=f"reviewer-{uuid.uuid4().hex[:8]}", is_staff=True).pk


@dataclass
class Erp:
    """A real HTTP receiver on 127.0.0.1 that takes every webhook with 200."""

    url: str
    received: int = 0


@pytest.fixture
def erp(settings) -> Iterator[Erp]:
    settings.EGRESS_ALLOW_LOOPBACK = True
    state: dict[str, Erp] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state["erp"].received += 1
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["erp"] = Erp(url=f"http://127.0.0.1:{server.server_address[1]}/hooks")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state["erp"]
    server.shutdown()
    server.server_close()
