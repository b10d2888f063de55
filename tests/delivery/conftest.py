from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import pytest

from delivery import dispatch
from delivery.endpoints import register_endpoint
from delivery.models import WebhookEndpoint
from extraction.execution import lifecycle
from extraction.execution.lifecycle import AttemptReport
from extraction.models import OutboxEvent
from tests.extraction.execution.conftest import broker, broker_url, submit, tenant  # noqa: F401 (fixtures)

OUTPUT = {
    "schema": "invoice.v1",
    "invoice_number": {"value": "INV-2026-001", "evidence": None},
    "supplier": {"name": {"value": "ACME Supplies GmbH", "evidence": None}},
    "currency": {"value": "EUR", "evidence": None},
    "totals": {"gross": {"value": "119.00", "evidence": None}},
}


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
        def do_POST(self):  # noqa: N802 - http.server's name
            erp = server_ref["erp"]
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            erp.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                                         time.time()))
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


def completed_job(ctx, *, review_required: bool = False) -> tuple[str, OutboxEvent]:
    """A job taken through the real lifecycle to SUCCEEDED (or REVIEW_REQUIRED), with its outbox event."""
    job_id = submit(ctx)
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "taken_in"
    claim = lifecycle.claim_next_job(worker_id="test-worker")
    assert claim is not None and str(claim.job_id) == job_id
    assert lifecycle.complete_job(claim, review_required=review_required, output=OUTPUT, validation={"ok": True},
                                  policy_version="test", report=AttemptReport(outcome="succeeded"))
    event_type = "extraction.review_required.v1" if review_required else "extraction.completed.v1"
    return job_id, OutboxEvent.objects.get(job_id=job_id, event_type=event_type)


def active_endpoint(ctx, url: str, types=("extraction.completed.v1",)) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint and answer its verification (the receiver must be up): (endpoint, secret)."""
    registration = register_endpoint(tenant=ctx.tenant, url=url, event_types=list(types))
    assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
    endpoint = WebhookEndpoint.objects.get(pk=registration.endpoint.pk)
    assert endpoint.status == "active"
    return endpoint, registration.secret.secret


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


def fake_resolver(table: dict[str, list[str]]) -> Callable:
    """A getaddrinfo stand-in: never real DNS."""

    def resolve(host, port, family=0, type=0, proto=0, flags=0):  # noqa: A002 - getaddrinfo's names
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out = []
        for address in table[host]:
            fam = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (address, port, 0, 0) if fam == socket.AF_INET6 else (address, port)
            out.append((fam, socket.SOCK_STREAM, 6, "", sockaddr))
        return out

    return resolve


def new_uuid() -> str:
    return str(uuid.uuid4())
