"""/metrics: the Prometheus text format, values that follow the job rows and the limiter, and
access restricted to loopback clients or the metrics token."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models.functions import Now
from django.test import Client, RequestFactory
from django.urls import path

from config import metrics
from extraction.capacity import limiter
from extraction.models import ExtractionJob, JobState, OutboxEvent
from tests.factories import make_job, make_tenant, take_in

POLICY = "p-metrics"

# The route the project's urls.py gives the view, for the test that goes through the middleware.
urlpatterns = [path("metrics", metrics.metrics_view)]

# The text exposition format, strictly: HELP/TYPE comments, then samples of declared metrics.
_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_HELP = re.compile(rf"^# HELP (?P<name>{_NAME}) .*$")
_TYPE = re.compile(rf"^# TYPE (?P<name>{_NAME}) (counter|gauge|histogram|summary|untyped)$")
_SAMPLE = re.compile(
    rf'^(?P<name>{_NAME})(?:\{{(?P<labels>[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
    rf'(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*)\}})? (?P<value>[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|NaN|Inf))$'
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample by (name, labels); fails on any line the format does not allow."""
    assert text.endswith("\n")
    typed: set[str] = set()
    samples: dict[tuple[str, frozenset], float] = {}
    for line in text.splitlines():
        if match := _TYPE.match(line):
            assert match["name"] not in typed, f"TYPE declared twice: {line}"
            typed.add(match["name"])
        elif _HELP.match(line):
            continue
        else:
            match = _SAMPLE.match(line)
            assert match, f"not a valid exposition line: {line!r}"
            assert match["name"] in typed, f"sample before its TYPE: {line}"
            labels = frozenset(_LABEL.findall(match["labels"] or ""))
            key = (match["name"], labels)
            assert key not in samples, f"duplicate sample: {line}"
            samples[key] = float(match["value"])
    return samples


def scrape(**request_meta) -> tuple[int, str]:
    request = RequestFactory().get("/metrics", **{"REMOTE_ADDR": "127.0.0.1", **request_meta})
    response = metrics.metrics_view(request)
    return response.status_code, response.content.decode()


@pytest.fixture
def pool(db, settings):
    name = f"metrics-{uuid.uuid4().hex[:10]}"
    settings.PROVIDER_POOLS = {
        name: {
            "provider": "builtin",
            "model": "m",
            "requests_per_minute": 100,
            "tokens_per_minute": 50_000,
            "max_in_flight": 4,
            "reserved_tokens": 1000,
        }
    }
    settings.MODEL_POLICIES = {
        POLICY: {"provider_pool": name, "reserved_tokens": 1000, "price_per_1k_tokens_micros": 0}
    }
    limiter.reset_pool(name)
    yield name
    limiter.reset_pool(name)


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
}


def state_counts(samples) -> dict[str, float]:
    return {dict(labels)["state"]: value for (name, labels), value in samples.items() if name == "extraction_jobs"}


def test_job_metrics_follow_the_rows(jobs):
    status, body = scrape()
    assert status == 200
    samples = parse_exposition(body)
    assert state_counts(samples) == EXPECTED_STATES
    assert samples[("extraction_runnable_jobs", frozenset())] == 4
    assert samples[("extraction_eligible_jobs", frozenset())] == 3  # the future one is not eligible
    # The oldest eligible job became available 120 s ago (Django's Now() is the statement's time).
    assert samples[("extraction_oldest_eligible_job_age_seconds", frozenset())] == pytest.approx(120, abs=2)
    # Every job's requested event is still unpublished: the 11 taken in skipped the relay (set-up).
    assert samples[("extraction_outbox_unpublished_events", frozenset())] == 12


def test_outbox_lag_is_the_oldest_unpublished_event_age(jobs):
    OutboxEvent.objects.filter(job_id=jobs[0]).update(created_at=Now() - timedelta(seconds=45))
    samples = parse_exposition(scrape()[1])
    assert samples[("extraction_outbox_publish_lag_seconds", frozenset())] == pytest.approx(45, abs=2)
    OutboxEvent.objects.update(published_at=Now())
    samples = parse_exposition(scrape()[1])
    assert samples[("extraction_outbox_publish_lag_seconds", frozenset())] == 0
    assert samples[("extraction_outbox_unpublished_events", frozenset())] == 0


def test_large_table_counts_are_bounded_then_estimated(jobs, settings):
    # Past the cap, the pending states are counted up to it and then estimated by the planner;
    # the terminal states come from pg_stats. After ANALYZE of this small table, both are exact.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE extraction_jobs")
    settings.METRICS_EXACT_COUNT_CAP = 2
    samples = parse_exposition(scrape()[1])
    assert state_counts(samples) == EXPECTED_STATES


def test_pool_metrics_follow_the_shared_limiter(pool):
    limits = limiter.pool_limits(pool)
    assert isinstance(limiter.acquire(limits, tokens=3000), limiter.Permit)
    assert isinstance(limiter.acquire(limits, tokens=2000), limiter.Permit)
    limiter.start_cooldown(pool, seconds=20)

    samples = parse_exposition(scrape()[1])
    label = frozenset({("pool", pool)})

    def dim(d: str) -> frozenset:
        return frozenset({("pool", pool), ("dimension", d)})

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


def test_labels_carry_no_job_or_tenant_ids(jobs):
    body = scrape()[1]
    tenant_id = str(ExtractionJob.objects.get(pk=jobs[0]).tenant_id)
    assert tenant_id not in body
    assert not any(str(job_id) in body for job_id in jobs)
    names = {key for key, _ in _LABEL.findall(body)}
    assert names <= {"state", "pool", "dimension"}


def test_exposition_parses_with_the_prometheus_client_parser(jobs):
    parser = pytest.importorskip("prometheus_client.parser")
    families = {family.name: family for family in parser.text_string_to_metric_families(scrape()[1])}
    assert families["extraction_runnable_jobs"].samples[0].value == 4
    assert {s.labels["state"] for s in families["extraction_jobs"].samples} == set(EXPECTED_STATES)


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


def test_terminal_states_of_a_large_table_are_estimated_not_counted(jobs, settings):
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE extraction_jobs")
    # Two more jobs succeed after the statistics were taken: a count would see 5, the estimate 3.
    ExtractionJob.objects.filter(pk__in=jobs[9:11]).update(state=JobState.SUCCEEDED)
    settings.METRICS_EXACT_COUNT_CAP = 2
    counts = state_counts(parse_exposition(scrape()[1]))
    assert counts["SUCCEEDED"] == 3
    settings.METRICS_EXACT_COUNT_CAP = 100_000
    assert state_counts(parse_exposition(scrape()[1]))["SUCCEEDED"] == 5  # a small table is counted


@pytest.mark.urls(__name__)
def test_served_through_the_middleware_as_prometheus_text(pool):
    response = Client().get("/metrics")  # the test client's REMOTE_ADDR is 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert ("extraction_pool_limiter_up", frozenset({("pool", pool)})) in parse_exposition(response.content.decode())
    assert Client(REMOTE_ADDR="192.0.2.7").get("/metrics").status_code == 403
    assert Client().post("/metrics").status_code == 405
