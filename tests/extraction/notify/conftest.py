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
from django.test import Client

from accounts.models import Membership, Role


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _committed_rows(transactional_db):
    """The consumers' executor threads and the notifier's own connections read the rows the
    test writes: they must be committed."""


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
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )


def database_conninfo_for(dbname: str) -> str:
    from config.db import database_conninfo

    conninfo = database_conninfo()
    return psycopg.conninfo.make_conninfo(conninfo, dbname=dbname)
