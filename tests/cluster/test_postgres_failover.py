"""PostgreSQL failover under load: the Procfile's processes on a PostgreSQL of the test's own
(tests/cluster/postgres_cluster.py), through the two-host settings every process reads
(``POSTGRES_HOST=127.0.0.1,127.0.0.1``, ``POSTGRES_PORT=5441,5442``, ``read-write``).

(a) The primary restarted fast (``pg_ctl restart -m fast``): every connection of every process
    is cut at once. Pooled connections are checked at checkout and the durable step retries,
    so the failed requests are bounded by the connections in use at that moment.
(b) A streaming standby promoted after the primary stopped immediately (a crash), the old
    primary kept down (fenced). The primary commits synchronously to the standby, as the ``ha``
    overlay's CloudNativePG cluster does: an acknowledged job is on the standby when it is
    promoted. No job accepted with a 202 may be missing afterwards.

Both: no process exits, every accepted job ends terminal with one result, model calls ≤
attempts, every SUCCEEDED job in the ERP once, and nothing is dead-lettered because the database
moved.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from kombu import Connection

from config.topology import ALL_QUEUES
from tests.cluster.postgres_cluster import PostgresPrimary, PostgresReplica, django_env, multi_host_conninfo
from tests.cluster.scenario import (
    SERVICE_PROCESSES,
    Load,
    Pipeline,
    assert_invariants,
    check_invariants,
    free_port,
    log_lines,
    pipeline_env,
    settle,
)
from tests.system import SystemProcesses, system_env, wait_for

pytestmark = pytest.mark.slow

RATE = 3.0
LOAD_SECONDS = 40.0
FAULT_AT = 12.0
# Web serves with 2 processes × 4 threads, each thread one persistent connection: the requests a
# restart can break are those holding one of them at that moment.
WEB_CONNECTIONS = 8
# (b): how long the system has no primary, as an operator's or CloudNativePG's failover takes.
PROMOTE_AFTER = 2.0


def _dead_letters(broker_url: str) -> int:
    with Connection(broker_url) as conn:
        return sum(
            int(conn.default_channel.queue_declare(queue=q.name, passive=True)[1])
            for q in ALL_QUEUES
            if q.name.endswith(".dlq")
        )


def _start(
    instances: list[PostgresPrimary | PostgresReplica], *, broker: str, simulator, settings, log_dir: Path
) -> Pipeline:
    database = f"failover_{uuid.uuid4().hex[:8]}"
    instances[0].create_database(database)
    env = pipeline_env(
        system_env(broker_url=broker, simulator_url=simulator.base_url, media_root=Path(settings.MEDIA_ROOT)),
        simulator=simulator,
        POSTGRES_DB=database,
        **django_env(*instances),
    )
    processes = SystemProcesses(env=env, log_dir=log_dir)
    pipeline = Pipeline(processes, dsn=multi_host_conninfo([i.port for i in instances], database), web_port=free_port())
    pipeline.manage("migrate", "--noinput")
    pipeline.start_web()
    pipeline.start_services()
    pipeline.wait_ready()
    pipeline.create_tenant()
    pipeline.connect_erp()
    return pipeline


def _settle(pipeline: Pipeline, load: Load, simulator) -> dict[str, list]:
    load.finish()
    accepted = load.accepted
    settle(pipeline, accepted)
    return check_invariants(pipeline, accepted, calls_by_job=simulator.stats()["calls_by_job"], erp=True)


def _first_result_after(pipeline: Pipeline, moment: float) -> float:
    """Seconds from ``moment`` (epoch) to the first result the system committed after it."""
    first = pipeline.one(
        "SELECT extract(epoch FROM min(r.created_at))::float8 FROM extraction_results r "
        "JOIN extraction_jobs j ON j.id = r.job_id WHERE j.tenant_id = %s AND r.created_at > to_timestamp(%s)",
        [pipeline.tenant_id, moment],
    )
    return float(first) - moment


def _retried(load: Load) -> int:
    """Requests the load had to send again (an upload and a create are two per submission)."""
    return sum(max(0, s.tries - 2) for s in load.submissions)


def test_a_fast_restart_of_the_primary_under_load(
    postgres_primary, broker, simulator, settings, transactional_db, tmp_path
):
    simulator.control(latency_mean_seconds=0.5, latency_p95_seconds=1.0)
    pipeline = _start([postgres_primary], broker=broker, simulator=simulator, settings=settings, log_dir=tmp_path)
    try:
        load = Load(pipeline, rate=RATE, seconds=LOAD_SECONDS).start()
        time.sleep(FAULT_AT)
        restarted_wall = time.time()
        restart_seconds = postgres_primary.restart("fast")
        violations = _settle(pipeline, load, simulator)
        logged = log_lines(tmp_path, SERVICE_PROCESSES)
        exited = pipeline.exited()
        print(
            f"\nPostgreSQL fast restart: {len(load.submissions)} submitted, {len(load.accepted)} accepted, "
            f"refused {dict(load.refused())}, requests retried {_retried(load)}; restart took "
            f"{restart_seconds:.2f} s, first result committed {_first_result_after(pipeline, restarted_wall):.1f} s "
            f"after it began; states {dict(pipeline.job_states())}; logs {logged}; "
            f"dead letters {_dead_letters(broker)}; violations {sum(map(len, violations.values()))}"
        )
    finally:
        pipeline.processes.stop_all()

    assert exited == {}
    assert_invariants(violations)
    assert _dead_letters(broker) == 0
    assert len(load.accepted) == len(load.submissions)  # a retried request got its 202
    assert _retried(load) <= WEB_CONNECTIONS
    assert {name: counts["tracebacks"] for name, counts in logged.items()} == dict.fromkeys(SERVICE_PROCESSES, 0)


def test_the_standby_promoted_after_the_primary_crashed(
    postgres_primary, postgres_replica, broker, simulator, settings, transactional_db, tmp_path
):
    # A commit waits until the standby has it (as the ha overlay's CloudNativePG cluster): an
    # acknowledged job survives the promotion. Set once the standby streams, or no commit could end.
    postgres_primary.query("ALTER SYSTEM SET synchronous_standby_names = '*'")
    postgres_primary.query("SELECT pg_reload_conf()")
    simulator.control(latency_mean_seconds=0.5, latency_p95_seconds=1.0)
    pipeline = _start(
        [postgres_primary, postgres_replica], broker=broker, simulator=simulator, settings=settings, log_dir=tmp_path
    )
    try:
        load = Load(pipeline, rate=RATE, seconds=LOAD_SECONDS).start()
        time.sleep(FAULT_AT)
        crashed_wall = time.time()
        postgres_primary.stop("immediate")
        time.sleep(PROMOTE_AFTER)
        postgres_replica.promote()
        wait_for(lambda: not postgres_replica.in_recovery(), timeout=30)
        violations = _settle(pipeline, load, simulator)
        recovered = _first_result_after(pipeline, crashed_wall)
        logged = log_lines(tmp_path, SERVICE_PROCESSES)
        exited = pipeline.exited()
        print(
            f"\nPostgreSQL promotion: {len(load.submissions)} submitted, {len(load.accepted)} accepted, "
            f"refused {dict(load.refused())}, requests retried {_retried(load)}; no primary for "
            f"{PROMOTE_AFTER:g} s + promotion; states {dict(pipeline.job_states())}; logs {logged}; "
            f"dead letters {_dead_letters(broker)}; violations {sum(map(len, violations.values()))}; "
            f"first result committed {recovered:.1f} s after the crash"
        )
    finally:
        pipeline.processes.stop_all()

    assert not postgres_primary.running()  # fenced: the old primary never came back
    assert exited == {}
    assert_invariants(violations)
    assert len(load.accepted) == len(load.submissions)  # 503 + Retry-After, then a 202 with the same key
    assert _dead_letters(broker) == 0
    assert {name: counts["tracebacks"] for name, counts in logged.items()} == dict.fromkeys(SERVICE_PROCESSES, 0)
