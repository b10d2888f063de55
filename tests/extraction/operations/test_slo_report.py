"""The SLO report (OPS-4): exact figures over a window of jobs whose histories the test wrote,
the completion SLI that fast failures and review-everything cannot improve, tenant scoping,
the window's bounds, ERP delivery latency, and the command's refusals."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Tenant
from delivery import dispatch, fan_out
from delivery.endpoints import register_endpoint
from delivery.models import Delivery, DeliveryAttempt
from extraction.execution import lifecycle
from extraction.models import AttemptOutcome, ExtractionJob, OutboxEvent
from tests.extraction.operations.history import (
    claim,
    complete,
    decide,
    fail,
    paid,
    reap,
    relive,
    retry,
    unpaid,
    waiting_job,
)
from tests.factories import make_document, make_tenant, take_in

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _report(since: datetime, until: datetime, tenant: Tenant | None = None) -> dict[str, Any]:
    out = StringIO()
    args = ["--since", since.isoformat(), "--until", until.isoformat(), "--format", "json"]
    if tenant is not None:
        args += ["--tenant", tenant.slug]
    call_command("slo_report", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def window() -> tuple[datetime, datetime]:
    """Three hours ago to one hour ago: every job's target (900 s) has passed by now."""
    now = timezone.now().replace(microsecond=0)
    return now - timedelta(hours=3), now - timedelta(hours=1)


@pytest.fixture
def paying_pool(settings):
    """The default pool calls an OpenAI-compatible provider, which bills: a reaped attempt of
    its jobs may have been paid."""
    settings.PROVIDER_POOLS = {"default": {**settings.PROVIDER_POOLS["default"], "provider": "openai"}}


@pytest.mark.django_db
def test_a_window_of_jobs_gives_exact_figures(window, reviewer, paying_pool, settings):
    since, _ = window
    settings.SLO_DOCUMENT_CONTENT_TYPES = ("application/pdf", "text/plain")  # images are not promised
    tenant = make_tenant()
    at = [since + timedelta(minutes=10 * n) for n in range(9)]

    # 1. A paid call, SUCCEEDED a minute after acceptance: good.
    fast = waiting_job(tenant)
    complete(claim(fast), paid(AttemptOutcome.SUCCEEDED, 1000, 200))
    relive(fast, at[0], [0, 1, 2, 60], published_after=0.1)
    # 2. Its worker died (reaped: possibly paid), the second call SUCCEEDED at 1,200 s: late.
    slow = waiting_job(tenant)
    reap(slow)
    complete(claim(slow), paid(AttemptOutcome.SUCCEEDED, 1500, 300))
    relive(slow, at[1], [0, 1, 2, 300, 310, 1200], published_after=0.2)
    # 3. A 429 without usage, then unusable output: FAILED_TERMINAL at 30 s.
    failed = waiting_job(tenant)
    retry(claim(failed), paid(AttemptOutcome.RATE_LIMITED))
    fail(claim(failed), paid(AttemptOutcome.INVALID_OUTPUT, 800, 100), error_class="invalid_output")
    relive(failed, at[2], [0, 1, 2, 10, 20, 30], published_after=0.3)
    # 4. The rules sent it to review at 100 s, a reviewer approved it at 600 s: good.
    approved = waiting_job(tenant)
    complete(claim(approved), unpaid(AttemptOutcome.REVIEW_REQUIRED), review=True)
    decide(approved, reviewer, approve=True)
    relive(approved, at[3], [0, 1, 2, 100, 600], published_after=0.4)
    # 5. Review at 100 s, rejected at 2,000 s: decided, late.
    rejected = waiting_job(tenant)
    complete(claim(rejected), unpaid(AttemptOutcome.REVIEW_REQUIRED), review=True)
    decide(rejected, reviewer, approve=False)
    relive(rejected, at[4], [0, 1, 2, 100, 2000], published_after=0.5)
    # 6. Review at 200 s, no reviewer yet: open past its target (not past the 4 h review SLO).
    waiting = waiting_job(tenant)
    complete(claim(waiting), unpaid(AttemptOutcome.REVIEW_REQUIRED), review=True)
    relive(waiting, at[5], [0, 1, 2, 200], published_after=0.6)
    # 7. A PNG, SUCCEEDED with a paid call: a class the SLO does not promise, counted apart only.
    image = waiting_job(tenant, document=make_document(tenant, content=PNG))
    complete(claim(image), paid(AttemptOutcome.SUCCEEDED, 5000, 5000))
    relive(image, at[6], [0, 1, 2, 5], published_after=0.1)
    # 8. Still READY, taken in 7 s after acceptance: open past its target.
    ready = waiting_job(tenant)
    relive(ready, at[7], [0, 7], published_after=0.7)

    report = _report(*window, tenant=tenant)

    assert report["jobs"] == {
        "accepted": 8,
        "supported": 7,
        "unsupported": {"count": 1, "by_class": [{"content_type": "image/png", "schema": "invoice.v1", "count": 1}]},
    }
    assert report["completion"] == {
        "sli": pytest.approx(2 / 7),
        "good": 2,
        "denominator": 7,
        "settled": True,
        "completed_in_target": 2,
        "completed_late": 2,
        "failed_in_target": 1,
        "failed_late": 0,
        "awaiting_review_in_target": 0,
        "awaiting_review_past_target": 1,
        "in_progress_in_target": 0,
        "in_progress_past_target": 1,
    }
    assert report["failures"] == {"count": 1, "rate": pytest.approx(1 / 7), "by_reason": {"invalid_output": 1}}
    assert report["late"] == {
        "terminal_past_target": {"count": 2, "examples": [str(slow), str(rejected)]},
        "open_past_target": {"count": 2, "examples": [str(waiting), str(ready)]},
    }
    assert report["review"] == {
        "entered": 3,
        "rate": pytest.approx(3 / 7),
        "decided": 2,
        "approved": 1,
        "rejected": 1,
        "decided_in_target": 2,
        "sli": pytest.approx(2 / 3),
        "awaiting_in_target": 1,
        "awaiting_past_target": 0,
        # turnarounds 500 s and 1,900 s
        "turnaround_seconds": {"count": 2, "p50": 1200.0, "p95": pytest.approx(1830.0), "p99": pytest.approx(1886.0)},
    }
    latency = report["accept_latency"]
    assert latency["recorded"] is False and "not recorded" in latency["note"]
    # published 0.1 … 0.7 s after acceptance; taken in at 1 s (six jobs) and 7 s
    assert latency["accepted_to_published_seconds"] == {
        "count": 7,
        "p50": pytest.approx(0.4),
        "p95": pytest.approx(0.67),
        "p99": pytest.approx(0.694),
    }
    assert latency["unpublished"] == 0
    assert latency["accepted_to_taken_in_seconds"] == {
        "count": 7,
        "p50": pytest.approx(1.0),
        "p95": pytest.approx(5.2),
        "p99": pytest.approx(6.64),
    }
    assert report["model_calls"] == {
        "jobs": 7,
        "paid_calls": 4,  # fast 1, slow 1 (its reaped attempt named no provider), failed 2
        "paid_calls_per_job": pytest.approx(4 / 7),
        "jobs_with_paid_calls": 3,
        "max_paid_calls_per_job": 2,
        # calls per job: 0, 0, 0, 0, 1, 1, 2
        "paid_calls_per_job_percentiles": {
            "count": 7,
            "p50": 0.0,
            "p95": pytest.approx(1.7),
            "p99": pytest.approx(1.94),
        },
        "possibly_paid_calls": 1,
        "paid_calls_without_usage": 1,
        "input_tokens": 3300,
        "output_tokens": 600,
        # (1,200 + 1,800 + 900) tokens at 2,000 micro-units per 1,000
        "cost_micros": 7800.0,
        "cost_micros_per_job": pytest.approx(7800 / 7),
        "unpriced_policies": [],
    }
    assert report["sections"]["erp_delivery_latency"] == {
        "title": "ERP delivery latency (terminal transition to first 2xx, per delivery)",
        "terminal_events": 5,  # fast, slow and approved completed; failed and rejected dead-lettered
        "deliveries": 0,
        "delivered": 0,
        "not_delivered": 0,
        "latency_seconds": {"count": 0, "p50": None, "p95": None, "p99": None},
    }


def _four_jobs(outcome: str, since: datetime) -> Tenant:
    """Four jobs accepted at the same moments: two complete in 60 s; the other two, as
    ``outcome`` says: complete in 1,200 s (late), fail in 5 s, or every one of the four goes
    to review in 5 s and waits there."""
    tenant = make_tenant()
    for n in range(4):
        job = waiting_job(tenant)
        taken = claim(job)
        if outcome == "review_everything":
            complete(taken, unpaid(AttemptOutcome.REVIEW_REQUIRED), review=True)
            relive(job, since + timedelta(minutes=n), [0, 1, 2, 5])
        elif n < 2:
            complete(taken, unpaid(AttemptOutcome.SUCCEEDED))
            relive(job, since + timedelta(minutes=n), [0, 1, 2, 60])
        elif outcome == "slow":
            complete(taken, unpaid(AttemptOutcome.SUCCEEDED))
            relive(job, since + timedelta(minutes=n), [0, 1, 2, 1200])
        else:
            fail(taken, unpaid(AttemptOutcome.INVALID_OUTPUT), error_class="invalid_output")
            relive(job, since + timedelta(minutes=n), [0, 1, 2, 5])
    return tenant


@pytest.mark.django_db
def test_failing_fast_or_sending_everything_to_review_does_not_improve_the_completion_sli(window):
    since, _ = window
    honest = _report(*window, tenant=_four_jobs("slow", since))
    fails_fast = _report(*window, tenant=_four_jobs("fail_fast", since))
    reviews_all = _report(*window, tenant=_four_jobs("review_everything", since))

    honest_sli, fail_fast_sli, review_all_sli = 0.5, 0.5, 0.0
    assert honest["completion"]["sli"] == honest_sli
    assert fails_fast["completion"]["sli"] == fail_fast_sli  # the two slow jobs, failed in 5 s: not good
    assert reviews_all["completion"]["sli"] == review_all_sli  # waiting for a reviewer is not done
    assert honest["completion"]["denominator"] == fails_fast["completion"]["denominator"] == 4
    assert reviews_all["completion"]["denominator"] == 4
    assert fails_fast["completion"]["failed_in_target"] == 2 and fails_fast["failures"]["count"] == 2
    assert reviews_all["review"]["rate"] == 1.0 and reviews_all["completion"]["awaiting_review_past_target"] == 4


@pytest.mark.django_db
def test_a_reviewers_decision_within_the_target_counts_and_review_has_its_own_slo(window, reviewer, settings):
    settings.REVIEW_TURNAROUND_TARGET_SECONDS = 300
    since, _ = window
    tenant = make_tenant()
    for n, decided_after in enumerate((200, 700)):
        job = waiting_job(tenant)
        complete(claim(job), unpaid(AttemptOutcome.REVIEW_REQUIRED), review=True)
        decide(job, reviewer, approve=True)
        relive(job, since + timedelta(minutes=n), [0, 1, 2, 10, 10 + decided_after])

    report = _report(*window, tenant=tenant)

    assert report["completion"]["good"] == 2  # both approved within 900 s of acceptance
    assert report["review"]["decided_in_target"] == 1  # only one within the 300 s review SLO
    assert report["review"]["sli"] == 0.5
    assert report["targets"]["review_turnaround_target_seconds"] == 300


@pytest.mark.django_db
def test_each_tenant_is_judged_by_its_own_target_and_a_report_can_be_scoped_to_one(window):
    since, _ = window
    strict = make_tenant(completion_target_seconds=30)
    lenient = make_tenant()
    for tenant in (strict, lenient):
        job = waiting_job(tenant)
        complete(claim(job), unpaid(AttemptOutcome.SUCCEEDED))
        relive(job, since, [0, 1, 2, 60])

    everyone = _report(*window)
    assert everyone["window"]["tenant"] is None
    assert everyone["targets"]["completion_targets_seconds"] == [30, 900]
    assert (everyone["completion"]["denominator"], everyone["completion"]["good"]) == (2, 1)
    only_strict = _report(*window, tenant=strict)
    assert only_strict["window"]["tenant"] == strict.slug
    assert (only_strict["completion"]["denominator"], only_strict["completion"]["good"]) == (1, 0)
    assert only_strict["targets"]["completion_targets_seconds"] == [30]
    only_lenient = _report(*window, tenant=lenient)
    assert (only_lenient["completion"]["denominator"], only_lenient["completion"]["good"]) == (1, 1)


@pytest.mark.django_db
def test_a_completion_target_must_be_positive():
    tenant = make_tenant()
    assert tenant.completion_target_seconds == 900
    with pytest.raises(IntegrityError, match="tenant_completion_target_positive"), transaction.atomic():
        Tenant.objects.filter(pk=tenant.pk).update(completion_target_seconds=0)


@pytest.mark.django_db
def test_the_window_holds_jobs_accepted_from_since_up_to_but_not_at_until(window):
    since, until = window
    tenant = make_tenant()
    at_since, at_until, before = waiting_job(tenant), waiting_job(tenant), waiting_job(tenant)
    relive(at_since, since, [0, 1])
    relive(at_until, until, [0, 1])
    relive(before, since - timedelta(microseconds=1), [0, 1])

    report = _report(since, until, tenant=tenant)

    assert report["jobs"]["accepted"] == 1
    assert report["late"]["open_past_target"]["examples"] == [str(at_since)]
    assert report["window"]["since"] == since.isoformat().replace("+00:00", "Z")


@pytest.mark.django_db
def test_an_open_job_within_its_target_leaves_the_window_unsettled():
    tenant = make_tenant()
    job = waiting_job(tenant)
    accepted = ExtractionJob.objects.get(pk=job).created_at

    report = _report(accepted - timedelta(minutes=1), accepted + timedelta(minutes=1), tenant=tenant)

    assert report["completion"]["in_progress_in_target"] == 1
    assert report["completion"]["settled"] is False
    assert report["completion"]["sli"] == 0.0


@pytest.mark.django_db(transaction=True)
def test_erp_delivery_latency_runs_from_the_terminal_transition_to_the_first_2xx(broker, erp, window):
    since, _ = window
    tenant = make_tenant()
    register = register_endpoint(tenant=tenant, url=erp.url, event_types=["extraction.completed.v1"])
    assert dispatch.deliver(register.verification_delivery_id) == "delivered"
    delivered_after = {}
    for n, latency in enumerate((10.0, 30.0, None)):
        job = waiting_job(tenant)
        complete(claim(job), unpaid(AttemptOutcome.SUCCEEDED))
        relive(job, since + timedelta(minutes=n), [0, 1, 2, 60])
        event = OutboxEvent.objects.get(job_id=job, event_type="extraction.completed.v1")
        (delivery_id,) = fan_out.fan_out_event(event.event_id).created
        if latency is None:
            continue  # the ERP has not taken this one yet
        assert dispatch.deliver(delivery_id) == "delivered"
        terminal_at = OutboxEvent.objects.get(pk=event.event_id).created_at
        DeliveryAttempt.objects.filter(delivery_id=delivery_id).update(
            ended_at=terminal_at + timedelta(seconds=latency)
        )
        delivered_after[delivery_id] = latency
    assert erp.received == 3  # the verification and two deliveries
    assert Delivery.objects.filter(tenant=tenant, is_verification=False).count() == 3

    section = _report(*window, tenant=tenant)["sections"]["erp_delivery_latency"]

    assert section["terminal_events"] == 3
    assert (section["deliveries"], section["delivered"], section["not_delivered"]) == (3, 2, 1)
    assert section["latency_seconds"] == {
        "count": 2,
        "p50": 20.0,
        "p95": pytest.approx(29.0),
        "p99": pytest.approx(29.8),
    }


@pytest.mark.django_db
def test_the_text_report_prints_the_same_figures(window):
    since, _ = window
    tenant = make_tenant()
    for n, done_after in enumerate((60, 60, 60, 1200)):
        job = waiting_job(tenant)
        complete(claim(job), unpaid(AttemptOutcome.SUCCEEDED))
        relive(job, since + timedelta(minutes=n), [0, 1, 2, done_after])
    out = StringIO()

    call_command(
        "slo_report",
        "--since",
        since.isoformat(),
        "--until",
        window[1].isoformat(),
        "--tenant",
        tenant.slug,
        stdout=out,
    )

    text = out.getvalue()
    assert (
        "Completion SLI (OPS-4): 75.00 % (3 of 4 succeeded or decided by a reviewer within the target: 900 s)" in text
    )
    assert "completed in target 3, completed late 1" in text
    assert "The server-side accept latency (request received to 202 answered) is not recorded" in text
    assert "ERP delivery latency" in text


def test_the_json_shape_is_the_documented_one(db, window):
    report = _report(*window, tenant=make_tenant())

    assert list(report) == [
        "report",
        "window",
        "targets",
        "jobs",
        "completion",
        "failures",
        "late",
        "review",
        "reviewers",
        "accept_latency",
        "model_calls",
        "sections",
    ]
    assert report["report"] == "slo.v1"
    assert set(report["window"]) == {"since", "until", "tenant", "as_of"}
    assert report["completion"]["sli"] is None and report["completion"]["denominator"] == 0
    assert report["review"]["turnaround_seconds"] == {"count": 0, "p50": None, "p95": None, "p99": None}
    assert report["reviewers"] == {
        "decisions": 0,
        "reviewers": 0,
        "decisions_per_hour": 0.0,
        "seconds_per_decision": {"count": 0, "p50": None, "p95": None, "p99": None},
        "fields_corrected": 0,
        "fields_corrected_per_decision": None,
        "by_reviewer": [],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--until", "2026-11-02T00:00Z"], "the following arguments are required: --since"),
        (
            ["--since", "2026-11-01", "--until", "2026-11-02T00:00Z"],
            "--since '2026-11-01' is not an ISO 8601 date-time with a time zone",
        ),
        (
            ["--since", "2026-11-01T00:00", "--until", "2026-11-02T00:00Z"],
            "is not an ISO 8601 date-time with a time zone",
        ),
        (["--since", "2026-11-02T00:00Z", "--until", "2026-11-01T00:00Z"], "must be before --until"),
        (["--since", "2026-11-01T00:00Z", "--until", "2026-11-01T00:00Z"], "must be before --until"),
        (
            ["--since", "2026-11-01T00:00Z", "--until", "2026-11-02T00:00Z", "--tenant", "no-such-tenant"],
            "no tenant 'no-such-tenant'",
        ),
        (
            ["--since", "2026-11-01T00:00Z", "--until", "2026-11-02T00:00Z", "--format", "yaml"],
            "invalid choice: 'yaml'",
        ),
    ],
    ids=["missing-since", "a-date-only", "no-time-zone", "reversed", "empty", "unknown-tenant", "bad-format"],
)
def test_bad_arguments_are_a_clear_command_error(db, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("slo_report", *args, stdout=StringIO())


def test_an_unknown_policy_price_is_named_not_guessed(db, window, settings):
    since, _ = window
    tenant = make_tenant()
    job = waiting_job(tenant)
    complete(claim(job), paid(AttemptOutcome.SUCCEEDED, 100, 100))
    relive(job, since, [0, 1, 2, 60])
    ExtractionJob.objects.filter(pk=job).update(model_policy="retired-policy")

    calls = _report(*window, tenant=tenant)["model_calls"]

    assert (calls["paid_calls"], calls["cost_micros"], calls["unpriced_policies"]) == (1, 0.0, ["retired-policy"])


@pytest.mark.django_db
def test_a_bundle_counts_as_its_invoices_each_timed_from_the_bundles_acceptance(window):
    since, _ = window
    tenant = make_tenant()
    bundle = waiting_job(tenant)
    taken = claim(bundle)
    split = lifecycle.AttemptReport(outcome=AttemptOutcome.SPLIT)
    assert lifecycle.split_job(taken, [(1, 1), (2, 2)], page_count=2, report=split, detail={})
    relive(bundle, since, [0, 1, 2, 600])  # split 10 minutes after the bundle was accepted
    first, second = ExtractionJob.objects.filter(parent_id=bundle).order_by("first_page").values_list("pk", flat=True)
    for part in (first, second):
        take_in(part)
        complete(claim(part), unpaid(AttemptOutcome.SUCCEEDED))
    # Each part's own clock: accepted at the split, done 100 s and 400 s later. From the
    # bundle's acceptance that is 700 s (within the 900 s target) and 1,000 s (late).
    relive(first, since + timedelta(seconds=600), [0, 10, 20, 100])
    relive(second, since + timedelta(seconds=600), [0, 10, 20, 400])

    report = _report(*window, tenant=tenant)

    assert report["jobs"]["accepted"] == 2  # the two invoices; the bundle's job is not one
    assert (report["completion"]["denominator"], report["completion"]["good"]) == (2, 1)
    assert report["completion"]["sli"] == 0.5
    # Ingress latency is each part's own: its requested event was taken in 10 s after the split.
    assert report["accept_latency"]["accepted_to_taken_in_seconds"]["p50"] == 10
