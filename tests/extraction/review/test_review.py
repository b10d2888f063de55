"""Human review of REVIEW_REQUIRED jobs: approve (with corrections, re-validated), reject, two
reviewers at once, and the review queue in the Django admin, tenant by tenant.

Jobs reach REVIEW_REQUIRED through the real lifecycle (accept → take in → claim → complete with
the validator's verdict), with the extractor's answer on a real invoice."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone

from accounts.models import Membership, Role, Tenant
from extraction.einvoice import read_einvoice
from extraction.einvoice.answer import invoice_answer
from extraction.einvoice.rendering import render
from extraction.intake.geometry import geometry_to_json
from extraction.intake.text import DocumentText, extract_document_text
from extraction.models import (
    ExtractedText,
    ExtractionJob,
    ExtractionResult,
    JobState,
    OutboxEvent,
    ReviewDecision,
    Supplier,
)
from extraction.providers.builtin import extract_invoice
from extraction.review import decisions as review
from extraction.validation.duplicates import duplicate_check
from extraction.validation.evidence import with_boxes
from extraction.validation.fields import ReadingSource
from extraction.validation.policy import validate_extraction
from extraction.validation.schema import parse_invoice
from tests.factories import INVOICES, make_document, make_job, make_tenant, unique_slug

ELEKTRON = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"  # gross 300.00, valid VAT id/IBAN
RABATTE = INVOICES / "zugferd-corpus/XML-Rechnung/CII/EN16931_Rabatte.cii.xml"  # allowances, a charge, prepaid
THIRD_PARTY = INVOICES / "xrechnung-testsuite/business-cases/extension/05.01a-INVOICE_ubl.xml"  # BG-DEX-09
QUEUE_URL = "/admin/extraction/extractionjob/review/"

_TEXT_CACHE: dict[str, tuple[DocumentText, str]] = {}


def _elektron() -> tuple[DocumentText, dict[str, Any]]:
    if "elektron" not in _TEXT_CACHE:
        document = extract_document_text(ELEKTRON.read_bytes(), "application/pdf")
        _TEXT_CACHE["elektron"] = (document, json.dumps(extract_invoice(document)))
    document, output = _TEXT_CACHE["elektron"]
    return document, json.loads(output)


def with_gross(output: dict[str, Any], gross: str) -> dict[str, Any]:
    changed = json.loads(json.dumps(output))
    changed["totals"]["gross"]["value"] = gross
    return changed


def job_in_review(
    tenant: Tenant,
    *,
    pages: tuple[str, ...] | None = None,
    output: dict[str, Any] | None = None,
    document_text: DocumentText | None = None,
    schema: str = "invoice.v1",
    document_bytes: bytes | None = None,
    einvoice: dict[str, Any] | None = None,
) -> ExtractionJob:
    """A job driven through the real lifecycle to REVIEW_REQUIRED, judged by the real validator.

    By default: the Elektron invoice whose extracted gross total was misread as 3000.00, its
    text stored with where each word is printed. ``document_bytes``: the uploaded file (by
    default bytes no page image can be rendered of, so the screen shows text only); with
    them, the output's evidence gets its boxes as a worker's result does. ``einvoice``: the
    result's e-invoice provenance, as the worker keeps it beside the verdict."""
    extracted_text, extracted = _elektron()
    if document_text is None:
        document_text = DocumentText(pages=pages) if pages is not None else extracted_text
    output = output if output is not None else with_gross(extracted, "3000.00")
    outcome = validate_extraction(
        invoice=parse_invoice(json.dumps(output), schema=schema),
        document=document_text,
        tenant_id=tenant.pk,
        sources=(ReadingSource.MODEL,),
    )
    assert outcome.review_required, "the test job must need review"
    if document_bytes is not None:
        output = with_boxes(output, document_text)
    document = make_document(
        tenant, content=document_bytes or b"%PDF-1.7 " + uuid.uuid4().hex.encode(), filename="invoice.pdf"
    )
    # The same bytes twice in one tenant are one stored document, read once.
    ExtractedText.objects.get_or_create(
        document=document,
        defaults={
            "pages": list(document_text.pages),
            "source": document_text.source,
            "einvoice_page": document_text.einvoice_page,
            "geometry": geometry_to_json(document_text.geometry),
        },
    )
    return make_job(
        tenant,
        state=JobState.REVIEW_REQUIRED,
        document=document,
        output=output,
        validation={**outcome.as_dict(), **({"einvoice": einvoice} if einvoice else {})},
        policy_version=outcome.policy_version,
        worker_id="review-test",
        schema=schema,
    )


def staff(tenant: Tenant | None, role: str = Role.REVIEWER, *, superuser: bool = False, name: str = ""):
    user = get_user_model().objects.create_user(
        username=name or f"u-{uuid.uuid4().hex[:8]}", password="pw", is_staff=True, is_superuser=superuser
    )
    if tenant is not None:
        Membership.objects.create(user=user, tenant=tenant, role=role)
    return user


def events(job: ExtractionJob) -> list[str]:
    return list(OutboxEvent.objects.filter(job_id=job.pk).order_by("created_at").values_list("event_type", flat=True))


def _tenant_knowing_elektron() -> Tenant:
    tenant = make_tenant(unique_slug("r"))
    _, output = _elektron()
    supplier = output["supplier"]
    Supplier.objects.create(
        tenant=tenant,
        name=supplier["name"]["value"],
        vat_id=supplier["vat_id"]["value"],
        iban=supplier["iban"]["value"],
    )
    return tenant


@pytest.fixture
def elektron_buyer(db) -> Tenant:
    return _tenant_knowing_elektron()


@pytest.fixture
def committed_tenant(transactional_db) -> Tenant:
    """For tests with several connections: rows they must see are committed."""
    return _tenant_knowing_elektron()


# --- approve / reject --------------------------------------------------------------------------------


def test_review_required_job_gets_no_completed_event_until_approved(elektron_buyer):
    job = job_in_review(elektron_buyer)
    reviewer = staff(elektron_buyer)
    assert job.state == JobState.REVIEW_REQUIRED
    assert "extraction.completed.v1" not in events(job)
    assert events(job) == ["extraction.requested.v1", "extraction.review_required.v1"]

    result = review.approve_review(
        job_id=job.pk, reviewer=reviewer, seen_state_version=job.state_version, corrections={"totals.gross": "300.00"}
    )

    assert result.status == review.APPROVED, result
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert events(job).count("extraction.completed.v1") == 1


def test_approval_with_a_correction_is_revalidated_and_audited(elektron_buyer):
    job = job_in_review(elektron_buyer)
    reviewer = staff(elektron_buyer)

    result = review.approve_review(
        job_id=job.pk,
        reviewer=reviewer,
        seen_state_version=job.state_version,
        corrections={"totals.gross": " 300.00 ", "totals.net": "252.10"},
        comment="misread total",
    )

    assert result.status == review.APPROVED
    stored = ExtractionResult.objects.get(job_id=job.pk)
    assert stored.output["totals"]["gross"]["value"] == "300.00"
    assert stored.validation["review_required"] is False
    assert stored.validation["review"]["corrected_fields"] == ["totals.gross"]  # net was unchanged
    decision = ReviewDecision.objects.get(job_id=job.pk)
    assert (decision.decision, decision.reviewer_id, decision.state_version) == (
        "approved",
        reviewer.pk,
        job.state_version,
    )
    assert decision.before["totals"]["gross"]["value"] == "3000.00"
    assert decision.after["totals"]["gross"]["value"] == "300.00"
    assert decision.comment == "misread total"


def test_a_v2_job_in_review_shows_its_allowances_and_is_approved_as_v2(elektron_buyer):
    invoice = read_einvoice(RABATTE.read_bytes())
    rendering = render(invoice)
    output = with_gross(invoice_answer(invoice, rendering, page=1, schema="invoice.v2"), "999.00")
    supplier = output["supplier"]
    Supplier.objects.create(
        tenant=elektron_buyer, name=supplier["name"]["value"], vat_id=supplier["vat_id"]["value"], iban=""
    )
    job = job_in_review(
        elektron_buyer,
        document_text=DocumentText(pages=(rendering.text,), source="einvoice_xml", einvoice_page=1),
        output=output,
        schema="invoice.v2",
    )
    assert ExtractionResult.objects.get(job_id=job.pk).validation["reasons"] == [
        "totals_sum_mismatch",
        "amount_due_mismatch",
        "evidence_value_mismatch",
    ]
    reviewer = staff(elektron_buyer)
    client = Client()
    client.force_login(reviewer)

    page = client.get(f"/admin/extraction/extractionjob/{job.pk}/review/").content.decode()
    assert 'name="field:allowances[1].amount" value="13.73"' in page
    assert 'name="field:charges[0].reason" value="Versandkosten"' in page
    assert "Page 1 — the document's e-invoice XML, printed" in page

    result = review.approve_review(
        job_id=job.pk, reviewer=reviewer, seen_state_version=job.state_version, corrections={"totals.gross": "215.07"}
    )

    assert result.status == review.APPROVED
    stored = ExtractionResult.objects.get(job_id=job.pk)
    assert stored.output["schema"] == "invoice.v2"
    assert stored.output["allowances"][1]["amount"]["value"] == "13.73"
    assert stored.validation["reasons"] == []


def test_an_approval_counts_the_xmls_third_party_payments_in_the_amount_due(elektron_buyer):
    invoice = read_einvoice(THIRD_PARTY.read_bytes())
    rendering = render(invoice)
    output = with_gross(invoice_answer(invoice, rendering, page=1, schema="invoice.v2"), "999.00")
    supplier = output["supplier"]
    Supplier.objects.create(
        tenant=elektron_buyer, name=supplier["name"]["value"], vat_id=supplier["vat_id"]["value"], iban=""
    )
    job = job_in_review(
        elektron_buyer,
        document_text=DocumentText(pages=(rendering.text,), source="einvoice_xml", einvoice_page=1),
        output=output,
        schema="invoice.v2",
        einvoice={"profile": "XRechnung (UBL)", "third_party_paid": "29.96"},
    )

    result = review.approve_review(
        job_id=job.pk,
        reviewer=staff(elektron_buyer),
        seen_state_version=job.state_version,
        corrections={"totals.gross": "336.9"},  # as the XML writes it
    )

    # 336.90 gross + 29.96 paid to third parties is the 366.86 due, as the XML says.
    assert (result.status, result.reasons) == (review.APPROVED, [])
    amount_due = next(
        c for c in ExtractionResult.objects.get(job_id=job.pk).validation["checks"] if c["check"] == "amount_due"
    )
    assert amount_due["status"] == "passed"


def test_a_possible_duplicate_is_approved_only_when_the_reviewer_releases_it(elektron_buyer):
    _, right = _elektron()
    earlier = make_job(elektron_buyer, state=JobState.SUCCEEDED, output=right)
    assert (
        duplicate_check(
            tenant_id=elektron_buyer.pk,
            job_id=earlier.pk,
            invoice=parse_invoice(json.dumps(right), schema="invoice.v1"),
        )["status"]
        == "passed"
    )
    job = job_in_review(elektron_buyer)  # the same invoice, its gross misread
    reviewer = staff(elektron_buyer)
    corrected = {"totals.gross": "300.00"}

    held = review.approve_review(
        job_id=job.pk, reviewer=reviewer, seen_state_version=job.state_version, corrections=corrected
    )
    assert (held.status, held.reasons) == (review.REFUSED, ["possible_duplicate"])
    duplicate = next(c for c in held.validation["checks"] if c["check"] == "possible_duplicate")
    assert duplicate["detail"]["earlier_job_id"] == str(earlier.pk)

    released = review.approve_review(
        job_id=job.pk,
        reviewer=reviewer,
        seen_state_version=job.state_version,
        corrections=corrected,
        not_duplicate=True,
    )

    assert (released.status, released.reasons) == (review.APPROVED, [])
    check = next(
        c
        for c in ExtractionResult.objects.get(job_id=job.pk).validation["checks"]
        if c["check"] == "possible_duplicate"
    )
    assert (check["status"], check["detail"]["released_by"], check["detail"]["earlier_job_id"]) == (
        "passed",
        reviewer.get_username(),
        str(earlier.pk),
    )


def test_correction_that_still_fails_blocking_checks_is_refused_with_reasons(elektron_buyer):
    job = job_in_review(elektron_buyer)

    result = review.approve_review(
        job_id=job.pk,
        reviewer=staff(elektron_buyer),
        seen_state_version=job.state_version,
        corrections={"totals.gross": "310.00"},
        support={"totals.gross": review.CorrectionSupport(reason="the supplier's letter says so")},
    )

    assert result.status == review.REFUSED
    assert result.reasons == ["totals_sum_mismatch", "amount_due_mismatch"]
    job.refresh_from_db()
    assert job.state == JobState.REVIEW_REQUIRED
    assert not ReviewDecision.objects.filter(job_id=job.pk).exists()
    assert "extraction.completed.v1" not in events(job)


def test_correction_is_checked_against_master_data_too(elektron_buyer):
    job = job_in_review(elektron_buyer)

    result = review.approve_review(
        job_id=job.pk,
        reviewer=staff(elektron_buyer),
        seen_state_version=job.state_version,
        corrections={"totals.gross": "300.00", "supplier.iban": "DE89370400440532013000"},
        support={"supplier.iban": review.CorrectionSupport(reason="from the supplier's letterhead")},
    )

    assert result.status == review.REFUSED
    assert result.reasons == ["supplier_iban_mismatch"]


def test_approving_unchanged_failing_result_needs_an_override_with_a_comment(elektron_buyer):
    job = job_in_review(elektron_buyer)
    reviewer = staff(elektron_buyer)
    seen = job.state_version

    plain = review.approve_review(job_id=job.pk, reviewer=reviewer, seen_state_version=seen)
    silent = review.approve_review(job_id=job.pk, reviewer=reviewer, seen_state_version=seen, override=True)
    explained = review.approve_review(
        job_id=job.pk,
        reviewer=reviewer,
        seen_state_version=seen,
        override=True,
        comment="supplier confirmed the total by phone",
    )

    assert plain.status == review.REFUSED and "totals_sum_mismatch" in plain.reasons
    assert silent.status == review.REFUSED and silent.reasons == ["override_needs_comment"]
    assert explained.status == review.APPROVED
    audit = ReviewDecision.objects.get(job_id=job.pk).validation["review"]
    assert audit["override"] is True
    assert "totals_sum_mismatch" in audit["overridden_reasons"]


def test_reject_fails_the_job_terminally_and_it_is_never_delivered(elektron_buyer):
    job = job_in_review(elektron_buyer)
    reviewer = staff(elektron_buyer)

    result = review.reject_review(
        job_id=job.pk, reviewer=reviewer, seen_state_version=job.state_version, comment="not our invoice"
    )

    assert result.status == review.REJECTED
    job.refresh_from_db()
    assert job.state == JobState.FAILED_TERMINAL and job.error_class == "review_rejected"
    assert events(job) == ["extraction.requested.v1", "extraction.review_required.v1", "extraction.dead_lettered.v1"]
    decision = ReviewDecision.objects.get(job_id=job.pk)
    assert decision.decision == "rejected" and decision.after is None and decision.comment == "not our invoice"


def test_reviewer_of_another_tenant_cannot_decide(elektron_buyer):
    job = job_in_review(elektron_buyer)
    outsider = staff(make_tenant(unique_slug("o")))

    result = review.reject_review(job_id=job.pk, reviewer=outsider, seen_state_version=job.state_version)

    assert result.status == review.REFUSED
    job.refresh_from_db()
    assert job.state == JobState.REVIEW_REQUIRED


def test_two_reviewers_at_once_exactly_one_wins(committed_tenant):
    tenant = committed_tenant
    job = job_in_review(tenant)
    approver, rejecter = staff(tenant), staff(tenant)
    seen = job.state_version
    start = threading.Barrier(2)
    results: dict[str, review.ReviewResult] = {}

    def act(name: str, decide) -> None:
        try:
            start.wait(timeout=10)
            results[name] = decide()
        finally:
            connection.close()  # each thread has its own connection

    threads = [
        threading.Thread(
            target=act,
            args=(
                "approve",
                lambda: review.approve_review(
                    job_id=job.pk, reviewer=approver, seen_state_version=seen, corrections={"totals.gross": "300.00"}
                ),
            ),
        ),
        threading.Thread(
            target=act,
            args=("reject", lambda: review.reject_review(job_id=job.pk, reviewer=rejecter, seen_state_version=seen)),
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    decisions = list(ReviewDecision.objects.filter(job_id=job.pk))
    assert len(decisions) == 1
    # Which thread commits first is the race; given the recorded winner, every answer is fixed.
    winner = decisions[0].decision
    expected = {
        "approved": ({"approve": review.APPROVED, "reject": review.CONFLICT}, JobState.SUCCEEDED, "reject"),
        "rejected": ({"approve": review.CONFLICT, "reject": review.REJECTED}, JobState.FAILED_TERMINAL, "approve"),
    }
    statuses, state, loser = expected[winner]
    assert {name: result.status for name, result in results.items()} == statuses
    job.refresh_from_db()
    assert job.state == state
    assert "Someone else decided" in results[loser].message
    assert len([e for e in events(job) if e in ("extraction.completed.v1", "extraction.dead_lettered.v1")]) == 1


# --- the admin ----------------------------------------------------------------------------------------


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_reviewer_sees_only_own_tenants_review_jobs_oldest_first(elektron_buyer):
    other = make_tenant(unique_slug("b"))
    first, theirs, second = job_in_review(elektron_buyer), job_in_review(other), job_in_review(elektron_buyer)
    # One test transaction means one now(): give the jobs their arrival order explicitly.
    for age, job in ((3, first), (2, theirs), (1, second)):
        ExtractionJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=age))
    client = logged_in(staff(elektron_buyer))

    page = client.get(QUEUE_URL)

    assert page.status_code == 200
    body = page.content.decode()
    assert str(first.pk) in body and str(second.pk) in body
    assert str(theirs.pk) not in body
    assert body.index(str(first.pk)) < body.index(str(second.pk))
    assert "totals_sum_mismatch" in body
    assert client.get(f"/admin/extraction/extractionjob/{theirs.pk}/review/").status_code == 404
    changelist = client.get("/admin/extraction/extractionjob/").content.decode()
    assert str(first.pk) in changelist and str(theirs.pk) not in changelist


def test_superuser_sees_every_tenants_queue(elektron_buyer):
    other = make_tenant(unique_slug("b"))
    mine, theirs = job_in_review(elektron_buyer), job_in_review(other)

    body = logged_in(staff(None, superuser=True)).get(QUEUE_URL).content.decode()

    assert str(mine.pk) in body and str(theirs.pk) in body


def test_members_without_the_reviewer_role_do_not_get_the_queue(elektron_buyer):
    job = job_in_review(elektron_buyer)
    client = logged_in(staff(elektron_buyer, Role.MEMBER))

    assert client.get(QUEUE_URL).status_code == 404
    assert client.get(f"/admin/extraction/extractionjob/{job.pk}/review/").status_code == 404


def test_review_screen_shows_fields_and_escaped_document_with_highlighted_evidence(elektron_buyer):
    hostile = (
        "<script>alert('x')</script>\nLieferant <img src=x onerror=alert(1)> GmbH\nInvoice number: R-1\nTotal: 119.00\n"
    )
    start = hostile.index("Lieferant")
    end = hostile.index(" GmbH") + len(" GmbH")
    _, output = _elektron()
    answer = json.loads(json.dumps(output))
    answer["supplier"]["name"] = {
        "value": hostile[start:end],
        "evidence": {"page": 1, "start": start, "end": end, "quote": hostile[start:end]},
    }
    job = job_in_review(elektron_buyer, pages=(hostile,), output=answer)

    page = logged_in(staff(elektron_buyer)).get(f"/admin/extraction/extractionjob/{job.pk}/review/")

    body = page.content.decode()
    assert page.status_code == 200
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body
    assert (
        '<mark class="evidence flagged" title="supplier.name" data-field="supplier.name">'
        "Lieferant &lt;img src=x onerror=alert(1)&gt; GmbH</mark>" in body
    )
    assert 'name="field:totals.gross" value="300.00"' in body
    assert f'name="state_version" value="{job.state_version}"' in body
    # Each field's status beside its value, and what put it in doubt: the name is printed but is
    # not the supplier's; the other values quote pages this document does not have.
    assert (
        '<td><label for="f-2">supplier.name</label></td>\n'
        '            <td><input type="text" id="f-2" class="field-value" name="field:supplier.name" value="Lieferant '
        '&lt;img src=x onerror=alert(1)&gt; GmbH" data-original="Lieferant &lt;img src=x onerror=alert(1)&gt; GmbH">\n'
        '                <input type="hidden" class="field-evidence" name="evidence:supplier.name" value="">\n'
        '                <input type="text" class="reason" name="reason:supplier.name" value="" '
        'placeholder="why, if printed nowhere" aria-label="reason for supplier.name"></td>\n'
        '            <td class="trust"><span title="read by model; failed supplier_master_data">unverified</span></td>'
    ) in body
    claimed = [
        path
        for path, field in parse_invoice(json.dumps(answer), schema="invoice.v1").fields()
        if field.value is not None
    ]
    assert body.count(
        '<td class="trust"><span title="read by model; failed evidence_spans">unverified</span></td>'
    ) == (len(claimed) - 1)


def test_approve_through_the_admin_with_a_corrected_field(elektron_buyer):
    job = job_in_review(elektron_buyer)
    client = logged_in(staff(elektron_buyer))

    response = client.post(
        f"/admin/extraction/extractionjob/{job.pk}/review/",
        {
            "state_version": job.state_version,
            "action": "approve",
            "field:totals.gross": "300.00",
            "comment": "",
        },
    )

    assert response.status_code == 302 and response.url == QUEUE_URL
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    # The corrected value is the reviewer's; what the reviewer left stays the model's.
    fields = ExtractionResult.objects.get(job_id=job.pk).validation["fields"]
    assert (fields["totals.gross"]["status"], fields["totals.gross"]["sources"]) == ("verified", ["reviewer"])
    assert (fields["totals.net"]["status"], fields["totals.net"]["sources"]) == ("verified", ["model"])


def test_the_review_screen_names_the_earlier_job_and_releases_a_possible_duplicate(elektron_buyer):
    _, right = _elektron()
    earlier = make_job(elektron_buyer, state=JobState.SUCCEEDED, output=right)
    duplicate_check(
        tenant_id=elektron_buyer.pk, job_id=earlier.pk, invoice=parse_invoice(json.dumps(right), schema="invoice.v1")
    )
    job = job_in_review(elektron_buyer)
    client = logged_in(staff(elektron_buyer))
    form = {"state_version": job.state_version, "action": "approve", "field:totals.gross": "300.00", "comment": ""}

    refused = client.post(f"/admin/extraction/extractionjob/{job.pk}/review/", form)

    assert refused.status_code == 409
    page = refused.content.decode()
    assert "A possible duplicate of job" in page and str(earlier.pk) in page
    assert 'name="not_duplicate"' in page

    released = client.post(f"/admin/extraction/extractionjob/{job.pk}/review/", {**form, "not_duplicate": "on"})

    assert released.status_code == 302 and released.url == QUEUE_URL
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED


def test_refused_approval_in_the_admin_shows_the_reasons_and_keeps_the_input(elektron_buyer):
    job = job_in_review(elektron_buyer)
    client = logged_in(staff(elektron_buyer))

    response = client.post(
        f"/admin/extraction/extractionjob/{job.pk}/review/",
        {
            "state_version": job.state_version,
            "action": "approve",
            "field:totals.gross": "310.00",
            "reason:totals.gross": "the supplier's letter says so",
        },
    )

    body = response.content.decode()
    assert response.status_code == 409
    assert "Not approved" in body and "totals_sum_mismatch" in body
    assert 'name="field:totals.gross" value="310.00"' in body
    assert 'name="reason:totals.gross" value="the supplier&#x27;s letter says so"' in body


def test_second_reviewer_in_the_admin_gets_a_clear_message(elektron_buyer):
    job = job_in_review(elektron_buyer)
    first, second = logged_in(staff(elektron_buyer)), logged_in(staff(elektron_buyer))
    form = {"state_version": job.state_version, "action": "reject", "comment": "duplicate"}

    assert first.post(f"/admin/extraction/extractionjob/{job.pk}/review/", form).status_code == 302
    late = second.post(f"/admin/extraction/extractionjob/{job.pk}/review/", form, follow=True)

    assert "Someone else decided this job first" in late.content.decode()
    assert ReviewDecision.objects.filter(job_id=job.pk).count() == 1


def test_operator_sees_the_tenants_jobs_read_only_with_a_link_to_the_queue(elektron_buyer):
    job = job_in_review(elektron_buyer)
    client = logged_in(staff(elektron_buyer, Role.OPERATOR))

    changelist = client.get("/admin/extraction/extractionjob/")
    detail = client.get(f"/admin/extraction/extractionjob/{job.pk}/change/")
    edit = client.post(f"/admin/extraction/extractionjob/{job.pk}/change/", {"state": "SUCCEEDED"})

    assert changelist.status_code == 200
    assert QUEUE_URL in changelist.content.decode() and str(job.pk) in changelist.content.decode()
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()
    assert "totals_sum_mismatch" in detail.content.decode()  # the stored validation is shown
    assert edit.status_code == 403
    job.refresh_from_db()
    assert job.state == JobState.REVIEW_REQUIRED
    assert client.get("/admin/").status_code == 200
