"""A PDF that holds several invoices becomes one job per invoice (issue #27): the worker splits
the job in one transaction, each part is claimed, read on its own pages, judged and completed
like any other job, and the status API links parent and parts."""

from __future__ import annotations

import re
import uuid

import pytest

from accounts.models import TenantUsage
from extraction.execution import lifecycle, splitting, worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import (
    Attempt,
    AttemptOutcome,
    ExtractionJob,
    ExtractionResult,
    JobEvent,
    JobState,
    OutboxEvent,
    Supplier,
)
from extraction.validation.bundle_parts import CHECK
from tests.extraction.intake.test_bundles import bundle_of
from tests.extraction.review.test_review import _elektron, logged_in, staff
from tests.factories import INVOICES, make_document, make_job, take_in

FX = INVOICES / "zugferd-corpus/XML-Rechnung/FX"
COMPARE = INVOICES / "invoice2data/compare"
ELEKTRON = FX / "EN16931_Elektron.pdf"  # 3 pages, invoice number 181301674
FREE_FIBER = COMPARE / "free_fiber.pdf"  # 2 pages


def _bundle_job(tenant, data: bytes, **options) -> ExtractionJob:
    document = make_document(tenant.tenant, content=data, filename="bundle.pdf")
    return make_job(tenant.tenant, document=document, options=options or None)


def _run(jobs: int) -> None:
    assert worker.run_slot(WorkerRuntime(worker_id=f"w-{uuid.uuid4().hex[:6]}"), max_jobs=jobs) == jobs


def _parts(job: ExtractionJob) -> list[ExtractionJob]:
    return list(ExtractionJob.objects.filter(parent=job).order_by("first_page"))


@pytest.mark.django_db(transaction=True)
def test_a_bundle_of_two_invoices_ends_split_with_a_job_per_invoice(tenant):
    parent = _bundle_job(tenant, bundle_of(ELEKTRON, FREE_FIBER))
    usage_before = TenantUsage.objects.get(tenant=tenant.tenant)

    _run(1)

    parent.refresh_from_db()
    assert parent.state == JobState.SPLIT
    parts = _parts(parent)
    assert [(part.first_page, part.last_page, part.state) for part in parts] == [
        (1, 3, JobState.ACCEPTED),
        (4, 5, JobState.ACCEPTED),
    ]
    # Same document, options and deadline; the parent's bytes shared by pages.
    assert {part.document_id for part in parts} == {parent.document_id}
    assert {part.deadline_at for part in parts} == {parent.deadline_at}
    assert [part.byte_size for part in parts] == [
        parent.byte_size * 3 // 5,
        parent.byte_size - parent.byte_size * 3 // 5,
    ]
    # The parent's split event names the parts; each part has its requested event for ingress.
    split = OutboxEvent.objects.get(job=parent, event_type="extraction.split.v1")
    assert split.payload["parts"] == [
        {"job_id": str(parts[0].pk), "pages": [1, 3]},
        {"job_id": str(parts[1].pk), "pages": [4, 5]},
    ]
    assert OutboxEvent.objects.filter(job__in=parts, event_type="extraction.requested.v1").count() == 2
    event = JobEvent.objects.get(job=parent, to_state=JobState.SPLIT)
    assert event.reason == "split" and [b["page"] for b in event.detail["boundaries"]] == [1, 4]
    assert Attempt.objects.get(job=parent).outcome == AttemptOutcome.SPLIT
    # The tenant's admission: one pending job became two; bytes and per-job tokens follow.
    usage = TenantUsage.objects.get(tenant=tenant.tenant)
    assert usage.pending_jobs == usage_before.pending_jobs + 1
    assert usage.pending_bytes == usage_before.pending_bytes
    assert usage.reserved_tokens == usage_before.reserved_tokens + parent.estimated_tokens

    for part in parts:
        take_in(part.pk)
    _run(2)

    numbers = {}
    for part in parts:
        part.refresh_from_db()
        assert part.state in (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED)
        output = ExtractionResult.objects.get(job=part).output
        numbers[(part.first_page, part.last_page)] = output["invoice_number"]["value"]
        # A part's evidence is on its own pages, numbered as the document numbers them.
        pages = set(_evidence_pages(output))
        assert pages and pages <= set(range(part.first_page, part.last_page + 1))
    assert numbers[(1, 3)] == "181301674"
    assert numbers[(4, 5)] != "181301674"


def _evidence_pages(value):
    """Every evidence page of an output, however deep the field."""
    if isinstance(value, dict):
        evidence = value.get("evidence")
        if isinstance(evidence, dict) and evidence.get("page"):
            yield evidence["page"]
        for child in value.values():
            yield from _evidence_pages(child)
    elif isinstance(value, list):
        for child in value:
            yield from _evidence_pages(child)


@pytest.mark.django_db(transaction=True)
def test_the_status_of_a_split_job_lists_its_parts_and_each_part_names_its_parent(tenant):
    parent = _bundle_job(tenant, bundle_of(ELEKTRON, FREE_FIBER))
    _run(1)
    parts = _parts(parent)

    status = tenant.client.get(f"/api/v1/extraction-jobs/{parent.pk}").json()
    assert status["state"] == "SPLIT"
    assert status["parts"] == [
        {"job_id": str(parts[0].pk), "pages": [1, 3], "state": "ACCEPTED"},
        {"job_id": str(parts[1].pk), "pages": [4, 5], "state": "ACCEPTED"},
    ]
    assert status["parent"] is None
    part = tenant.client.get(f"/api/v1/extraction-jobs/{parts[1].pk}").json()
    assert part["parent"] == {"job_id": str(parent.pk), "pages": [4, 5]}
    assert part["parts"] is None
    listed = tenant.client.get("/api/v1/extraction-jobs?state=SPLIT").json()["results"]
    assert [job["job_id"] for job in listed] == [str(parent.pk)]


@pytest.mark.django_db(transaction=True)
def test_an_attached_xml_answers_no_part_of_a_split_bundle(tenant):
    # Elektron's own XML attached to the bundle of Elektron and free_fiber: read whole, the XML
    # would answer for both invoices. Split, each part is read from its pages by the rules.
    parent = _bundle_job(tenant, bundle_of(ELEKTRON, FREE_FIBER, attach=ELEKTRON))
    _run(1)
    parts = _parts(parent)
    assert [(part.first_page, part.last_page) for part in parts] == [(1, 3), (4, 5)]
    for part in parts:
        take_in(part.pk)
    _run(2)

    for part in parts:
        result = ExtractionResult.objects.get(job=part)
        assert "einvoice" not in result.validation
        assert {tuple(entry["sources"]) for entry in result.validation["fields"].values()} == {("rules",)}
    second = ExtractionResult.objects.get(job=parts[1]).output
    assert second["invoice_number"]["value"] != "181301674"


@pytest.mark.django_db(transaction=True)
def test_split_bundles_false_reads_the_bundle_as_one_invoice(tenant):
    parent = _bundle_job(tenant, bundle_of(ELEKTRON, FREE_FIBER), split_bundles=False)
    _run(1)

    parent.refresh_from_db()
    assert parent.state in (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED)
    assert not ExtractionJob.objects.filter(parent=parent).exists()


@pytest.mark.django_db(transaction=True)
def test_one_invoice_of_three_pages_is_not_split(tenant):
    job = _bundle_job(tenant, ELEKTRON.read_bytes())
    _run(1)

    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert not ExtractionJob.objects.filter(parent=job).exists()


@pytest.mark.django_db(transaction=True)
def test_a_split_under_a_lost_fence_writes_no_part(tenant):
    parent = _bundle_job(tenant, bundle_of(ELEKTRON, FREE_FIBER))
    claim = lifecycle.claim_next_job(worker_id="w-stale")
    assert claim is not None and claim.job_id == parent.pk
    # The lease ran out and another worker claimed the job: this claim's fence is stale.
    ExtractionJob.objects.filter(pk=parent.pk).update(fence=claim.fence + 1)

    from extraction.execution.attempt import load_document_text

    document = load_document_text(parent.document_id, ocr_language="eng")
    decision = splitting.first_reading(claim, document)
    assert decision is not None and len(decision.split.parts) == 2
    assert splitting.split_into_parts(claim, document, decision) == "stale"

    parent.refresh_from_db()
    assert parent.state == JobState.RUNNING
    assert not ExtractionJob.objects.filter(parent=parent).exists()
    assert not OutboxEvent.objects.filter(job=parent, event_type="extraction.split.v1").exists()
    assert Attempt.objects.get(job=parent).outcome == AttemptOutcome.STALE_COMPLETION


@pytest.mark.django_db(transaction=True)
def test_a_part_in_review_shows_the_reviewer_its_own_pages_only(tenant):
    # The tenant knows Elektron's supplier with another IBAN: its part must be reviewed.
    _, elektron = _elektron()
    Supplier.objects.create(
        tenant=tenant.tenant,
        name=elektron["supplier"]["name"]["value"],
        vat_id=elektron["supplier"]["vat_id"]["value"],
        iban="DE02120300000000202051",
    )
    parent = _bundle_job(tenant, bundle_of(FREE_FIBER, ELEKTRON))
    _run(1)
    parts = _parts(parent)
    assert [(part.first_page, part.last_page) for part in parts] == [(1, 2), (3, 5)]
    take_in(parts[1].pk)
    _run(1)
    part = ExtractionJob.objects.get(pk=parts[1].pk)
    assert part.state == JobState.REVIEW_REQUIRED

    body = logged_in(staff(tenant.tenant)).get(f"/admin/extraction/extractionjob/{part.pk}/review/").content.decode()

    shown = re.findall(r'alt="Page (\d+) of the document"', body)
    assert shown == ["3", "4", "5"]


@pytest.mark.django_db(transaction=True)
def test_each_part_of_a_true_split_passes_the_one_invoice_check(tenant):
    parent = _bundle_job(tenant, bundle_of(ELEKTRON, FREE_FIBER))
    _run(1)
    parts = _parts(parent)
    for part in parts:
        take_in(part.pk)
    _run(2)

    for part in parts:
        [check] = [c for c in ExtractionResult.objects.get(job=part).validation["checks"] if c["check"] == CHECK]
        assert (check["status"], check["detail"]) == (
            "passed",
            {"pages": [part.first_page, part.last_page]},
        )


@pytest.mark.django_db(transaction=True)
def test_a_part_holding_the_next_invoices_first_page_goes_to_review(tenant):
    # A split one page late, as a wrong boundary would make it: Elektron's pages 2 and 3 with
    # free_fiber's first page. Its header is free_fiber's and its totals Elektron's.
    parent = _bundle_job(tenant, bundle_of(ELEKTRON, FREE_FIBER))
    claim = lifecycle.claim_next_job(worker_id="w-wrong")
    assert claim is not None and claim.job_id == parent.pk
    report = lifecycle.AttemptReport(outcome=AttemptOutcome.SPLIT)
    assert lifecycle.split_job(claim, [(1, 1), (2, 4), (5, 5)], page_count=5, report=report, detail={})
    wrong = ExtractionJob.objects.get(parent=parent, first_page=2)
    take_in(wrong.pk)
    _run(1)

    wrong.refresh_from_db()
    assert wrong.state == JobState.REVIEW_REQUIRED
    validation = ExtractionResult.objects.get(job=wrong).validation
    assert "bundle_part_mixes_invoices" in validation["reasons"]
    [check] = [c for c in validation["checks"] if c["check"] == CHECK]
    assert check["status"] == "failed"
    assert check["detail"]["pages"] == [2, 4]
    # Elektron's page 3 is its "3 of 3"; free_fiber's first page prints its header after
    # Elektron's totals (page 2). Only free_fiber's page prints a number: no two numbers.
    assert check["detail"] == {
        "pages": [2, 4],
        "invoice_numbers": {},
        "numbering_restarts": [],
        "after_complete_count": [4],
        "headers_after_totals": [4],
    }
