"""A request whose database connection died (a restart, a failover) answers 503 with Retry-After
as a problem, not a 500: the client tries again, and nothing was stored."""

from __future__ import annotations

import psycopg
from django.db import connection

from config.db import database_conninfo
from tests.factories import make_tenant_context


def test_a_request_that_finds_its_database_connection_gone_answers_503(transactional_db):
    ctx = make_tenant_context()
    assert ctx.client.get("/api/v1/extraction-jobs").status_code == 200  # the connection is in use
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    with psycopg.connect(database_conninfo(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [backend])  # what a restart does to it

    response = ctx.client.get("/api/v1/extraction-jobs")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    assert response["Retry-After"] == "5"
    assert response.json()["type"] == "/problems/service-unavailable"
    connection.close()
    assert ctx.client.get("/api/v1/extraction-jobs").status_code == 200  # a new connection serves again
