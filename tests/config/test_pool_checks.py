"""The workers' pooled connections (config/pool_checks.py): checked at checkout only when idle
longer than the bound, on a real psycopg pool; and the read after a model call
(extraction.execution.runtime.read_after_model_call), run once more when its connection died."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection
from psycopg_pool import ConnectionPool

from config.db import database_conninfo
from config.pool_checks import check_when_idle, stamp_returned
from extraction.execution.runtime import read_after_model_call

pytestmark = pytest.mark.django_db(transaction=True)

IDLE_SECONDS = 0.2


@pytest.fixture
def pool() -> Iterator[ConnectionPool]:
    with ConnectionPool(
        database_conninfo(),
        min_size=1,
        max_size=1,
        check=check_when_idle(IDLE_SECONDS),
        reset=stamp_returned,
        kwargs={"autocommit": True},
    ) as pool:
        yield pool


def _terminate(pid: int) -> None:
    with psycopg.connect(database_conninfo(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])


def _backend_pid(pool: ConnectionPool) -> int:
    with pool.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        return int(row[0])


def test_a_connection_given_back_a_moment_ago_is_not_asked_again(pool):
    pid = _backend_pid(pool)
    _terminate(pid)
    # Back in the pool just now: handed out unchecked, so the step meets the dead connection.
    with pytest.raises(psycopg.OperationalError), pool.connection() as conn:
        conn.execute("SELECT 1")


def test_a_connection_idle_past_the_bound_is_checked_and_replaced(pool):
    pid = _backend_pid(pool)
    _terminate(pid)
    time.sleep(IDLE_SECONDS * 2)
    # The check finds it dead; the pool hands out a new connection instead.
    assert _backend_pid(pool) != pid


def test_a_read_after_a_model_call_runs_again_on_a_fresh_connection():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (first,) = cursor.fetchone()
    _terminate(first)
    calls = []

    def read() -> int:
        with connection.cursor() as cursor:
            calls.append(1)
            cursor.execute("SELECT pg_backend_pid()")
            return int(cursor.fetchone()[0])

    second = read_after_model_call(read)
    assert (len(calls), second != first) == (2, True)
