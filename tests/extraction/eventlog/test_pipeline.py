"""The system on Kafka (BRK-6), with its real processes: the relay publishing the outbox to
Kafka, the ingress and delivery consumers (``run_kafka_consumer``), the LLM and delivery
Celery workers, the scheduler, the provider simulator and the reference ERP. Every job here is
taken in from a record: the scheduler's lost-ingress recovery is pushed out of the way."""

from __future__ import annotations

import json
import sys
from io import StringIO

import pytest
from django.core.management import call_command

from delivery.erp.models import ErpLedgerEntry
from extraction.models import EventLogRecord, ExecutionInbox, ExtractionJob, ExtractionResult, JobEvent, OutboxEvent
from tests.extraction.eventlog.conftest import kafka_system
from tests.factories import submit
from tests.kafka_broker import free_port
from tests.system import SystemProcesses, all_terminal, connect_reference_erp, start_web, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def kafka_processes(transactional_db, broker, sim, settings, tmp_path, event_log):
    group = kafka_system(event_log, broker=broker, sim=sim, settings=settings, log_dir=tmp_path)
    yield group
    group.stop_all()


def consumer(processes: SystemProcesses, name: str, role: str = "ingress", threads: int = 4, **env: str) -> None:
    processes.start(
        name,
        [sys.executable, "manage.py", "run_kafka_consumer", role, "--threads", str(threads)],
        POSTGRES_POOL_MAX_SIZE="4",
        **env,
    )


def taken_in_from_a_record(job_id: str) -> bool:
    return JobEvent.objects.filter(job_id=job_id, to_state="READY", reason="taken_in").exists()


def test_a_job_runs_on_kafka_to_the_erp_and_the_log_replays_independently(kafka_processes, tenant, sim, event_log):
    processes = kafka_processes
    port = free_port()
    start_web(processes, "erp", port)
    connect_reference_erp(tenant.tenant, port, "erp-kafka")
    processes.relay()
    consumer(processes, "ingress")
    consumer(processes, "fan-out", role="delivery")
    processes.celery("workers", "llm,delivery")
    processes.scheduler()

    job_id = submit(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=90, message=processes.logs)
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
    assert taken_in_from_a_record(job_id)
    inbox = ExecutionInbox.objects.get(job_id=job_id)
    assert (inbox.source_topic, inbox.source_partition, inbox.source_offset) == (event_log.requested, 0, 0)
    assert sim.stats()["calls_by_job"].get(job_id) == 1
    wait_for(lambda: ErpLedgerEntry.objects.count() == 1, timeout=60, message=processes.logs)
    wait_for(
        lambda: event_log.broker.committed(event_log.groups["KAFKA_DELIVERY_GROUP"], event_log.outcomes, 0) == 1,
        timeout=30,
        message="fan-out committed past the completed record",
    )
    assert event_log.broker.committed(event_log.ingress_group, event_log.requested, 0) == 1

    # An auditor's group re-reads the whole log; the ingress's offsets do not move.
    out = StringIO()
    call_command(
        "replay_events",
        "--from-timestamp",
        "2000-01-01T00:00:00Z",
        "--topic",
        event_log.requested,
        "--topic",
        event_log.outcomes,
        "--group",
        "analytics",
        "--into-audit",
        "--format",
        "json",
        "--idle-seconds",
        "2",
        stdout=out,
    )
    replayed = json.loads(out.getvalue())
    events = {(r["topic"], r["event_type"], r["job_id"], r["state_version"]) for r in replayed["records"]}
    assert events == {
        (event_log.requested, "extraction.requested.v1", job_id, 1),
        (event_log.outcomes, "extraction.completed.v1", job_id, 4),
    }
    assert replayed["stored"] == 2
    assert EventLogRecord.objects.filter(consumer_group="analytics", job_id=job_id).count() == 2
    assert event_log.broker.committed(event_log.ingress_group, event_log.requested, 0) == 1


def test_ingress_killed_after_the_inbox_commit_rereads_the_record_once(kafka_processes, tenant, sim, event_log):
    processes = kafka_processes
    processes.relay()
    consumer(processes, "ingress-dies", FAULT_INJECTION="ingress_after_commit")
    job_id = submit(tenant)
    assert processes.wait_exit("ingress-dies", timeout=60) != 0
    # The inbox row and READY committed; the offset was not.
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    assert ExtractionJob.objects.get(pk=job_id).state == "READY"
    assert event_log.broker.committed(event_log.ingress_group, event_log.requested, 0) is None

    consumer(processes, "ingress")
    processes.celery("workers", "llm")
    processes.scheduler()
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    wait_for(
        lambda: event_log.broker.committed(event_log.ingress_group, event_log.requested, 0) == 1,
        timeout=30,
        message="the re-read record committed",
    )
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "SUCCEEDED" and job.attempt == 1
    assert sim.stats()["calls_by_job"].get(job_id) == 1


def test_relay_killed_between_delivery_report_and_published_at_sends_a_duplicate_taken_once(
    kafka_processes, tenant, sim, event_log
):
    processes = kafka_processes
    processes.relay("relay-dies", FAULT_INJECTION="relay_after_confirm")
    job_id = submit(tenant)
    assert processes.wait_exit("relay-dies", timeout=60) != 0
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert requested.published_at is None  # in the log, never marked
    assert event_log.broker.high_watermark(event_log.requested, 0) == 1

    processes.relay()
    wait_for(
        lambda: OutboxEvent.objects.filter(pk=requested.pk, published_at__isnull=False).exists(), message="re-publish"
    )
    assert event_log.broker.high_watermark(event_log.requested, 0) == 2  # the same event twice

    # One take-in thread: the two records are taken in in their order, so the first one is
    # the inbox row's source and the second the duplicate (with more, either may win).
    consumer(processes, "ingress", threads=1)
    processes.celery("workers", "llm")
    processes.scheduler()
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    wait_for(
        lambda: event_log.broker.committed(event_log.ingress_group, event_log.requested, 0) == 2,
        timeout=30,
        message="both records committed",
    )
    inbox = ExecutionInbox.objects.get(job_id=job_id)
    assert inbox.source_offset == 0  # the first record took it in; the second was a duplicate
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
    assert ExtractionResult.objects.filter(job_id=job_id).count() == 1
    assert sim.stats()["calls_by_job"].get(job_id) == 1


def test_a_consumer_joins_and_one_is_killed_partitions_move_and_no_job_is_lost_or_doubled(
    transactional_db, broker, sim, settings, tmp_path, tenant, partitioned_event_log
):
    event_log = partitioned_event_log
    processes = kafka_system(event_log, broker=broker, sim=sim, settings=settings, log_dir=tmp_path)
    try:
        processes.relay()
        consumer(processes, "ingress-a")
        first = [submit(tenant) for _ in range(8)]
        wait_for(lambda: all(taken_in_from_a_record(j) for j in first), timeout=60, message=processes.logs)

        consumer(processes, "ingress-b")  # joins: the group rebalances over four partitions
        wait_for(
            lambda: "partitions assigned" in (tmp_path / "ingress-b.log").read_text(errors="replace"),
            timeout=60,
            message=processes.logs,
        )
        second = [submit(tenant) for _ in range(8)]
        wait_for(lambda: all(taken_in_from_a_record(j) for j in second), timeout=60, message=processes.logs)

        processes.kill("ingress-a")  # SIGKILL: no goodbye; the group notices at the session timeout
        third = [submit(tenant) for _ in range(8)]
        wait_for(lambda: all(taken_in_from_a_record(j) for j in third), timeout=90, message=processes.logs)

        jobs = first + second + third
        assert ExecutionInbox.objects.filter(job_id__in=jobs).count() == len(jobs)
        assert JobEvent.objects.filter(job_id__in=jobs, to_state="READY", reason="taken_in").count() == len(jobs)
        watermarks = {p: event_log.broker.high_watermark(event_log.requested, p) for p in range(4)}
        assert sum(watermarks.values()) == len(jobs)
        wait_for(
            lambda: all(
                event_log.broker.committed(event_log.ingress_group, event_log.requested, p) in (watermarks[p], None)
                and (watermarks[p] == 0 or event_log.broker.committed(event_log.ingress_group, event_log.requested, p))
                for p in range(4)
            ),
            timeout=30,
            message="every partition committed to its end",
        )
        log_b = (tmp_path / "ingress-b.log").read_text(errors="replace")
        assert log_b.count("partitions assigned") >= 2  # once on joining, again when a left
    finally:
        processes.stop_all()
