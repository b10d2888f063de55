"""Fixtures for the live-notification tests: real PostgreSQL (committed rows, so the
consumer's threads and the notifier's own connections see them), real channels-redis, and
the real ASGI application with its middleware stack."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from accounts.models import Membership, Role
from extraction.execution.lifecycle import take_in_requested_event
from extraction.models import OutboxEvent
from tests.conftest import TenantContext, make_tenant_context

INVOICE = b"ACME Supplies GmbH\nInvoice number: INV-1\nTotal: 119.00 EUR\n"
ALLOWED_ORIGIN = (b"origin", b"http://localhost")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tenant_a(transactional_db) -> TenantContext:
    return make_tenant_context(f"a-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def tenant_b(transactional_db) -> TenantContext:
    return make_tenant_context(f"b-{uuid.uuid4().hex[:8]}")


@dataclass
class BrowserUser:
    user: Any
    membership: Membership
    session_key: str

    @property
    def cookie(self) -> tuple[bytes, bytes]:
        return (b"cookie", f"sessionid={self.session_key}".encode())


@pytest.fixture
def browser_user(tenant_a) -> BrowserUser:
    """A member of tenant A logged in through the real session machinery."""
    user = get_user_model().objects.create_user(username=f"u-{uuid.uuid4().hex[:8]}", password="pw-123456789")
    membership = Membership.objects.create(user=user, tenant=tenant_a.tenant, role=Role.MEMBER)
    client = Client()
    client.force_login(user)
    return BrowserUser(user=user, membership=membership, session_key=client.session.session_key)


def accept_job(ctx: TenantContext, content: bytes | None = None) -> str:
    """Upload and accept through the API: one ACCEPTED event."""
    body = content or INVOICE + uuid.uuid4().hex.encode()
    doc = ctx.client.post("/api/v1/documents", {"file": SimpleUploadedFile("i.txt", body)}, format="multipart")
    assert doc.status_code == 201, doc.content
    resp = ctx.client.post("/api/v1/extraction-jobs", {"document_id": doc.json()["id"]}, format="json",
                           HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex)
    assert resp.status_code == 202, resp.content
    return resp.json()["job_id"]


def take_in(job_id: str) -> None:
    """ACCEPTED → READY the way ingress does it: a second event."""
    event = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert take_in_requested_event(event_id=event.event_id, payload=event.payload) == "taken_in"


@pytest.fixture(autouse=True)
def _no_persistent_connections_in_threads():
    """The consumers' database calls run in executor threads; with persistent connections
    those would outlive the test and block dropping the test database."""
    from django.db import connections

    saved = connections.settings["default"]["CONN_MAX_AGE"]
    connections.settings["default"]["CONN_MAX_AGE"] = 0
    yield
    connections.settings["default"]["CONN_MAX_AGE"] = saved


@pytest.fixture(scope="session", autouse=True)
def _end_stray_test_database_sessions(django_db_setup):
    """channels.testing disables close_old_connections while a communicator runs, so the
    consumers' executor threads keep their connections; end them before the test database
    is dropped (this fixture's teardown runs before django_db_setup's)."""
    yield
    from django.db import connections

    name = connections["default"].settings_dict["NAME"]
    with psycopg.connect(database_conninfo_for("postgres"), autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                     [name])


def database_conninfo_for(dbname: str) -> str:
    from extraction.notify.listeners import database_conninfo

    conninfo = database_conninfo()
    return psycopg.conninfo.make_conninfo(conninfo, dbname=dbname)
