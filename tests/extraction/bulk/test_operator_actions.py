"""Operators' bulk actions: cancel and re-run by filter, tenant-scoped and audited; a cancelled
RUNNING job's worker cannot write its result."""

from __future__ import annotations

import pytest

from accounts.models import Role, TenantUsage
from extraction.bulk import actions
from extraction.events import EventType
from extraction.execution import lifecycle
from extraction.models import (
    Attempt,
    ExtractionJob,
    ExtractionResult,
    JobEvent,
    JobState,
    OperatorAction,
    OperatorActionTarget,
    OutboxEvent,
    SupersededResult,
)
from tests.extraction.operations.history import claim as claim_job
from tests.factories import SAMPLE_OUTPUT, make_job, make_tenant_context

pytestmark = pytest.mark.django_db(transaction=True)

CLI = actions.Actor(name="cli:test", channel="cli")


def _failed_job(tenant) -> ExtractionJob:
    """A job the worker failed terminally (a permanent provider error)."""
    job = make_job(tenant, state=JobState.READY)
    claim = claim_job(job.pk)
    report = lifecycle.AttemptReport(outcome="permanent_error", error_detail="provider said 400")
    assert lifecycle.retry_or_fail(
        claim, report=report, retry=False, delay_seconds=0, error_class="permanent_error"
    ) == ("failed")
    return ExtractionJob.objects.get(pk=job.pk)


def _review_job(tenant, *, policy_version: str, reasons: list[str]) -> ExtractionJob:
    return make_job(
        tenant,
        state=JobState.REVIEW_REQUIRED,
        policy_version=policy_version,
        validation={"ok": False, "reasons": reasons},
    )


def _pending_jobs(tenant) -> int:
    return TenantUsage.objects.get(tenant=tenant).pending_jobs


def test_cancel_moves_waiting_and_running_jobs_and_leaves_finished_ones(tenant):
    # Claimed jobs first: make_job claims the next runnable job, which must be its own.
    running = make_job(tenant.tenant, state=JobState.READY)
    claim = claim_job(running.pk)
    running.refresh_from_db()
    succeeded = make_job(tenant.tenant, state=JobState.SUCCEEDED)
    accepted = make_job(tenant.tenant, state=JobState.ACCEPTED)
    ready = make_job(tenant.tenant, state=JobState.READY)
    assert _pending_jobs(tenant.tenant) == 3

    report = actions.cancel_jobs(tenant_id=tenant.tenant.pk, job_filter=actions.JobFilter(), actor=CLI)

    assert report.matched == 3 and report.outcomes == {"changed": 3}
    for job in (accepted, ready, running):
        job.refresh_from_db()
        assert (job.state, job.error_class) == (JobState.FAILED_TERMINAL, "cancelled")
        assert (
            OutboxEvent.objects.filter(
                job_id=job.pk, event_type=EventType.DEAD_LETTERED, payload__error_class="cancelled"
            ).count()
            == 1
        )
        assert (
            JobEvent.objects.filter(job_id=job.pk, reason="cancelled", to_state=JobState.FAILED_TERMINAL).count() == 1
        )
    assert ExtractionJob.objects.get(pk=succeeded.pk).state == JobState.SUCCEEDED
    assert _pending_jobs(tenant.tenant) == 0  # every cancelled job gave its admission share back
    assert running.fence == claim.fence + 1
    assert Attempt.objects.get(job_id=running.pk, fence=claim.fence).outcome == "lease_lost"

    action = OperatorAction.objects.get(pk=report.action_id)
    assert (action.kind, action.status, action.matched, action.changed, action.actor) == (
        "cancel_jobs",
        "completed",
        3,
        3,
        "cli:test",
    )
    assert set(OperatorActionTarget.objects.filter(action=action).values_list("object_id", "from_state")) == {
        (accepted.pk, JobState.ACCEPTED),
        (ready.pk, JobState.READY),
        (running.pk, JobState.RUNNING),
    }


def test_the_worker_of_a_cancelled_running_job_cannot_write_its_result(tenant):
    running = make_job(tenant.tenant, state=JobState.READY)
    claim = claim_job(running.pk)
    running.refresh_from_db()
    actions.cancel_jobs(tenant_id=tenant.tenant.pk, job_filter=actions.JobFilter(job_ids=(running.pk,)), actor=CLI)

    written = lifecycle.complete_job(
        claim,
        review_required=False,
        output=SAMPLE_OUTPUT,
        validation={"ok": True},
        policy_version="test",
        report=lifecycle.AttemptReport(outcome="succeeded", input_tokens=100, output_tokens=50),
    )

    assert written is False
    running.refresh_from_db()
    assert running.state == JobState.FAILED_TERMINAL
    assert not ExtractionResult.objects.filter(job_id=running.pk).exists()
    assert Attempt.objects.get(job_id=running.pk, fence=claim.fence).outcome == "stale_completion"
    assert not OutboxEvent.objects.filter(job_id=running.pk, event_type=EventType.COMPLETED).exists()


def test_a_dry_run_moves_nothing_and_is_recorded(tenant):
    ready = make_job(tenant.tenant, state=JobState.READY)

    report = actions.cancel_jobs(tenant_id=tenant.tenant.pk, job_filter=actions.JobFilter(), actor=CLI, dry_run=True)

    assert report.outcomes == {"would_change": 1} and report.dry_run is True
    assert ExtractionJob.objects.get(pk=ready.pk).state == JobState.READY
    action = OperatorAction.objects.get(pk=report.action_id)
    assert (action.dry_run, action.matched, action.changed) == (True, 1, 0)


def test_rerun_by_policy_version_and_reason_makes_the_job_ready_and_keeps_the_old_result(tenant):
    old_policy = _review_job(tenant.tenant, policy_version="invoice-checks.1", reasons=["iban_invalid"])
    new_policy = _review_job(tenant.tenant, policy_version="invoice-checks.2", reasons=["iban_invalid"])
    other_reason = _review_job(tenant.tenant, policy_version="invoice-checks.1", reasons=["lines_sum_mismatch"])
    before = ExtractionJob.objects.get(pk=old_policy.pk)
    pending = _pending_jobs(tenant.tenant)

    report = actions.rerun_jobs(
        tenant_id=tenant.tenant.pk,
        job_filter=actions.JobFilter(policy_version="invoice-checks.1", reason="iban_invalid"),
        actor=CLI,
    )

    assert report.matched == 1 and report.outcomes == {"changed": 1}
    job = ExtractionJob.objects.get(pk=old_policy.pk)
    assert job.state == JobState.READY
    assert job.max_attempts == before.attempt + 5
    assert job.state_version == before.state_version + 1
    assert not ExtractionResult.objects.filter(job_id=job.pk).exists()
    superseded = SupersededResult.objects.get(job_id=job.pk)
    assert (superseded.policy_version, superseded.validation["reasons"], superseded.superseded_by_id) == (
        "invoice-checks.1",
        ["iban_invalid"],
        report.action_id,
    )
    assert _pending_jobs(tenant.tenant) == pending + 1  # charged like a new acceptance
    for untouched in (new_policy, other_reason):
        assert ExtractionJob.objects.get(pk=untouched.pk).state == JobState.REVIEW_REQUIRED

    claim = lifecycle.claim_next_job(worker_id="w", policies=["default"])
    assert claim is not None and claim.job_id == job.pk and claim.attempt == before.attempt + 1
    assert lifecycle.complete_job(
        claim,
        review_required=False,
        output=SAMPLE_OUTPUT,
        validation={"ok": True},
        policy_version="invoice-checks.2",
        report=lifecycle.AttemptReport(outcome="succeeded"),
    )
    assert ExtractionResult.objects.get(job_id=job.pk).policy_version == "invoice-checks.2"


def test_rerun_of_a_failed_job_by_its_error_class(tenant):
    failed = _failed_job(tenant.tenant)
    assert failed.error_class == "permanent_error"

    report = actions.rerun_jobs(
        tenant_id=tenant.tenant.pk, job_filter=actions.JobFilter(reason="permanent_error"), actor=CLI
    )

    assert report.outcomes == {"changed": 1}
    failed.refresh_from_db()
    assert (failed.state, failed.error_class) == (JobState.READY, "")


def test_rerun_respects_the_tenants_admission_limits(tenant):
    failed = _failed_job(tenant.tenant)
    make_job(tenant.tenant, state=JobState.READY)
    tenant.tenant.__class__.objects.filter(pk=tenant.tenant.pk).update(max_pending_jobs=1)

    report = actions.rerun_jobs(tenant_id=tenant.tenant.pk, job_filter=actions.JobFilter(), actor=CLI)

    assert report.outcomes == {"over_admission_budget": 1}
    assert ExtractionJob.objects.get(pk=failed.pk).state == JobState.FAILED_TERMINAL
    assert _pending_jobs(tenant.tenant) == 1


def test_a_succeeded_job_is_never_rerun(tenant):
    succeeded = make_job(tenant.tenant, state=JobState.SUCCEEDED)

    report = actions.rerun_jobs(
        tenant_id=tenant.tenant.pk, job_filter=actions.JobFilter(job_ids=(succeeded.pk,)), actor=CLI
    )

    assert (report.matched, report.outcomes) == (0, {})
    assert ExtractionJob.objects.get(pk=succeeded.pk).state == JobState.SUCCEEDED


def test_a_filter_matching_too_many_jobs_is_refused_before_anything_moves(tenant, settings):
    settings.OPERATOR_ACTION_MAX_OBJECTS = 1
    first = make_job(tenant.tenant, state=JobState.READY)
    make_job(tenant.tenant, state=JobState.READY)

    with pytest.raises(actions.TooManyMatches):
        actions.cancel_jobs(tenant_id=tenant.tenant.pk, job_filter=actions.JobFilter(), actor=CLI)

    assert ExtractionJob.objects.get(pk=first.pk).state == JobState.READY
    assert not OperatorAction.objects.exists()


# --- the API ------------------------------------------------------------------------------------


def test_api_cancel_is_tenant_scoped_and_needs_the_operator_role(tenant_a, tenant_b):
    ours = make_job(tenant_a.tenant, state=JobState.READY)
    theirs = make_job(tenant_b.tenant, state=JobState.READY)
    member = make_tenant_context(role=Role.MEMBER)
    body = {"filter": {"job_ids": [str(ours.pk), str(theirs.pk)]}}

    refused = member.client.post("/api/v1/extraction-jobs/cancel", body, format="json")
    assert refused.status_code == 403 and refused["Content-Type"] == "application/problem+json"

    response = tenant_a.client.post("/api/v1/extraction-jobs/cancel", body, format="json")

    assert response.status_code == 201, response.content
    payload = response.json()
    assert (payload["kind"], payload["matched"], payload["outcomes"]) == ("cancel_jobs", 1, {"changed": 1})
    assert response["Location"] == f"/api/v1/operator-actions/{payload['action_id']}"
    assert ExtractionJob.objects.get(pk=ours.pk).state == JobState.FAILED_TERMINAL
    assert ExtractionJob.objects.get(pk=theirs.pk).state == JobState.READY

    detail = tenant_a.client.get(response["Location"])
    assert detail.status_code == 200
    assert (detail.json()["actor"], detail.json()["channel"], detail.json()["status"]) == (
        f"token:{_token_id(tenant_a)}",
        "api",
        "completed",
    )
    assert tenant_b.client.get(response["Location"]).status_code == 404
    listed = tenant_a.client.get("/api/v1/operator-actions").json()["results"]
    assert [a["action_id"] for a in listed] == [payload["action_id"]]


def _token_id(ctx) -> int:
    from accounts.models import ApiToken

    return ApiToken.objects.get(tenant=ctx.tenant).pk


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"filter": {}, "dry_rn": True}, "dry_rn"),
        ({"filter": {"state": ["READY"]}}, "filter"),
        ({"filter": {"states": ["DONE"]}}, "filter"),
        ({"filter": {"created_since": "2026-12-02T00:00:00Z", "created_until": "2026-12-01T00:00:00Z"}}, "filter"),
    ],
)
def test_api_refuses_a_bad_filter_with_a_problem(tenant, body, field):
    ready = make_job(tenant.tenant, state=JobState.READY)

    response = tenant.client.post("/api/v1/extraction-jobs/cancel", body, format="json")

    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert field in response.json()["errors"]
    assert ExtractionJob.objects.get(pk=ready.pk).state == JobState.READY


def test_api_too_broad_a_filter_is_422(tenant, settings):
    settings.OPERATOR_ACTION_MAX_OBJECTS = 1
    make_job(tenant.tenant, state=JobState.READY)
    make_job(tenant.tenant, state=JobState.READY)

    response = tenant.client.post("/api/v1/extraction-jobs/cancel", {"filter": {}}, format="json")

    assert response.status_code == 422
    assert (response.json()["type"].rsplit("/", 1)[-1], response.json()["limit"]) == ("too-many-matches", 1)
