"""/metrics: the Prometheus text format written by prometheus_client, values that follow the job
and delivery rows, the limiter and the broker, in-process counters summed across processes, and
access restricted to loopback clients or the metrics token."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, transaction
from django.db.models.functions import Now
from django.test import AsyncClient, Client, RequestFactory
from django.urls import path
from kombu import Connection, Producer
from prometheus_client.parser import text_string_to_metric_families

from config import metrics, topology
from config.instruments import ACCEPT_LATENCY, ATTEMPTS
from delivery.models import (
    CircuitState,
    Delivery,
    DeliveryAttempt,
    DeliveryAttemptOutcome,
    DeliveryState,
    EndpointStatus,
    WebhookEndpoint,
    WebhookEvent,
)
from extraction.capacity import limiter
from extraction.execution import lifecycle, worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import Attempt, AttemptOutcome, ExtractionJob, JobState, OutboxEvent
from tests.factories import make_job, make_tenant, submit, take_in
from tests.local_model import free_port
from tests.system import ROOT, all_terminal, wait_for

POLICY = "p-metrics"

# The route the project's urls.py gives the view, for the test that goes through the middleware.
urlpatterns = [path("metrics", metrics.metrics_view)]

_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample by (sample name, labels), read by prometheus_client's own parser; a family
    declared twice or a sample given twice fails."""
    assert text.endswith("\n")
    declared: list[str] = []
    samples: dict[tuple[str, frozenset], float] = {}
    for family in text_string_to_metric_families(text):
        declared.append(family.name)
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"duplicate sample: {key}"
            samples[key] = sample.value
    assert len(declared) == len(set(declared)), "a family is declared twice"
    return samples


def scrape(**request_meta) -> tuple[int, str]:
    request = RequestFactory().get("/metrics", **{"REMOTE_ADDR": "127.0.0.1", **request_meta})
    response = metrics.metrics_view(request)
    return response.status_code, response.content.decode()


def scraped() -> dict[tuple[str, frozenset], float]:
    status, body = scrape()
    assert status == 200
    return parse_exposition(body)


def by_label(samples, name: str, label: str) -> dict[str, float]:
    return {dict(labels)[label]: value for (sample, labels), value in samples.items() if sample == name}


def labels(**pairs: str) -> frozenset:
    return frozenset(pairs.items())


# The scrape's broker figures come from the test vhost, its queues declared and empty.
pytestmark = pytest.mark.usefixtures("broker")


def configured_pool(settings, prefix: str, provider: dict, *, reserved_tokens: int, limits: dict) -> Iterator[str]:
    """A pool of its own (fresh name, fresh limiter keys) that POLICY's jobs use."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    settings.PROVIDER_POOLS = {name: {**provider, **limits, "reserved_tokens": reserved_tokens}}
    settings.MODEL_POLICIES = {
        POLICY: {"provider_pool": name, "reserved_tokens": reserved_tokens, "price_per_1k_tokens_micros": 0}
    }
    limiter.reset_pool(name)
    yield name
    limiter.reset_pool(name)


@pytest.fixture
def pool(db, settings):
    yield from configured_pool(
        settings,
        "metrics",
        {"provider": "builtin", "model": "m"},
        reserved_tokens=1000,
        limits={"requests_per_minute": 100, "tokens_per_minute": 50_000, "max_in_flight": 4},
    )


@pytest.fixture
def jobs(pool):
    """1 ACCEPTED, 3 READY (one of them not yet available), 1 RETRY_SCHEDULED, 1 RUNNING,
    3 SUCCEEDED, 2 FAILED_TERMINAL, 1 REVIEW_REQUIRED."""
    tenant = make_tenant()
    ids = [make_job(tenant, state=JobState.ACCEPTED, model_policy=POLICY).pk for _ in range(12)]
    for job_id in ids[1:]:
        take_in(job_id)
    # Make the eligible ones wait a known time: their available_at is 120 s ago.
    ExtractionJob.objects.filter(pk__in=ids[1:]).update(available_at=Now() - timedelta(seconds=120))
    ExtractionJob.objects.filter(pk=ids[3]).update(available_at=Now() + timedelta(seconds=300))
    ExtractionJob.objects.filter(pk=ids[4]).update(state=JobState.RETRY_SCHEDULED)
    ExtractionJob.objects.filter(pk=ids[5]).update(state=JobState.RUNNING, lease_until=Now() + timedelta(seconds=60))
    ExtractionJob.objects.filter(pk__in=ids[6:9]).update(state=JobState.SUCCEEDED)
    ExtractionJob.objects.filter(pk__in=ids[9:11]).update(state=JobState.FAILED_TERMINAL)
    ExtractionJob.objects.filter(pk=ids[11]).update(state=JobState.REVIEW_REQUIRED)
    return ids


EXPECTED_STATES = {
    "ACCEPTED": 1,
    "READY": 3,
    "RETRY_SCHEDULED": 1,
    "RUNNING": 1,
    "SUCCEEDED": 3,
    "FAILED_TERMINAL": 2,
    "REVIEW_REQUIRED": 1,
    "SPLIT": 0,  # every state is reported, none of these jobs was a bundle
}


def state_counts(samples) -> dict[str, float]:
    return by_label(samples, "extraction_jobs", "state")


# --- database figures ------------------------------------------------------------------------------


def test_job_metrics_follow_the_rows(jobs):
    samples = scraped()
    assert state_counts(samples) == EXPECTED_STATES
    assert samples[("extraction_runnable_jobs", frozenset())] == 4
    assert samples[("extraction_eligible_jobs", frozenset())] == 3  # the future one is not eligible
    # The oldest eligible job became available 120 s ago (Django's Now() is the statement's time).
    assert samples[("extraction_oldest_eligible_job_age_seconds", frozenset())] == pytest.approx(120, abs=2)
    # Every job's requested event is still unpublished: the 11 taken in skipped the relay (set-up).
    assert samples[("extraction_outbox_unpublished_events", frozenset())] == 12


def test_outbox_lag_is_the_oldest_unpublished_event_age(jobs):
    OutboxEvent.objects.filter(job_id=jobs[0]).update(created_at=Now() - timedelta(seconds=45))
    samples = scraped()
    assert samples[("extraction_outbox_publish_lag_seconds", frozenset())] == pytest.approx(45, abs=2)
    OutboxEvent.objects.update(published_at=Now())
    samples = scraped()
    assert samples[("extraction_outbox_publish_lag_seconds", frozenset())] == 0
    assert samples[("extraction_outbox_unpublished_events", frozenset())] == 0


def test_large_table_counts_are_bounded_then_estimated(jobs, settings):
    # Past the cap, the pending states are counted up to it and then estimated by the planner;
    # the terminal states come from pg_stats. After ANALYZE of this small table, both are exact.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE extraction_jobs")
    settings.METRICS_EXACT_COUNT_CAP = 2
    # A state no row is in is estimated at the planner's floor of one row.
    assert state_counts(scraped()) == {**EXPECTED_STATES, "SPLIT": 1}


def test_terminal_states_of_a_large_table_are_estimated_not_counted(jobs, settings):
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE extraction_jobs")
    # Two more jobs succeed after the statistics were taken: a count would see 5, the estimate 3.
    ExtractionJob.objects.filter(pk__in=jobs[9:11]).update(state=JobState.SUCCEEDED)
    settings.METRICS_EXACT_COUNT_CAP = 2
    assert state_counts(scraped())["SUCCEEDED"] == 3
    settings.METRICS_EXACT_COUNT_CAP = 100_000
    assert state_counts(scraped())["SUCCEEDED"] == 5  # a small table is counted


def test_review_queue_size_and_longest_wait_against_the_review_slo(jobs, settings):
    settings.REVIEW_TURNAROUND_TARGET_SECONDS = 7200
    # The fixture's review job entered review 600 s ago; a failed one is sent to review 60 s ago.
    ExtractionJob.objects.filter(pk=jobs[11]).update(updated_at=Now() - timedelta(seconds=600))
    ExtractionJob.objects.filter(pk=jobs[10]).update(
        state=JobState.REVIEW_REQUIRED, updated_at=Now() - timedelta(seconds=60)
    )
    samples = scraped()
    assert samples[("extraction_review_queue_jobs", frozenset())] == 2
    assert samples[("extraction_review_queue_oldest_age_seconds", frozenset())] == pytest.approx(600, abs=2)
    assert samples[("extraction_review_turnaround_target_seconds", frozenset())] == 7200


def test_an_empty_review_queue_has_no_wait(pool):
    samples = scraped()
    assert samples[("extraction_review_queue_jobs", frozenset())] == 0
    assert samples[("extraction_review_queue_oldest_age_seconds", frozenset())] == 0


@pytest.fixture
def deliveries(db):
    """Five endpoints (two active and closed, one active with an open breaker, one flagged
    after three 401/403, one disabled with an open breaker); deliveries to the first: three
    pending (due 300 s ago, due 60 s ago, due in 10 min), one sending, two delivered, one
    failed; and its attempt ledger: seven answers in the last minutes, one still in flight,
    and a 401 from an hour ago."""
    tenant = make_tenant()

    def endpoint(status: str, circuit: str, auth_failures: int = 0) -> WebhookEndpoint:
        return WebhookEndpoint.objects.create(
            tenant=tenant,
            url="https://erp.example/hooks",
            event_types=["extraction.completed.v1"],
            status=status,
            circuit_state=circuit,
            auth_failures=auth_failures,
        )

    receiver = endpoint(EndpointStatus.ACTIVE, CircuitState.CLOSED)
    endpoint(EndpointStatus.ACTIVE, CircuitState.CLOSED)
    endpoint(EndpointStatus.ACTIVE, CircuitState.OPEN)
    endpoint(EndpointStatus.FLAGGED, CircuitState.CLOSED, auth_failures=3)
    endpoint(EndpointStatus.DISABLED, CircuitState.OPEN)

    def delivery(state: str, due_in_seconds: float = 0, **fields) -> Delivery:
        event = WebhookEvent.objects.create(
            event_id=uuid.uuid4(), tenant=tenant, event_type="extraction.completed.v1", body="{}"
        )
        made = Delivery.objects.create(
            id=uuid.uuid4(),
            event=event,
            endpoint=receiver,
            tenant=tenant,
            event_type=event.event_type,
            state=state,
            max_attempts=15,
            **fields,
        )
        Delivery.objects.filter(pk=made.pk).update(next_attempt_at=Now() + timedelta(seconds=due_in_seconds))
        return made

    first = delivery(DeliveryState.PENDING, -300)
    delivery(DeliveryState.PENDING, -60)
    delivery(DeliveryState.PENDING, 600)
    delivery(DeliveryState.SENDING, lease_until=Now() + timedelta(seconds=60))
    delivery(DeliveryState.DELIVERED)
    delivery(DeliveryState.DELIVERED)
    delivery(DeliveryState.FAILED)

    answers = [
        (DeliveryAttemptOutcome.DELIVERED, 200),
        (DeliveryAttemptOutcome.HTTP_ERROR, 302),
        (DeliveryAttemptOutcome.HTTP_ERROR, 401),
        (DeliveryAttemptOutcome.HTTP_ERROR, 403),
        (DeliveryAttemptOutcome.HTTP_ERROR, 429),
        (DeliveryAttemptOutcome.HTTP_ERROR, 503),
        (DeliveryAttemptOutcome.TIMEOUT, None),
        (DeliveryAttemptOutcome.IN_FLIGHT, None),
    ]
    for number, (outcome, status) in enumerate(answers, start=1):
        DeliveryAttempt.objects.create(delivery=first, number=number, outcome=outcome, http_status=status)
    old = DeliveryAttempt.objects.create(
        delivery=first, number=len(answers) + 1, outcome=DeliveryAttemptOutcome.HTTP_ERROR, http_status=401
    )
    DeliveryAttempt.objects.filter(pk=old.pk).update(started_at=Now() - timedelta(hours=1))


def test_delivery_backlog_and_how_late_it_runs(deliveries):
    samples = scraped()
    assert by_label(samples, "delivery_deliveries", "state") == {"pending": 3, "sending": 1}
    assert samples[("delivery_due_deliveries", frozenset())] == 2
    assert samples[("delivery_oldest_due_age_seconds", frozenset())] == pytest.approx(300, abs=2)


def test_endpoints_are_counted_by_status_and_breaker_state_never_named(deliveries):
    samples = scraped()
    assert by_label(samples, "delivery_endpoints_by_status", "status") == {
        "pending_verification": 0,
        "active": 3,
        "flagged": 1,
        "disabled": 1,
    }
    # The disabled endpoint's open breaker is not counted: nothing is sent to it anyway.
    assert by_label(samples, "delivery_endpoints_by_breaker_state", "state") == {
        "closed": 3,
        "open": 1,
        "half_open": 0,
    }
    assert samples[("delivery_endpoints_auth_failing", frozenset())] == 1
    body = scrape()[1]
    assert not any(str(endpoint_id) in body for endpoint_id in WebhookEndpoint.objects.values_list("pk", flat=True))


def test_receivers_answers_of_the_last_minutes_by_status_class(deliveries):
    # The attempt still in flight has no answer yet; the 401 of an hour ago is outside the window.
    assert by_label(scraped(), "delivery_recent_attempts", "status_class") == {
        "2xx": 1,
        "3xx": 1,
        "401_403": 2,
        "429": 1,
        "4xx": 0,
        "5xx": 1,
        "none": 1,
    }


def test_an_empty_delivery_table_reports_zeros(pool):
    samples = scraped()
    assert by_label(samples, "delivery_deliveries", "state") == {"pending": 0, "sending": 0}
    assert samples[("delivery_oldest_due_age_seconds", frozenset())] == 0
    assert set(by_label(samples, "delivery_recent_attempts", "status_class").values()) == {0}


# --- the shared limiter ----------------------------------------------------------------------------


def test_pool_metrics_follow_the_shared_limiter(pool):
    limits = limiter.pool_limits(pool)
    assert isinstance(limiter.acquire(limits, tokens=3000), limiter.Permit)
    assert isinstance(limiter.acquire(limits, tokens=2000), limiter.Permit)
    limiter.start_cooldown(pool, seconds=20)

    samples = scraped()
    label = labels(pool=pool)

    def dim(d: str) -> frozenset:
        return labels(pool=pool, dimension=d)

    assert samples[("extraction_pool_limiter_up", label)] == 1
    assert samples[("extraction_pool_in_flight", label)] == 2
    assert samples[("extraction_pool_requests_last_minute", label)] == 2
    assert samples[("extraction_pool_tokens_last_minute", label)] == 5000
    assert samples[("extraction_pool_limit", dim("rpm"))] == 100
    assert samples[("extraction_pool_limit", dim("tpm"))] == 50_000
    assert samples[("extraction_pool_limit", dim("in_flight"))] == 4
    assert samples[("extraction_pool_headroom", dim("rpm"))] == 98
    assert samples[("extraction_pool_headroom", dim("tpm"))] == 45_000
    assert samples[("extraction_pool_headroom", dim("in_flight"))] == 2
    assert 18 < samples[("extraction_pool_cooldown_remaining_seconds", label)] <= 20
    assert samples[("extraction_pool_permits_leaked", label)] == 0
    assert samples[("extraction_pool_permits_reclaimed_total", label)] == 0


def test_a_leaked_permit_shows_until_an_acquire_reclaims_it(pool, settings):
    settings.CAPACITY_PERMIT_TTL_SECONDS = 0.3
    limits = limiter.pool_limits(pool)
    label = labels(pool=pool)
    assert isinstance(limiter.acquire(limits, tokens=100), limiter.Permit)  # its holder dies: never released
    wait_for(lambda: scraped()[("extraction_pool_permits_leaked", label)] == 1, timeout=10, interval=0.05)

    samples = scraped()
    assert samples[("extraction_pool_permits_reclaimed_total", label)] == 0
    assert samples[("extraction_pool_in_flight", label)] == 0  # past its TTL it holds no capacity

    live = limiter.acquire(limits, tokens=100)  # the next acquire takes the leaked one back
    assert isinstance(live, limiter.Permit)
    samples = scraped()
    assert samples[("extraction_pool_permits_leaked", label)] == 0
    assert samples[("extraction_pool_permits_reclaimed_total", label)] == 1
    assert samples[("extraction_pool_in_flight", label)] == 1

    limiter.release(live, actual_tokens=100)  # released in time: nothing to reclaim
    time.sleep(0.4)
    assert isinstance(limiter.acquire(limits, tokens=100), limiter.Permit)
    assert scraped()[("extraction_pool_permits_reclaimed_total", label)] == 1


# --- the broker ------------------------------------------------------------------------------------


def test_broker_queue_depths_come_from_rabbitmq_apart_from_the_backlog(pool, broker):
    with Connection(broker) as conn:
        producer = Producer(conn.default_channel)
        for _ in range(2):
            producer.publish({"hint": True}, exchange=topology.WORK_EXCHANGE, routing_key=topology.LLM)
    wait_for(lambda: scraped()[("extraction_broker_queue_depth", labels(queue="llm"))] == 2, timeout=5)

    samples = scraped()
    assert samples[("extraction_broker_up", frozenset())] == 1
    assert by_label(samples, "extraction_broker_queue_depth", "queue") == {
        queue.name: (2 if queue.name == "llm" else 0) for queue in topology.ALL_QUEUES
    }
    assert set(by_label(samples, "extraction_broker_queue_consumers", "queue").values()) == {0}
    assert samples[("extraction_runnable_jobs", frozenset())] == 0  # wake-ups are not jobs


def test_an_unreachable_broker_leaves_its_figures_out_of_a_scrape_that_still_answers(pool, settings):
    settings.BROKER_URL = f"amqp://guest:guest@127.0.0.1:{free_port()}//"
    samples = scraped()
    assert samples[("extraction_broker_up", frozenset())] == 0
    assert by_label(samples, "extraction_broker_queue_depth", "queue") == {}
    assert ("extraction_runnable_jobs", frozenset()) in samples


_seen_in_transaction: dict[str, bool] = {}


def record_database_step(_cursor) -> list:
    _seen_in_transaction["database"] = connection.in_atomic_block
    return []


def record_service_step() -> list:
    _seen_in_transaction["service"] = connection.in_atomic_block
    return []


@pytest.mark.django_db(transaction=True)
def test_service_collectors_run_after_the_database_transaction(settings):
    settings.METRICS_COLLECTORS = [f"{__name__}.record_database_step"]
    settings.METRICS_SERVICE_COLLECTORS = [f"{__name__}.record_service_step"]
    metrics.collectors.cache_clear()
    metrics.service_collectors.cache_clear()
    try:
        assert scrape()[0] == 200
    finally:
        metrics.collectors.cache_clear()
        metrics.service_collectors.cache_clear()
    assert _seen_in_transaction == {"database": True, "service": False}


# --- in-process counters and histograms --------------------------------------------------------------


def _claim(job_id) -> lifecycle.Claim:
    claim = lifecycle.claim_next_job(worker_id="metrics-test", policies=[POLICY])
    assert claim is not None and claim.job_id == job_id
    return claim


def _attempts(samples) -> Counter:
    return Counter(by_label(samples, "extraction_attempts_total", "outcome"))


@pytest.mark.django_db(transaction=True)
def test_attempts_are_counted_by_outcome_when_their_ledger_rows_commit(pool):
    tenant = make_tenant()
    before = _attempts(scraped())

    retried = make_job(tenant, model_policy=POLICY).pk
    claim = _claim(retried)
    # A transaction that rolls back wrote no ledger row, so counts nothing.
    with pytest.raises(RuntimeError), transaction.atomic():
        lifecycle.retry_or_fail(
            claim,
            report=lifecycle.AttemptReport(outcome=AttemptOutcome.RATE_LIMITED),
            retry=True,
            delay_seconds=0,
            error_class="rate_limited",
        )
        raise RuntimeError("rolled back")
    assert _attempts(scraped()) - before == Counter()
    lifecycle.retry_or_fail(
        claim,
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.RATE_LIMITED),
        retry=True,
        delay_seconds=0,
        error_class="rate_limited",
    )
    assert lifecycle.complete_job(
        _claim(retried),
        review_required=False,
        output={},
        validation={},
        policy_version="t",
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.SUCCEEDED),
    )

    reaped = make_job(tenant, model_policy=POLICY).pk
    stale = _claim(reaped)
    ExtractionJob.objects.filter(pk=reaped).update(lease_until=Now() - timedelta(seconds=1))
    assert lifecycle.reap_expired_leases() == 1
    ExtractionJob.objects.filter(pk=reaped).update(available_at=Now() + timedelta(hours=1))  # not claimed below
    assert not lifecycle.complete_job(
        stale,
        review_required=False,
        output={},
        validation={},
        policy_version="t",
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.SUCCEEDED),
    )

    failed = make_job(tenant, model_policy=POLICY).pk
    lifecycle.retry_or_fail(
        _claim(failed),
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.PERMANENT_ERROR),
        retry=False,
        delay_seconds=0,
        error_class="permanent_error",
    )

    counted = _attempts(scraped()) - before
    assert counted == Counter(
        {"rate_limited": 1, "succeeded": 1, "lease_lost": 1, "stale_completion": 1, "permanent_error": 1}
    )
    # The ledger says the same: the reaped attempt's row ends as the stale completion it became.
    ledger = Counter(Attempt.objects.values_list("outcome", flat=True))
    assert ledger == Counter({"rate_limited": 1, "succeeded": 1, "stale_completion": 1, "permanent_error": 1})


def _ended(samples) -> dict[str, float]:
    return by_label(samples, "extraction_accept_to_terminal_seconds_count", "state")


def _bucket(samples, state: str, le: str) -> float:
    return samples.get(("extraction_accept_to_terminal_seconds_bucket", labels(state=state, le=le)), 0.0)


@pytest.mark.django_db(transaction=True)
def test_accept_to_terminal_is_observed_once_where_automatic_processing_ends(pool):
    tenant = make_tenant()
    before = scraped()

    succeeded = make_job(tenant, model_policy=POLICY).pk
    ExtractionJob.objects.filter(pk=succeeded).update(created_at=Now() - timedelta(seconds=100))
    assert lifecycle.complete_job(
        _claim(succeeded),
        review_required=False,
        output={},
        validation={},
        policy_version="t",
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.SUCCEEDED),
    )
    reviewed = make_job(tenant, model_policy=POLICY).pk
    assert lifecycle.complete_job(
        _claim(reviewed),
        review_required=True,
        output={},
        validation={},
        policy_version="t",
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.REVIEW_REQUIRED),
    )
    late = make_job(tenant, model_policy=POLICY).pk
    ExtractionJob.objects.filter(pk=late).update(
        created_at=Now() - timedelta(seconds=1000), deadline_at=Now() - timedelta(seconds=1)
    )
    assert lifecycle.expire_deadlines() == 1
    exhausted = make_job(tenant, model_policy=POLICY).pk
    ExtractionJob.objects.filter(pk=exhausted).update(max_attempts=1)
    _claim(exhausted)
    ExtractionJob.objects.filter(pk=exhausted).update(lease_until=Now() - timedelta(seconds=1))
    assert lifecycle.reap_expired_leases() == 1  # its only attempt spent: FAILED_TERMINAL

    after = scraped()
    ended = Counter(_ended(after)) - Counter(_ended(before))
    assert ended == Counter({"SUCCEEDED": 1, "REVIEW_REQUIRED": 1, "FAILED_TERMINAL": 2})
    # Accepted 100 s before it succeeded: in the 120 s bucket, not the 60 s one.
    assert _bucket(after, "SUCCEEDED", "120.0") - _bucket(before, "SUCCEEDED", "120.0") == 1
    assert _bucket(after, "SUCCEEDED", "60.0") - _bucket(before, "SUCCEEDED", "60.0") == 0
    # The deadline's job waited 1000 s: past 900, within 1800.
    assert _bucket(after, "FAILED_TERMINAL", "1800.0") - _bucket(before, "FAILED_TERMINAL", "1800.0") == 2
    assert _bucket(after, "FAILED_TERMINAL", "900.0") - _bucket(before, "FAILED_TERMINAL", "900.0") == 1


@pytest.fixture
def simulated_pool(sim, settings):
    """A pool whose provider is the simulator, for the worker's own path in this process."""
    yield from configured_pool(
        settings,
        "metrics-sim",
        {
            "provider": "openai",
            "model": "sim-model",
            "base_url": sim.base_url,
            "api_key_env": "METRICS_TEST_API_KEY",
            "token_limit_parameter": "max_tokens",
        },
        reserved_tokens=6000,
        limits={"requests_per_minute": 600, "tokens_per_minute": 600_000, "max_in_flight": 4},
    )


@pytest.mark.django_db(transaction=True)
def test_a_provider_429_is_counted_for_its_pool(simulated_pool, sim):
    sim.control(rate_limit_next=1, rate_limit_retry_after_seconds=1)
    tenant = make_tenant()
    job_id = make_job(tenant, model_policy=POLICY).pk
    rate_limited = ("extraction_provider_rate_limited_total", labels(pool=simulated_pool))
    before = scraped()
    assert rate_limited not in before

    assert worker.run_slot(WorkerRuntime(worker_id="metrics-429"), max_jobs=1) == 1

    assert ExtractionJob.objects.get(pk=job_id).state == JobState.RETRY_SCHEDULED
    after = scraped()
    assert after[rate_limited] == 1
    assert _attempts(after) - _attempts(before) == Counter({"rate_limited": 1})


def accepts() -> Counter:
    return Counter(by_label(scraped(), "extraction_accept_latency_seconds_count", "status"))


def test_accept_latency_is_observed_for_posts_of_extraction_jobs_only(db, tenant):
    before = accepts()
    submit(tenant)
    refused = tenant.client.post("/api/v1/extraction-jobs", {}, format="json", HTTP_IDEMPOTENCY_KEY="k-empty")
    assert refused.status_code >= 400
    assert tenant.client.get("/api/v1/extraction-jobs").status_code == 200  # the list is no accept
    tenant.client.post("/api/v1/documents", {}, format="multipart")  # nor is another POST

    assert accepts() - before == Counter({"202": 1, str(refused.status_code): 1})


def test_accept_latency_is_observed_under_asgi_too(db):
    before = accepts()
    response = async_to_sync(AsyncClient().post)("/api/v1/extraction-jobs", {}, content_type="application/json")
    assert response.status_code == 401  # no token: still an answer to an accept
    assert accepts() - before == Counter({"401": 1})


def test_processes_sharing_a_multiprocess_directory_are_summed(pool, tmp_path, monkeypatch):
    """Two real processes count in the same directory; the scrape shows their sum, and the
    histograms merge bucket by bucket. This process is not in the directory: its own counts
    are not in that scrape."""
    count = (
        "import sys; from config.instruments import ACCEPT_LATENCY, ATTEMPTS; "
        "ATTEMPTS.labels(outcome='succeeded').inc(int(sys.argv[1])); "
        "ACCEPT_LATENCY.labels(status='202').observe(float(sys.argv[2]))"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    counting = [
        subprocess.Popen([sys.executable, "-c", count, n, seconds], cwd=ROOT, env=env)
        for n, seconds in (("2", "0.02"), ("3", "0.3"))
    ]
    assert [process.wait(timeout=60) for process in counting] == [0, 0]
    assert len(list(tmp_path.glob("*.db"))) == 4  # a counter file and a histogram file per process
    ATTEMPTS.labels(outcome="succeeded").inc(100)
    ACCEPT_LATENCY.labels(status="202").observe(0.001)

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    samples = scraped()
    assert samples[("extraction_attempts_total", labels(outcome="succeeded"))] == 5
    assert samples[("extraction_accept_latency_seconds_count", labels(status="202"))] == 2
    assert samples[("extraction_accept_latency_seconds_sum", labels(status="202"))] == pytest.approx(0.32)
    assert samples[("extraction_accept_latency_seconds_bucket", labels(status="202", le="0.005"))] == 0
    assert samples[("extraction_accept_latency_seconds_bucket", labels(status="202", le="0.025"))] == 1
    assert samples[("extraction_accept_latency_seconds_bucket", labels(status="202", le="0.5"))] == 2
    assert samples[("extraction_accept_latency_seconds_bucket", labels(status="202", le="+Inf"))] == 2
    assert ("extraction_runnable_jobs", frozenset()) in samples  # beside the database's figures


@pytest.mark.slow
def test_the_pipeline_processes_counts_reach_the_web_scrape(processes, tenant, sim, tmp_path, monkeypatch):
    """The Procfile's shape: relay, workers and scheduler count into one multiprocess directory,
    and a scrape in another process (here, the test's) sums them."""
    shared = tmp_path / "prometheus"
    sim.control(rate_limit_next=1, rate_limit_retry_after_seconds=1)
    processes.relay(PROMETHEUS_MULTIPROC_DIR=str(shared))
    processes.celery("workers", "ingress,llm", PROMETHEUS_MULTIPROC_DIR=str(shared))
    processes.scheduler(PROMETHEUS_MULTIPROC_DIR=str(shared))
    job_id = submit(tenant)
    wait_for(lambda: all_terminal([job_id]), timeout=60, message=processes.logs)
    ledger = Counter(Attempt.objects.filter(job_id=job_id).values_list("outcome", flat=True))
    assert ledger == Counter({"rate_limited": 1, "succeeded": 1})

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(shared))
    # The worker counts right after its completion commits: a scrape may come a moment before.
    wait_for(lambda: _attempts(scraped()) == ledger, timeout=10, message=lambda: scrape()[1])
    samples = scraped()
    assert samples[("extraction_provider_rate_limited_total", labels(pool="default"))] == 1
    assert _ended(samples) == {"SUCCEEDED": 1}


# --- the format and access ---------------------------------------------------------------------------


def test_labels_carry_no_job_tenant_or_endpoint_ids(jobs, deliveries):
    body = scrape()[1]
    tenant_id = str(ExtractionJob.objects.get(pk=jobs[0]).tenant_id)
    assert tenant_id not in body
    assert not any(str(job_id) in body for job_id in jobs)
    names = {key for key, _ in _LABEL.findall(body)}
    bounded = {"state", "pool", "dimension", "queue", "status", "status_class", "outcome", "le", "process", "kind"}
    assert names <= bounded


def test_exposition_parses_with_the_prometheus_client_parser(jobs):
    families = {family.name: family for family in text_string_to_metric_families(scrape()[1])}
    assert families["extraction_runnable_jobs"].type == "gauge"
    assert families["extraction_runnable_jobs"].samples[0].value == 4
    assert {s.labels["state"] for s in families["extraction_jobs"].samples} == set(EXPECTED_STATES)
    assert families["extraction_attempts"].type == "counter"
    assert families["extraction_pool_permits_reclaimed"].type == "counter"
    assert families["extraction_accept_latency_seconds"].type == "histogram"


@pytest.mark.parametrize("remote_addr", ["10.1.2.3", "203.0.113.9", "::ffff:10.0.0.1"])
def test_other_clients_without_the_token_are_refused(pool, remote_addr):
    status, body = scrape(REMOTE_ADDR=remote_addr)
    assert status == 403
    assert "extraction_" not in body


def test_forwarded_request_from_a_local_proxy_is_not_local(pool):
    assert scrape(HTTP_X_FORWARDED_FOR="203.0.113.9")[0] == 403


def test_ipv6_loopback_is_local(pool):
    assert scrape(REMOTE_ADDR="::1")[0] == 200


def test_metrics_token_admits_other_clients(pool, settings):
    settings.METRICS_TOKEN = "s3cret-metrics-token"
    assert scrape(REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token")[0] == 200
    assert scrape(REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer wrong")[0] == 403
    assert scrape(REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer ")[0] == 403


def test_an_empty_metrics_token_admits_nobody_remote(pool, settings):
    settings.METRICS_TOKEN = ""
    assert scrape(REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer ")[0] == 403


@pytest.mark.urls(__name__)
def test_served_through_the_middleware_as_prometheus_text(pool):
    response = Client().get("/metrics")  # the test client's REMOTE_ADDR is 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples = parse_exposition(response.content.decode())
    assert ("extraction_pool_limiter_up", labels(pool=pool)) in samples
    assert Client(REMOTE_ADDR="192.0.2.7").get("/metrics").status_code == 403
    assert Client().post("/metrics").status_code == 405


@pytest.mark.urls(__name__)
def test_a_scraper_asking_for_openmetrics_gets_it(pool):
    response = Client().get("/metrics", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    assert response.content.decode().endswith("# EOF\n")
