"""RabbitMQ node loss: the Procfile's processes on a 3-node cluster through the ``;`` URL list,
an open-loop load of sample invoices, and the node that leads the ingress queue killed with
``kill -9`` mid-load, then started again.

What must hold: every process moves to a live node without exiting and without a traceback per
message; the work queues are replicated over the three nodes; every accepted job ends terminal
with one result, model calls ≤ attempts, no outbox event lost, every SUCCEEDED job in the ERP
once; the dead-letter queues hold only the poison message the test planted.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from kombu import Connection

from config.celery import app as celery_app
from config.db import database_conninfo
from config.topology import ALL_QUEUES, INGRESS, WORK_EXCHANGE, WORK_QUEUES, declare_topology
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
    stalls,
)
from tests.system import SystemProcesses, system_env

pytestmark = pytest.mark.slow

RATE = 3.0  # submissions per second
LOAD_SECONDS = 45.0
KILL_AT = 12.0  # seconds into the load
RESTART_AT = 28.0


def _plant_poison(broker_url: str) -> str:
    """A requested-event task message whose envelope names no job: a consumer must dead-letter
    it (the one message the dead-letter queues may hold at the end)."""
    task_id = str(uuid.uuid4())
    message = celery_app.amqp.as_task_v2(
        task_id,
        "extraction.ingest_requested",
        kwargs={"event": {"event_id": task_id, "event_type": "extraction.requested.v1", "payload": {}}},
    )
    with Connection(broker_url) as conn:
        conn.Producer().publish(
            message.body,
            exchange=WORK_EXCHANGE,
            routing_key=INGRESS,
            headers=message.headers,
            serializer="json",
            delivery_mode=2,
            declare=[],
            **message.properties,
        )
    return task_id


def _dead_letters(broker_url: str) -> dict[str, int]:
    with Connection(broker_url) as conn:
        declare_topology(conn)
        return {
            queue.name: int(conn.default_channel.queue_declare(queue=queue.name, passive=True)[1])
            for queue in ALL_QUEUES
            if queue.name.endswith(".dlq")
        }


def test_the_ingress_leader_killed_under_load(rabbitmq, transactional_db, simulator, settings, tmp_path: Path):
    vhost = f"node-loss-{uuid.uuid4().hex[:6]}"
    broker_url = rabbitmq.add_vhost(vhost)
    with Connection(broker_url) as conn:
        declare_topology(conn)
    # Replicated over the cluster: every work queue has a member on each node.
    for queue in WORK_QUEUES:
        row = rabbitmq._queue_row(queue.name, vhost, "members")
        assert row is not None and len(row["members"]) == 3, row

    simulator.control(latency_mean_seconds=0.5, latency_p95_seconds=1.0)
    env = pipeline_env(
        system_env(broker_url=broker_url, simulator_url=simulator.base_url, media_root=Path(settings.MEDIA_ROOT)),
        simulator=simulator,
        # Every process starts on the first node, which leads every queue (declared through it
        # above): the kill takes every connection of the system with it.
        BROKER_FAILOVER_STRATEGY="round-robin",
    )
    processes = SystemProcesses(env=env, log_dir=tmp_path)
    pipeline = Pipeline(processes, dsn=database_conninfo(), web_port=free_port())
    try:
        pipeline.start_web()
        pipeline.start_services()
        pipeline.wait_ready()
        pipeline.create_tenant()
        pipeline.connect_erp()
        poison = _plant_poison(broker_url)

        load = Load(pipeline, rate=RATE, seconds=LOAD_SECONDS).start()
        time.sleep(KILL_AT)
        leader = rabbitmq.leader_of(INGRESS, vhost)
        assert leader == rabbitmq.nodes[0].name
        killed_at = time.time()
        rabbitmq.kill(leader)
        new_leader = rabbitmq.wait_leader(INGRESS, vhost, not_on=leader)
        elected_after = time.time() - killed_at
        time.sleep(max(0.0, load.t0 + RESTART_AT - time.time()))
        restarted_in = rabbitmq.start(leader)
        load.finish()

        accepted = load.accepted
        settle(pipeline, accepted)
        violations = check_invariants(pipeline, accepted, calls_by_job=simulator.stats()["calls_by_job"], erp=True)
        dead_letters = _dead_letters(broker_url)
        stall = stalls(pipeline, fault_at=killed_at, until=killed_at + RESTART_AT - KILL_AT + 10)
        logged = log_lines(tmp_path, SERVICE_PROCESSES)
        exited = pipeline.exited()
        print(
            f"\nRabbitMQ node loss: {len(load.submissions)} submitted, {len(accepted)} accepted "
            f"({dict(load.refused())} refused), states {dict(pipeline.job_states())}; killed {leader} "
            f"(ingress leader) at t={KILL_AT:g} s, new leader {new_leader} after {elected_after:.1f} s, "
            f"{leader} back in {restarted_in:.1f} s; publish stall {stall.publish_seconds} s "
            f"(before: {stall.publish_baseline_seconds} s), consume stall {stall.consume_seconds} s "
            f"(before: {stall.consume_baseline_seconds} s); dead letters {dead_letters}; logs {logged}; "
            f"violations {sum(map(len, violations.values()))}"
        )
    finally:
        processes.stop_all()

    assert exited == {}
    assert_invariants(violations)
    assert len(accepted) == len(load.submissions)  # the broker's loss refused no client
    assert dead_letters == {"ingress.dlq": 1, "llm.dlq": 0, "delivery.dlq": 0}, poison
    # An operator reads a warning per process and reconnection, not a traceback per message:
    # the load had about 150 jobs in flight around the kill.
    assert {name: counts["tracebacks"] for name, counts in logged.items()} == dict.fromkeys(SERVICE_PROCESSES, 0)
    assert max(counts["warnings"] for counts in logged.values()) <= 10, logged
