"""Accepted jobs reach an explainable terminal state through the real processes: relay,
RabbitMQ, the ingress and LLM Celery workers, the scheduler and the provider simulator."""

from __future__ import annotations

import pytest

from extraction.models import Attempt, ExecutionInbox, ExtractionJob, ExtractionResult, JobEvent, OutboxEvent
from tests.factories import submit
from tests.system import all_terminal, queue_depth, wait_for

pytestmark = pytest.mark.slow


def _start_pipeline(processes) -> None:
    processes.relay()
    processes.celery("workers", "ingress,llm")
    processes.scheduler()


def test_accepted_job_reaches_succeeded_with_one_paid_call(processes, tenant, sim):
    _start_pipeline(processes)
    job_id = submit(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)

    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "SUCCEEDED"
    assert job.attempt == 1
    result = ExtractionResult.objects.get(job_id=job_id)
    assert result.output["schema"] == "invoice.v1"
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.completed.v1").count() == 1
    versions = list(
        JobEvent.objects.filter(job_id=job_id).order_by("state_version").values_list("state_version", "to_state")
    )
    assert versions == [(1, "ACCEPTED"), (2, "READY"), (3, "RUNNING"), (4, "SUCCEEDED")]
    assert sim.stats()["calls_by_job"].get(job_id) == 1

    status = tenant.client.get(f"/api/v1/extraction-jobs/{job_id}").json()
    assert status["state"] == "SUCCEEDED" and status["state_version"] == 4
    assert status["result"]["output"]["schema"] == "invoice.v1"


def test_relay_killed_after_confirm_resends_and_inbox_keeps_one_row(processes, tenant, broker):
    processes.relay("relay-dies", FAULT_INJECTION="relay_after_confirm")
    job_id = submit(tenant)
    assert processes.wait_exit("relay-dies", timeout=30) != 0
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    assert requested.published_at is None  # confirmed by the broker, never marked
    assert queue_depth(broker, "ingress") == 1

    processes.relay()
    wait_for(
        lambda: OutboxEvent.objects.filter(pk=requested.pk, published_at__isnull=False).exists(), message="re-publish"
    )
    # The same event twice: at-least-once (the broker's count settles just after the confirm).
    wait_for(lambda: queue_depth(broker, "ingress") == 2, timeout=5, message="duplicate in the queue")

    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
    assert ExtractionResult.objects.filter(job_id=job_id).count() == 1


def test_ingress_killed_with_a_take_in_batch_open_loses_no_message(processes, tenant, broker):
    """The ingress SIGKILLs itself as it is about to write the requested messages it holds:
    nothing is written, nothing acked, so the broker hands every one to the next ingress."""
    processes.relay()
    processes.celery("ingress-dies", "ingress", FAULT_INJECTION="take_ins_before_write")
    jobs = [submit(tenant) for _ in range(3)]
    assert processes.wait_exit("ingress-dies", timeout=30) != 0
    assert not ExecutionInbox.objects.filter(job_id__in=jobs).exists()
    assert set(ExtractionJob.objects.filter(pk__in=jobs).values_list("state", flat=True)) == {"ACCEPTED"}
    wait_for(lambda: queue_depth(broker, "ingress") == 3, message="the unacked messages back in the queue")

    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    wait_for(lambda: all_terminal(jobs), timeout=60, message=processes.logs)
    assert ExecutionInbox.objects.filter(job_id__in=jobs).count() == 3
    assert set(ExtractionJob.objects.filter(pk__in=jobs).values_list("state", flat=True)) == {"SUCCEEDED"}


def test_ingress_killed_after_commit_before_ack_is_a_harmless_redelivery(processes, tenant, broker):
    processes.relay()
    processes.celery("ingress-dies", "ingress", FAULT_INJECTION="ingress_after_commit")
    job_id = submit(tenant)
    assert processes.wait_exit("ingress-dies", timeout=30) != 0
    # The inbox row and READY committed; the message was never acked, so it is back.
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    assert ExtractionJob.objects.get(pk=job_id).state == "READY"
    wait_for(lambda: queue_depth(broker, "ingress") == 1, message="redelivered message back in the queue")

    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    wait_for(lambda: queue_depth(broker, "ingress") == 0, message="duplicate acked")
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "SUCCEEDED" and job.attempt == 1


def test_worker_killed_after_provider_answered_is_reaped_and_retried_once(processes, tenant, sim):
    processes.relay()
    processes.celery("ingress", "ingress")
    processes.celery("llm-dies", "llm", FAULT_INJECTION="after_provider_response")
    processes.scheduler()
    job_id = submit(tenant)
    assert processes.wait_exit("llm-dies", timeout=60) != 0
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "RUNNING" and job.attempt == 1 and job.fence == 1

    processes.celery("llm", "llm")
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "SUCCEEDED"
    assert job.attempt == 2  # the dead pod did not reset the counter
    assert job.fence == 3  # claim, reap, claim
    outcomes = list(Attempt.objects.filter(job_id=job_id).order_by("number").values_list("number", "outcome"))
    assert outcomes == [(1, "lease_lost"), (2, "succeeded")]
    assert ExtractionResult.objects.filter(job_id=job_id).count() == 1
    assert sim.stats()["calls_by_job"][job_id] == 2  # EXE-6: fencing cannot undo the first paid call


def test_worker_killed_with_completions_waiting_in_its_batcher_loses_none(processes, tenant, sim):
    """The llm worker SIGKILLs itself when a slot is about to write the batch of completions that
    queued in its process: the answers were paid for and judged, nothing of them is written. The
    jobs stay RUNNING under their leases; the reaper retries each once, and no job is paid for
    more often than it was attempted."""
    sim.control(latency_mean_seconds=0.3, latency_p95_seconds=0.35)
    processes.relay()
    processes.celery("ingress", "ingress")
    processes.celery("llm-dies", "llm", FAULT_INJECTION="completions_before_write")
    processes.scheduler()
    jobs = [submit(tenant) for _ in range(4)]
    assert processes.wait_exit("llm-dies", timeout=60) != 0
    assert not ExtractionResult.objects.filter(job_id__in=jobs).exists()
    assert ExtractionJob.objects.filter(pk__in=jobs, state="RUNNING").count() >= 1

    processes.celery("llm", "llm")
    wait_for(lambda: all_terminal(jobs), timeout=90, message=processes.logs)
    calls = sim.stats()["calls_by_job"]
    for job_id in jobs:
        job = ExtractionJob.objects.get(pk=job_id)
        assert job.state == "SUCCEEDED", (job_id, job.state)
        outcomes = list(Attempt.objects.filter(job_id=job_id).order_by("number").values_list("outcome", flat=True))
        assert outcomes in (["succeeded"], ["lease_lost", "succeeded"]), outcomes
        assert calls[job_id] == len(outcomes)  # EXE-6: one paid call per attempt, no more
        assert ExtractionResult.objects.filter(job_id=job_id).count() == 1
    assert any(
        Attempt.objects.filter(job_id=job_id, outcome="lease_lost").exists() for job_id in jobs
    )  # the batch that died held at least one


def test_rate_limited_attempt_waits_for_retry_after(processes, tenant, sim):
    sim.control(rate_limit_next=1, rate_limit_retry_after_seconds=1.5)
    _start_pipeline(processes)
    job_id = submit(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    first, second = Attempt.objects.filter(job_id=job_id).order_by("number")
    assert first.outcome == "rate_limited" and first.http_status == 429
    assert first.retry_after_seconds == pytest.approx(1.5, abs=0.01)
    assert (second.started_at - first.ended_at).total_seconds() >= 1.5
    assert second.outcome == "succeeded"


def test_malformed_output_is_retried_then_classified_terminal(processes, tenant, sim):
    sim.control(malformed_rate=1.0)
    _start_pipeline(processes)
    job_id = submit(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=90, message=processes.logs)
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "FAILED_TERMINAL"
    assert job.error_class == "invalid_output"
    assert "retries exhausted after 5 attempts" in job.error_detail
    assert list(Attempt.objects.filter(job_id=job_id).values_list("outcome", flat=True)) == ["invalid_output"] * 5
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.dead_lettered.v1").count() == 1


def test_malformed_output_once_then_success(processes, tenant, sim):
    sim.control(malformed_next=1)
    _start_pipeline(processes)
    job_id = submit(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
    assert list(Attempt.objects.filter(job_id=job_id).order_by("number").values_list("outcome", flat=True)) == [
        "invalid_output",
        "succeeded",
    ]


def test_deadline_exhaustion_fails_terminally_with_a_dead_letter_message(processes, tenant, sim, broker, settings):
    settings.JOB_MIN_DEADLINE_SECONDS = 1
    sim.control(hang_rate=1.0)
    _start_pipeline(processes)
    job_id = submit(tenant, options={"deadline_seconds": 5})
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == "FAILED_TERMINAL"
    assert job.error_class == "deadline_exceeded"
    wait_for(lambda: queue_depth(broker, "extraction.dead_letters") == 1, message="dead-letter message published")


def test_all_broker_messages_purged_scheduler_still_completes_every_job(processes, tenant, broker):
    from tests.system import purge_queues

    processes.relay()
    job_ids = [submit(tenant, key=f"purge-{i}") for i in range(5)]
    wait_for(
        lambda: not OutboxEvent.objects.filter(job_id__in=job_ids, published_at__isnull=True).exists(),
        message="all published",
    )
    purge_queues(broker)  # every requested message is gone
    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    wait_for(lambda: all_terminal(job_ids), timeout=60, message=processes.logs)
    assert set(ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)) == {"SUCCEEDED"}
    assert set(JobEvent.objects.filter(job_id__in=job_ids, to_state="READY").values_list("reason", flat=True)) == {
        "ingress_recovered"
    }
