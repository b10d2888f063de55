"""Completions written in batches (extraction.execution.completions, lifecycle.complete_jobs) on
real PostgreSQL: each row under its own fence and lease, the budget given back per tenant as the
jobs one by one would, batches formed from what queued meanwhile, a refused row isolated, a lost
connection retried, and the rows locked in the one order the heartbeat also uses."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest
from django.db import DataError, connection
from django.utils import timezone

from accounts.models import Tenant, TenantUsage
from config.db import database_conninfo
from extraction.execution import completions, lifecycle
from extraction.execution.completions import write_batch
from extraction.execution.group_commit import GroupCommit, Pending
from extraction.execution.lifecycle import AttemptReport, Claim, Completion
from extraction.execution.outcomes import CompletionVerdict
from extraction.models import Attempt, ExtractionJob, ExtractionResult, JobEvent, OutboxEvent
from tests.factories import make_tenant_context, submit

pytestmark = pytest.mark.django_db(transaction=True)


def _running(tenant, count: int) -> list[Claim]:
    """``count`` jobs of ``tenant`` taken in and claimed."""
    for _ in range(count):
        job_id = submit(tenant)
        requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
        assert lifecycle.take_in_requested_event(event_id=requested.event_id, payload=requested.payload) == "taken_in"
    claims = [lifecycle.claim_next_job(worker_id="w") for _ in range(count)]
    assert all(claim is not None for claim in claims)
    return claims  # type: ignore[return-value]


def _done(claim: Claim, *, tokens: int = 0, policy_version: str = "v1") -> Completion:
    return Completion(
        claim,
        review_required=False,
        output={"schema": "invoice.v1"},
        validation={},
        policy_version=policy_version,
        report=AttemptReport(outcome="succeeded", input_tokens=tokens, output_tokens=0),
        policy_revision=claim.policy_revision,
    )


def _steal(claim: Claim) -> Claim:
    """Another worker's now: the lease expired, the reaper took it, worker b claimed it again."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE extraction_jobs SET lease_until = now() - interval '1 second' WHERE id = %s", [claim.job_id]
        )
    assert lifecycle.reap_expired_leases() == 1
    ExtractionJob.objects.filter(pk=claim.job_id).update(available_at=timezone.now() - timedelta(seconds=1))
    fresh = lifecycle.claim_next_job(worker_id="b")
    assert fresh is not None and fresh.job_id == claim.job_id
    return fresh


def test_a_batch_with_a_stale_row_completes_the_others_and_refuses_only_that_one(tenant, settings):
    settings.MODEL_POLICIES = {"default": {**settings.MODEL_POLICIES["default"], "price_per_1k_tokens_micros": 3}}
    first, stale, last = _running(tenant, 3)
    _steal(stale)
    usage_before = TenantUsage.objects.get(tenant=tenant.tenant)

    verdicts = lifecycle.complete_jobs([_done(first, tokens=500), _done(stale, tokens=500), _done(last, tokens=500)])

    assert verdicts == [CompletionVerdict.WON, CompletionVerdict.STALE, CompletionVerdict.WON]
    states = dict(ExtractionJob.objects.filter(tenant=tenant.tenant).values_list("id", "state"))
    assert states == {first.job_id: "SUCCEEDED", stale.job_id: "RUNNING", last.job_id: "SUCCEEDED"}
    assert set(ExtractionResult.objects.values_list("job_id", flat=True)) == {first.job_id, last.job_id}
    assert Attempt.objects.get(job_id=stale.job_id, fence=stale.fence).outcome == "stale_completion"
    completed = OutboxEvent.objects.filter(event_type="extraction.completed.v1")
    assert sorted(completed.values_list("job_id", flat=True)) == sorted([first.job_id, last.job_id])
    assert JobEvent.objects.filter(to_state="SUCCEEDED").count() == 2
    usage = TenantUsage.objects.get(tenant=tenant.tenant)
    assert usage.pending_jobs == usage_before.pending_jobs - 2
    # 500 tokens at 3 micros per 1,000 cost 1 micro per job (rounded down per job, as one by one
    # would charge); the sum priced at once would be 3.
    assert usage.spent_today_micros == usage_before.spent_today_micros + 2


def test_a_row_judged_with_an_outdated_policy_revision_writes_nothing_and_stays_ours(tenant):
    judged_before, judged_after = _running(tenant, 2)
    claimed_under = judged_before.policy_revision
    assert claimed_under is not None and judged_after.policy_revision == claimed_under
    Tenant.objects.filter(pk=tenant.tenant.pk).update(allowed_currencies=["EUR", "CHF"])
    usage_before = TenantUsage.objects.get(tenant=tenant.tenant)

    verdicts = lifecycle.complete_jobs(
        [_done(judged_before), replace(_done(judged_after), policy_revision=claimed_under + 1)]
    )

    assert verdicts == [CompletionVerdict.POLICY_CHANGED, CompletionVerdict.WON]
    states = dict(ExtractionJob.objects.filter(tenant=tenant.tenant).values_list("id", "state"))
    assert states == {judged_before.job_id: "RUNNING", judged_after.job_id: "SUCCEEDED"}
    assert Attempt.objects.get(job_id=judged_before.job_id, fence=judged_before.fence).outcome == "running"
    assert list(ExtractionResult.objects.values_list("job_id", flat=True)) == [judged_after.job_id]
    assert TenantUsage.objects.get(tenant=tenant.tenant).pending_jobs == usage_before.pending_jobs - 1
    # Judged again with the current revision: it wins, under the same fence and lease.
    again = replace(_done(judged_before), policy_revision=claimed_under + 1)
    assert lifecycle.complete_jobs([again]) == [CompletionVerdict.WON]
    assert Attempt.objects.get(job_id=judged_before.job_id, fence=judged_before.fence).outcome == "succeeded"


def test_a_batch_over_two_tenants_gives_each_tenant_back_its_own_share(tenant):
    other = make_tenant_context()
    mine, theirs = _running(tenant, 2), _running(other, 1)
    jobs = ExtractionJob.objects.filter(pk__in=[c.job_id for c in mine + theirs])
    reserved = {
        t: sum(j.estimated_tokens for j in jobs if j.tenant_id == t) for t in {tenant.tenant.id, other.tenant.id}
    }
    before = {u.tenant_id: u for u in TenantUsage.objects.filter(tenant_id__in=reserved)}

    assert lifecycle.complete_jobs([_done(c) for c in (mine[0], theirs[0], mine[1])]) == [CompletionVerdict.WON] * 3

    after = {u.tenant_id: u for u in TenantUsage.objects.filter(tenant_id__in=reserved)}
    for tenant_id, jobs_done in ((tenant.tenant.id, 2), (other.tenant.id, 1)):
        assert after[tenant_id].pending_jobs == before[tenant_id].pending_jobs - jobs_done
        assert after[tenant_id].reserved_tokens == before[tenant_id].reserved_tokens - reserved[tenant_id]


def test_completions_that_queue_while_a_batch_is_written_go_out_together(tenant, monkeypatch):
    """The first slot writes its own completion at once; the nine that arrive meanwhile wait and
    are written in one statement by one of them."""
    claims = _running(tenant, 10)
    batcher = GroupCommit(write_batch, max_batch=64)
    sizes: list[int] = []
    write = lifecycle.complete_jobs

    def recorded_write(batch):
        sizes.append(len(batch))
        if len(sizes) == 1:  # hold the first batch until the other nine have queued
            deadline = time.monotonic() + 10
            while batcher.waiting() < 9 and time.monotonic() < deadline:
                time.sleep(0.01)
        return write(batch)

    monkeypatch.setattr(lifecycle, "complete_jobs", recorded_write)
    verdicts: dict[uuid.UUID, bool] = {}

    def slot(claim: Claim) -> None:
        verdicts[claim.job_id] = batcher.submit(_done(claim))
        connection.close()

    first = threading.Thread(target=slot, args=(claims[0],))
    first.start()
    while not sizes:
        time.sleep(0.01)
    others = [threading.Thread(target=slot, args=(claim,)) for claim in claims[1:]]
    for thread in others:
        thread.start()
    for thread in [first, *others]:
        thread.join(timeout=30)

    assert sizes == [1, 9]
    assert verdicts == {claim.job_id: CompletionVerdict.WON for claim in claims}
    assert ExtractionJob.objects.filter(pk__in=verdicts, state="SUCCEEDED").count() == 10


def test_a_row_the_database_refuses_fails_only_its_own_slot(tenant):
    good, bad, other = _running(tenant, 3)
    batch = [Pending(_done(good)), Pending(_done(bad, policy_version="v" * 40)), Pending(_done(other))]

    write_batch(batch)

    assert [(p.settled, p.answer) for p in batch] == [
        (True, CompletionVerdict.WON),
        (True, None),
        (True, CompletionVerdict.WON),
    ]
    assert isinstance(batch[1].error, DataError)  # policy_version is varchar(32)
    assert (batch[0].error, batch[2].error) == (None, None)
    states = dict(ExtractionJob.objects.filter(tenant=tenant.tenant).values_list("id", "state"))
    assert states == {good.job_id: "SUCCEEDED", bad.job_id: "RUNNING", other.job_id: "SUCCEEDED"}


def _backends_waiting_for_a_lock(count: int, timeout: float = 10.0) -> list[int]:
    """The pids of the ``count`` backends of this database waiting for a row lock."""
    deadline = time.monotonic() + timeout
    rows: list[tuple[int]] = []
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            rows = cursor.fetchall()
        if len(rows) == count:
            return [row[0] for row in rows]
        time.sleep(0.02)
    raise AssertionError(f"{len(rows)} backends waited for a lock, not {count}")


def test_a_batch_whose_connection_dies_is_written_again(tenant, caplog):
    claims = _running(tenant, 3)
    first = min(claims, key=lambda c: c.job_id)
    batch = [Pending(_done(c)) for c in claims]
    with psycopg.connect(database_conninfo(), autocommit=False) as blocker:
        blocker.execute("SELECT 1 FROM extraction_jobs WHERE id = %s FOR UPDATE", [first.job_id])
        writer = threading.Thread(target=lambda: (write_batch(batch), connection.close()))
        writer.start()
        (waiting,) = _backends_waiting_for_a_lock(1)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [waiting])
        blocker.rollback()
    writer.join(timeout=30)

    assert [(p.answer, p.error) for p in batch] == [(CompletionVerdict.WON, None)] * 3
    assert "a batch of completions failed: retrying it" in caplog.text
    assert ExtractionJob.objects.filter(tenant=tenant.tenant, state="SUCCEEDED").count() == 3


def test_a_batch_and_the_heartbeat_lock_their_jobs_in_the_same_order(tenant):
    """Both wait for the lowest id first, so neither holds a row the other waits behind: the
    rest stay free (a batch taking its rows in its own order would hold one and wait for the
    other, with the heartbeat doing the opposite: a deadlock)."""
    low, high = sorted(_running(tenant, 2), key=lambda c: c.job_id)
    results: dict[str, object] = {}
    with psycopg.connect(database_conninfo(), autocommit=False) as blocker:
        blocker.execute("SELECT 1 FROM extraction_jobs WHERE id = %s FOR UPDATE", [low.job_id])

        def beat() -> None:
            results["lost"] = lifecycle.extend_leases([high, low])
            connection.close()

        def complete() -> None:
            results["won"] = lifecycle.complete_jobs([_done(high), _done(low)])
            connection.close()

        heartbeat = threading.Thread(target=beat)
        heartbeat.start()
        _backends_waiting_for_a_lock(1)
        batch = threading.Thread(target=complete)
        batch.start()
        _backends_waiting_for_a_lock(2)
        # Both wait behind the lowest id; nobody holds the other row.
        blocker.execute("SELECT 1 FROM extraction_jobs WHERE id = %s FOR UPDATE NOWAIT", [high.job_id])
        blocker.rollback()
    heartbeat.join(timeout=30)
    batch.join(timeout=30)

    assert results == {"lost": set(), "won": [CompletionVerdict.WON, CompletionVerdict.WON]}


def test_the_process_batcher_takes_its_size_from_the_settings(settings, process_batchers_reset):
    settings.WORKER_COMPLETION_BATCH = 7
    assert completions.batcher().max_batch == 7
    assert completions.batcher() is completions.batcher()
