"""Fairness at the claim (BP-4): weighted shares across tenants, per-tenant caps, priority
with aging. Driven through claim_next_job on real PostgreSQL rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from extraction.execution.lifecycle import claim_next_job
from extraction.models import ExtractionJob, JobState
from tests.factories import make_ready_jobs, make_tenant

pytestmark = pytest.mark.django_db


def test_single_job_tenant_is_served_next_despite_another_tenants_backlog():
    big = make_tenant("big")
    small = make_tenant("small")
    make_ready_jobs(big, 10_000)
    for _ in range(30):  # the big tenant fills the workers first
        assert claim_next_job(worker_id="w").tenant_id == big.pk
    # The small tenant's single job arrives later than every one of big's jobs...
    make_ready_jobs(small, 1, available_at=timezone.now() - timedelta(minutes=1))
    # ...and is the very next claim: it has nothing running, big has 30.
    assert claim_next_job(worker_id="w").tenant_id == small.pk


def test_claims_alternate_between_tenants_by_weight():
    heavy = make_tenant("heavy", weight=3)
    light = make_tenant("light", weight=1)
    make_ready_jobs(heavy, 100)
    make_ready_jobs(light, 100)
    claimed = [claim_next_job(worker_id="w").tenant_id for _ in range(40)]
    assert claimed.count(heavy.pk) == 30 and claimed.count(light.pk) == 10


def test_tenant_at_its_in_flight_cap_is_skipped():
    capped = make_tenant("capped", max_in_flight=2)
    other = make_tenant("other")
    make_ready_jobs(capped, 10, available_at=timezone.now() - timedelta(hours=2))
    make_ready_jobs(other, 10)
    claimed = [claim_next_job(worker_id="w").tenant_id for _ in range(8)]
    assert claimed.count(capped.pk) == 2


def test_no_claim_when_every_tenant_is_capped():
    capped = make_tenant("capped", max_in_flight=1)
    make_ready_jobs(capped, 3)
    assert claim_next_job(worker_id="w") is not None
    assert claim_next_job(worker_id="w") is None
    assert ExtractionJob.objects.filter(state=JobState.READY).count() == 2


def test_interactive_goes_first_but_a_long_waiting_batch_job_is_not_starved(settings):
    settings.INTERACTIVE_PRIORITY_BOOST_SECONDS = 300
    tenant = make_tenant("mixed", max_in_flight=100_000)
    t0 = timezone.now() - timedelta(hours=2)
    [batch] = make_ready_jobs(tenant, 1, priority="batch", available_at=t0)
    # A sustained stream of interactive work: one job per second, starting with the batch job.
    make_ready_jobs(tenant, 1000, priority="interactive", available_at=t0, step=timedelta(seconds=1))
    order = [claim_next_job(worker_id="w").job_id for _ in range(400)]
    position = order.index(batch.pk)
    # Interactive jobs that arrived less than the boost after it go first, then it runs:
    # its wait is bounded by boost / inter-arrival time.
    assert 290 <= position <= 302


def test_claim_statement_uses_skip_locked_and_stays_cheap_on_a_large_table():
    from extraction.execution.lifecycle import CLAIM

    claim_fair = CLAIM
    assert "SKIP LOCKED" in claim_fair
    # A realistic shape: a long terminal history and several tenants with backlogs.
    tenants = [make_tenant(f"large-{n}") for n in range(5)]
    for tenant in tenants:
        make_ready_jobs(tenant, 4_000)
    history = make_ready_jobs(make_tenant("history"), 1)[0]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO extraction_jobs (id, tenant_id, document_id, document_version, idempotency_key, request_hash,
                schema, model_policy, options, priority_class, state, state_version, attempt, max_attempts, fence,
                lease_owner, available_at, deadline_at, estimated_tokens, byte_size, error_class, error_detail,
                created_at, updated_at)
            SELECT gen_random_uuid(), t.id, %s, %s, 'h-' || t.slug || '-' || n, '', 'invoice.v1', 'default', '{}',
                   'batch', 'SUCCEEDED', 4, 1, 5, 1, '', now() - interval '1 day', now() + interval '1 day',
                   6000, 10, '', '', now() - interval '1 day', now() - interval '1 day'
              FROM generate_series(1, 40000) AS n, accounts_tenant t WHERE t.slug LIKE 'large-%%'
            """,
            [history.document_id, history.document_version],
        )
        cursor.execute("ANALYZE extraction_jobs")
        # The whole claim, as the worker runs it (it takes a job: the test's transaction is
        # rolled back afterwards).
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {claim_fair}",
            {
                "worker": "w",
                "lease": 60,
                "policies": ["default"],
                "boost": 300,
                "per_tenant": 4,
                "window": 64,
                "count": 1,
            },
        )
        plan = cursor.fetchone()[0][0]
    text = str(plan)
    # The runnable rows are reached through the fair-claim index, never by scanning the table
    # or a tenant's whole history, so the cost does not grow with the table.
    assert "job_fair_claim_idx" in text
    assert "Seq Scan on extraction_jobs" not in text
    assert plan["Plan"]["Shared Hit Blocks"] + plan["Plan"].get("Shared Read Blocks", 0) < 2_000


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_concurrent_claimers_all_get_distinct_jobs():
    import threading

    tenant = make_tenant("burst", max_in_flight=1000)
    make_ready_jobs(tenant, 200)
    barrier = threading.Barrier(24)
    claimed: list = []
    lock = threading.Lock()

    def claim():
        barrier.wait()
        try:
            result = claim_next_job(worker_id="w")
            with lock:
                claimed.append(result)
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert None not in claimed  # more claimers than fair candidates: nobody comes back empty
    assert len({c.job_id for c in claimed}) == 24


def _claim_batch_rolled_back(count: int) -> list:
    from django.db import transaction

    from extraction.execution.lifecycle import claim_next_jobs

    with transaction.atomic():
        claims = claim_next_jobs(worker_id="w", count=count)
        transaction.set_rollback(True)
    return claims


def test_a_batch_claim_takes_the_jobs_single_claims_would_take_in_turn(settings):
    """Weighted tenants, an idle one, interactive and batch work, a capped tenant: one claim of
    twelve takes the twelve jobs, in the order, that twelve claims one after another take."""
    settings.INTERACTIVE_PRIORITY_BOOST_SECONDS = 300
    heavy, light, idle = make_tenant("heavy", weight=3), make_tenant("light"), make_tenant("idle")
    capped = make_tenant("capped", max_in_flight=2)
    now = timezone.now()
    make_ready_jobs(heavy, 10, available_at=now - timedelta(minutes=30), step=timedelta(seconds=1))
    make_ready_jobs(light, 6, available_at=now - timedelta(minutes=40), step=timedelta(seconds=7))
    make_ready_jobs(
        light, 3, priority="interactive", available_at=now - timedelta(minutes=2), step=timedelta(seconds=2)
    )
    make_ready_jobs(idle, 1, available_at=now - timedelta(seconds=5))
    make_ready_jobs(capped, 5, available_at=now - timedelta(hours=1), step=timedelta(seconds=3))
    # No two jobs of a tenant share a time: among equal times a tenant's probe returns any few
    # (ORDER BY available_at, then index order), a choice a batch and single claims may make apart.

    batch = _claim_batch_rolled_back(12)
    one_by_one = [claim_next_job(worker_id="w") for _ in range(12)]

    assert [c.job_id for c in batch] == [c.job_id for c in one_by_one]
    assert [c.tenant_id for c in batch].count(capped.pk) == 2


def test_a_batch_claim_keeps_each_tenants_cap_per_job():
    capped = make_tenant("capped", max_in_flight=3)
    make_ready_jobs(capped, 8)
    assert claim_next_job(worker_id="w") is not None  # one running already
    claims = _claim_batch_rolled_back(8)
    assert [c.tenant_id for c in claims] == [capped.pk, capped.pk]


def test_a_batch_claim_says_whether_a_job_was_left_over():
    tenant = make_tenant("three")
    make_ready_jobs(tenant, 3)
    assert {c.more_eligible for c in _claim_batch_rolled_back(2)} == {True}
    assert {c.more_eligible for c in _claim_batch_rolled_back(3)} == {False}
    assert len(_claim_batch_rolled_back(5)) == 3
