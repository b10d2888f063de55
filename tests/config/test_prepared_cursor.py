"""The hot paths' prepared cursor: database errors arrive as Django's classes (so a database
blip is told from a refusal, and Django drops a broken connection), and statements asked to
be prepared are prepared on the server."""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError, ProgrammingError, connection
from kombu import Connection

from config.db import prepared_cursor
from tests.factories import make_tenant_context, submit, unique_invoice
from tests.system import VENV_BIN, SystemProcesses, queue_depth, system_env, wait_for

PREPARED_STATEMENTS_ON = settings.DATABASES["default"]["OPTIONS"]["prepare_threshold"] is not None


def _second_connection() -> psycopg.Connection[Any]:
    """A connection of our own to the test database, beside Django's."""
    s = connection.settings_dict
    return psycopg.connect(
        host=s["HOST"], port=s["PORT"], user=s["USER"], password=s["PASSWORD"], dbname=s["NAME"], autocommit=True
    )


def _terminate_backends(where: str, params: list[Any]) -> list[int]:
    """``pg_terminate_backend`` the sessions matching ``where`` (over pg_stat_activity), and
    wait until they are gone; their pids."""
    with _second_connection() as admin:
        pids = [pid for (pid,) in admin.execute(f"SELECT pid FROM pg_stat_activity WHERE {where}", params)]
        assert pids, "no backend to terminate"
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [pids])
        wait_for(
            lambda: (
                admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [pids]).fetchone() == (0,)
            ),
            timeout=10,
        )
    return pids


@pytest.fixture
def closed_afterwards(transactional_db: None) -> Iterator[None]:
    yield
    connection.close()  # the flush after a transactional test needs a live connection


def test_a_terminated_backend_is_djangos_operational_error_and_the_connection_is_dropped(
    closed_afterwards: None,
) -> None:
    connection.ensure_connection()
    _terminate_backends("pid = %s", [connection.connection.info.backend_pid])

    with pytest.raises(OperationalError) as raised, prepared_cursor() as cursor:
        cursor.execute("SELECT 1", prepare=True)

    assert type(raised.value) is OperationalError
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)
    assert connection.errors_occurred is True
    connection.close_if_unusable_or_obsolete()
    assert connection.connection is None  # dropped: the next query opens a new connection
    with prepared_cursor() as cursor:
        assert cursor.execute("SELECT 41 + 1", prepare=True).fetchone() == (42,)


@pytest.mark.django_db
@pytest.mark.parametrize("many", [False, True], ids=["execute", "executemany"])
def test_a_unique_violation_is_djangos_integrity_error(many: bool) -> None:
    with prepared_cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE inbox_keys (event_id uuid PRIMARY KEY) ON COMMIT DROP")
        key = uuid.uuid4()
        cursor.execute("INSERT INTO inbox_keys VALUES (%s)", [key])
        with pytest.raises(IntegrityError) as raised:
            if many:
                cursor.executemany("INSERT INTO inbox_keys VALUES (%s)", [[uuid.uuid4()], [key]])
            else:
                cursor.execute("INSERT INTO inbox_keys VALUES (%s)", [key], prepare=True)

    assert type(raised.value) is IntegrityError
    assert isinstance(raised.value.__cause__, psycopg.errors.UniqueViolation)
    assert connection.errors_occurred is False  # a refusal: the connection is fine


@pytest.mark.django_db
@pytest.mark.parametrize("fetch", ["fetchone", "fetchmany", "fetchall", "next"])
def test_a_fetch_error_is_djangos(fetch: str) -> None:
    with prepared_cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '8MB'")  # no rows to fetch
        with pytest.raises(ProgrammingError) as raised:
            if fetch == "next":
                next(cursor)
            else:
                getattr(cursor, fetch)()

    assert type(raised.value) is ProgrammingError
    assert isinstance(raised.value.__cause__, psycopg.ProgrammingError)


@pytest.mark.skipif(not PREPARED_STATEMENTS_ON, reason="POSTGRES_PREPARED_STATEMENTS is off")
@pytest.mark.django_db
def test_a_statement_asked_to_be_prepared_is_prepared_on_the_server() -> None:
    with prepared_cursor() as cursor:
        for value in (41, 1):
            cursor.execute("SELECT %s::int + 1 AS answer_prepared_once", [value], prepare=True)
        assert cursor.fetchone() == (2,)
        cursor.execute(
            "SELECT statement, from_sql FROM pg_prepared_statements WHERE statement LIKE %s", ["%answer_prepared_once"]
        )
        assert cursor.fetchall() == [("SELECT $1::int + 1 AS answer_prepared_once", False)]


# --- end to end: the ingress worker's backend is terminated under it ---------------------------

INGRESS_APPLICATION = f"ingress-under-test-{os.getpid()}"
REQUESTED = "extraction.requested.v1"


@pytest.fixture
def processes(transactional_db: None, broker: str, settings: Any, tmp_path: Path) -> Iterator[SystemProcesses]:
    """Like the shared ``processes``, without the provider simulator: only the ingress runs here."""
    group = SystemProcesses(
        env=system_env(broker_url=broker, simulator_url=None, media_root=Path(settings.MEDIA_ROOT)),
        log_dir=tmp_path,
    )
    yield group
    group.stop_all()


@pytest.fixture
def task_events(broker: str) -> Iterator[list[dict[str, Any]]]:
    """The task events (``-E``) the workers send while the test runs, in order."""
    from config.celery import app

    events: list[dict[str, Any]] = []
    with Connection(broker) as conn:
        receiver = app.events.Receiver(conn, handlers={"*": events.append})
        consuming = threading.Thread(target=receiver.capture, kwargs={"limit": None, "wakeup": False}, daemon=True)
        consuming.start()
        yield events
        receiver.should_stop = True
        consuming.join(timeout=10)


def _state(job_id: str) -> str:
    from extraction.models import ExtractionJob

    return ExtractionJob.objects.get(pk=job_id).state


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pool_check", "retry_seconds", "deliveries"),
    [
        # The checkout's check finds the dead connection and the pool replaces it: the first
        # delivery takes the job in (what a database restart or failover costs by default).
        ("1", "60", [("task-succeeded", None)]),
        # Unchecked, the step fails on it and tries again on a new connection before the ack.
        ("0", "60", [("task-succeeded", None)]),
        # Neither: requeued (not acked, not dead-lettered), then taken in.
        ("0", "0", [("task-rejected", True), ("task-succeeded", None)]),
    ],
)
def test_ingress_survives_its_backend_being_terminated(
    processes: SystemProcesses,
    broker: str,
    task_events: list[dict[str, Any]],
    pool_check: str,
    retry_seconds: str,
    deliveries: list[tuple[str, bool | None]],
) -> None:
    """The ingress meets a pooled connection whose backend PostgreSQL terminated, and takes the
    job in once, with nothing dead-lettered."""
    from extraction.models import ExecutionInbox, JobEvent, OutboxEvent

    tenant = make_tenant_context()
    processes.relay()
    # A pool of one named connection: the test knows which backend is the ingress's, and only
    # the first delivery can meet it dead. Task events (-E) show each delivery's outcome. No
    # scheduler runs, so nothing but a redelivery can take the job in.
    ingress = processes.start(
        "ingress",
        [
            str(VENV_BIN / "celery"),
            "-A",
            "config",
            "worker",
            "-Q",
            "ingress",
            "--pool",
            "threads",
            "--concurrency",
            "2",
            "-n",
            f"ingress-{os.getpid()}@%h",
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "INFO",
            "-E",
        ],
        POSTGRES_POOL_MAX_SIZE="1",
        POSTGRES_POOL_CHECK=pool_check,
        DURABLE_STEP_RETRY_SECONDS=retry_seconds,
        PGAPPNAME=INGRESS_APPLICATION,
    )

    warm_up = submit(tenant, content=unique_invoice())  # the ingress's pool now holds a connection that has worked
    wait_for(lambda: _state(warm_up) == "READY", timeout=60, message=processes.logs)

    os.killpg(ingress.pid, signal.SIGSTOP)
    job_id = submit(tenant, content=unique_invoice())
    requested = OutboxEvent.objects.get(job_id=job_id, event_type=REQUESTED)
    wait_for(
        lambda: OutboxEvent.objects.filter(pk=requested.pk, published_at__isnull=False).exists(),
        timeout=30,
        message=processes.logs,
    )
    _terminate_backends("application_name = %s", [INGRESS_APPLICATION])
    os.killpg(ingress.pid, signal.SIGCONT)

    wait_for(lambda: _state(job_id) == "READY", timeout=60, message=processes.logs)
    task_id = str(requested.event_id)

    def outcomes() -> list[tuple[str, bool | None]]:
        return [
            (e["type"], e.get("requeue"))
            for e in task_events
            if e.get("uuid") == task_id and e["type"] in ("task-rejected", "task-succeeded", "task-failed")
        ]

    wait_for(lambda: ("task-succeeded", None) in outcomes(), timeout=30, message=lambda: repr(outcomes()))
    assert outcomes() == deliveries
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    transitions = JobEvent.objects.filter(job_id=job_id).order_by("state_version")
    assert list(transitions.values_list("from_state", "to_state")) == [("", "ACCEPTED"), ("ACCEPTED", "READY")]
    assert queue_depth(broker, "ingress.dlq") == 0
    assert queue_depth(broker, "ingress") == 0
