"""The reviewer's screen in a real browser at a laptop's 1280×800: the extracted fields with
their evidence and the document text sit side by side and never overlap, even when the
evidence is a long unbroken token (a mangled IBAN, a supplier name without spaces)."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model

from accounts.models import Membership, Role
from extraction.intake.text import extract_document_text
from extraction.providers.builtin import extract_invoice
from tests.browser.support import PASSWORD, log_in
from tests.extraction.review.test_review import ELEKTRON, QUEUE_URL, job_in_review
from tests.factories import make_tenant, unique_slug

pytestmark = pytest.mark.slow

VIEWPORT = {"width": 1280, "height": 800}
IBAN_LIKE = ("DE89370400440532013000" * 10)[:200]
SUPPLIER = "GroßhandelsgesellschaftFürIndustriebedarfUndElektrotechnikNordrheinWestfalen" * 2


def answer_with_long_evidence(text: str) -> dict:
    """The Elektron answer, with supplier name and IBAN quoting the unbroken tokens of ``text``."""
    answer = extract_invoice(extract_document_text(ELEKTRON.read_bytes(), "application/pdf"))
    for name, token in (("name", SUPPLIER), ("iban", IBAN_LIKE)):
        start = text.index(token)
        answer["supplier"][name] = {
            "value": token,
            "evidence": {"page": 1, "start": start, "end": start + len(token), "quote": token},
        }
    return answer


@pytest.fixture
def job(transactional_db):
    """A REVIEW_REQUIRED job whose evidence is long unbroken tokens. Made before the browser
    starts: Playwright's event loop then forbids synchronous ORM calls in this thread."""
    text = f"Supplier: {SUPPLIER}\nIBAN: {IBAN_LIKE}\nInvoice number: R-1\nTotal: 3000.00 EUR\n"
    tenant = make_tenant(unique_slug("lay"))
    return job_in_review(tenant, pages=(text,), output=answer_with_long_evidence(text))


@pytest.fixture
def reviewer(job):
    user = get_user_model().objects.create_user(
        username=f"rev-{uuid.uuid4().hex[:8]}", password=PASSWORD, is_staff=True
    )
    Membership.objects.create(user=user, tenant=job.tenant, role=Role.REVIEWER)
    return user


def right(box: dict) -> float:
    return box["x"] + box["width"]


def test_evidence_column_never_overlaps_the_document_text_at_1280(live_server, job, reviewer, browser_page, tmp_path):
    page = browser_page
    page.set_viewport_size(VIEWPORT)
    log_in(page, live_server.url, reviewer)

    page.goto(f"{live_server.url}{QUEUE_URL}")
    page.click(f"#review-queue a[href$='/{job.pk}/review/']")
    page.wait_for_selector(".document-page")
    shot = tmp_path / "review-1280x800.png"
    page.screenshot(path=str(shot), full_page=True)

    column = page.locator(".review-fields").bounding_box()
    document = page.locator(".document-page").first.bounding_box()
    cells = page.locator(".review-fields tbody td.evidence").evaluate_all(
        """cells => cells.map(c => {
            const r = c.getBoundingClientRect();
            return {text: c.innerText.slice(0, 80), x: r.x, width: r.width,
                    scrollWidth: c.scrollWidth, clientWidth: c.clientWidth};
        })"""
    )
    widest = max(cells, key=right)
    seen = f"fields column {column}, document panel {document}, widest evidence cell {widest}; screenshot {shot}"
    assert right(column) <= document["x"], seen
    for cell in cells:
        assert column["x"] <= cell["x"] and right(cell) <= right(column), f"{cell['text']!r} leaves its column: {seen}"
        assert cell["scrollWidth"] <= cell["clientWidth"], f"{cell['text']!r} overflows its cell: {seen}"
    assert any(IBAN_LIKE[:30] in cell["text"] for cell in cells), seen
    # The document's own long lines wrap inside the panel rather than hide behind a scrollbar.
    assert page.locator(".document-page").first.evaluate("p => p.scrollWidth <= p.clientWidth"), seen
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"], seen
