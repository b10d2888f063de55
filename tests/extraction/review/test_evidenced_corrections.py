"""A reviewer's correction is evidenced before the decision is taken: the printed text they
selected, or the typed value found printed in the document, becomes the field's evidence; a
value printed nowhere needs a stated reason, else nothing is written. The decision's audit
record keeps who changed which field from what to what, and on what."""

from __future__ import annotations

from extraction.models import ExtractionResult, JobState, ReviewDecision
from extraction.review import decisions as review
from tests.extraction.review.test_review import ELEKTRON, _elektron, job_in_review, logged_in, staff

GROSS_ON_PAGE_2 = (2, 1353, 1359)  # "300,00", the printed gross total of the Elektron invoice


def test_a_typed_value_printed_nowhere_without_a_reason_is_refused_naming_the_field(elektron_buyer):
    job = job_in_review(elektron_buyer)

    result = review.approve_review(
        job_id=job.pk,
        reviewer=staff(elektron_buyer),
        seen_state_version=job.state_version,
        corrections={"totals.gross": "300.00", "invoice_number": "R-4711"},
    )

    assert result.status == review.REFUSED and result.reasons == ["correction_unevidenced"]
    assert result.message.startswith("Not printed in the document: invoice_number.")
    job.refresh_from_db()
    assert job.state == JobState.REVIEW_REQUIRED
    assert not ReviewDecision.objects.filter(job_id=job.pk).exists()


def test_a_typed_amount_found_printed_becomes_the_fields_evidence_with_its_box(elektron_buyer):
    job = job_in_review(elektron_buyer, document_bytes=ELEKTRON.read_bytes())
    reviewer = staff(elektron_buyer, name="rita")

    result = review.approve_review(
        job_id=job.pk, reviewer=reviewer, seen_state_version=job.state_version, corrections={"totals.gross": "300.00"}
    )

    assert result.status == review.APPROVED, result
    evidence = {"page": 2, "start": 1353, "end": 1359, "quote": "300,00", "boxes": [[0.8605, 0.7387, 0.898, 0.7482]]}
    stored = ExtractionResult.objects.get(job_id=job.pk)
    assert stored.output["totals"]["gross"] == {"value": "300.00", "evidence": evidence}
    # The value is still the reviewer's word: attested, not re-checked against its quote.
    assert stored.validation["fields"]["totals.gross"]["sources"] == ["reviewer"]
    decision = ReviewDecision.objects.get(job_id=job.pk)
    assert decision.validation["review"]["corrections"] == [
        {
            "field": "totals.gross",
            "from": "3000.00",
            "to": "300.00",
            "evidenced_by": "found",
            "evidence": evidence,
            "reason": "",
            "reviewer": "rita",
        }
    ]


def test_a_selection_in_the_document_text_is_the_evidence_when_it_reads_as_the_value(elektron_buyer):
    job = job_in_review(elektron_buyer)
    # The selection is the amount due's "300,00", printed below the gross: a selection that
    # reads as the value is the evidence, wherever the value is also printed.
    amount_due = (2, 1494, 1500)
    assert _elektron()[0].span(*amount_due) == "300,00"

    result = review.approve_review(
        job_id=job.pk,
        reviewer=staff(elektron_buyer),
        seen_state_version=job.state_version,
        corrections={"totals.gross": "300.00"},
        support={"totals.gross": review.CorrectionSupport(selection=amount_due)},
    )

    assert result.status == review.APPROVED, result
    (record,) = ReviewDecision.objects.get(job_id=job.pk).validation["review"]["corrections"]
    assert record["evidenced_by"] == "selected"
    assert (record["evidence"]["page"], record["evidence"]["start"], record["evidence"]["end"]) == amount_due


def test_a_selection_that_does_not_read_as_the_value_falls_back_to_finding_it(elektron_buyer):
    job = job_in_review(elektron_buyer)

    result = review.approve_review(
        job_id=job.pk,
        reviewer=staff(elektron_buyer),
        seen_state_version=job.state_version,
        corrections={"totals.gross": "300.00"},
        support={"totals.gross": review.CorrectionSupport(selection=(2, 1212, 1218))},  # "252,10", the net
    )

    assert result.status == review.APPROVED, result
    (record,) = ReviewDecision.objects.get(job_id=job.pk).validation["review"]["corrections"]
    assert record["evidenced_by"] == "found"
    assert (record["evidence"]["page"], record["evidence"]["quote"]) == (2, "300,00")


def test_a_value_printed_nowhere_is_taken_with_a_reason_and_loses_the_old_quote(elektron_buyer):
    job = job_in_review(elektron_buyer)

    result = review.approve_review(
        job_id=job.pk,
        reviewer=staff(elektron_buyer),
        seen_state_version=job.state_version,
        corrections={"totals.gross": "300.00", "invoice_number": "R-4711"},
        support={"invoice_number": review.CorrectionSupport(reason=" confirmed by the supplier by phone ")},
    )

    assert result.status == review.APPROVED, result
    stored = ExtractionResult.objects.get(job_id=job.pk).output
    assert stored["invoice_number"] == {"value": "R-4711", "evidence": None}
    records = {r["field"]: r for r in ReviewDecision.objects.get(job_id=job.pk).validation["review"]["corrections"]}
    assert records["invoice_number"]["evidenced_by"] == "reason"
    assert records["invoice_number"]["reason"] == "confirmed by the supplier by phone"
    assert records["invoice_number"]["evidence"] is None
    assert records["totals.gross"]["evidenced_by"] == "found"


def test_the_admin_form_carries_the_selection_and_the_reason(elektron_buyer):
    job = job_in_review(elektron_buyer)
    client = logged_in(staff(elektron_buyer))
    url = f"/admin/extraction/extractionjob/{job.pk}/review/"
    form = {
        "state_version": job.state_version,
        "action": "approve",
        "field:totals.gross": "300.00",
        "evidence:totals.gross": "2:1494:1500",
        "field:invoice_number": "R-4711",
        "reason:invoice_number": "",
    }

    refused = client.post(url, form)
    approved = client.post(url, {**form, "reason:invoice_number": "typo in the printed number"})

    assert refused.status_code == 409
    assert "Not printed in the document: invoice_number." in refused.content.decode()
    assert approved.status_code == 302
    records = {r["field"]: r for r in ReviewDecision.objects.get(job_id=job.pk).validation["review"]["corrections"]}
    assert (records["totals.gross"]["evidenced_by"], records["totals.gross"]["evidence"]["start"]) == ("selected", 1494)
    assert records["invoice_number"]["reason"] == "typo in the printed number"


def test_the_audit_log_shows_who_changed_what_from_what(elektron_buyer):
    job = job_in_review(elektron_buyer)
    reviewer = staff(elektron_buyer, name=f"rita-{job.pk.hex[:6]}")
    review.approve_review(
        job_id=job.pk,
        reviewer=reviewer,
        seen_state_version=job.state_version,
        corrections={"totals.gross": "300.00", "invoice_number": "<b>R-4711</b>"},
        support={"invoice_number": review.CorrectionSupport(reason="typo on the print")},
    )
    decision = ReviewDecision.objects.get(job_id=job.pk)

    body = logged_in(reviewer).get(f"/admin/extraction/reviewdecision/{decision.pk}/change/").content.decode()

    assert (
        "<tr><td>invoice_number</td><td>181301674</td><td>&lt;b&gt;R-4711&lt;/b&gt;</td>"
        f"<td>reason: typo on the print</td><td>{reviewer.username}</td></tr>"
    ) in body
    assert (
        "<tr><td>totals.gross</td><td>3000.00</td><td>300.00</td>"
        f"<td>found: p.2 [1353:1359] «300,00»</td><td>{reviewer.username}</td></tr>"
    ) in body
