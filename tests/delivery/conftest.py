from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(autouse=True)
def _isolated_broker(request, settings):
    """Every delivery test publishes its hints to the test vhost, never the default one."""
    if "transactional_db" in request.fixturenames or "db" in request.fixturenames:
        request.getfixturevalue("broker")


@pytest.fixture
def loopback(settings):
    settings.EGRESS_ALLOW_LOOPBACK = True
    return settings


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class ScriptedErp:
    """A real HTTP server on 127.0.0.1 that answers as scripted: a stand-in for an ERP
    misbehaving in the ways DLV-5 lists (500, 429, 410, 3xx, 401)."""

    url: str
    received: list[Received] = field(default_factory=list)
    answers: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    default: tuple[int, dict[str, str], bytes] = (200, {}, b'{"ok":true}')

    def answer(self, status: int, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        self.answers.append((status, headers or {}, body))

    def bodies(self) -> list[dict]:
        return [json.loads(r.body) for r in self.received]


@pytest.fixture
def scripted_erp():
    server_ref: dict[str, ScriptedErp] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # http.server's name
            erp = server_ref["erp"]
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            erp.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()))
            status, headers, payload = erp.answers.pop(0) if erp.answers else erp.default
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    erp = ScriptedErp(url=f"http://127.0.0.1:{server.server_address[1]}/hooks")
    server_ref["erp"] = erp
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield erp
    server.shutdown()
    server.server_close()


class ConnectionGuard:
    """Records every outgoing connect; fails loudly on any address outside loopback."""

    def __init__(self) -> None:
        self.attempts: list[tuple] = []


@pytest.fixture
def connect_guard(monkeypatch) -> ConnectionGuard:
    guard = ConnectionGuard()
    real_connect = socket.socket.connect
    real_create = socket.create_connection

    def _check(address) -> None:
        guard.attempts.append(address)
        host = address[0] if isinstance(address, tuple) else address
        if not (str(host).startswith("127.") or host == "::1"):
            raise AssertionError(f"a connection to {address!r} was attempted")

    def connect(self, address):
        _check(address)
        return real_connect(self, address)

    def create_connection(address, *args, **kwargs):
        _check(address)
        return real_create(address, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    return guard
