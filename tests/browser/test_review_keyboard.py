"""A review driven from the keyboard alone, in a real browser, on a real PDF: move to the gross
total with j, correct it with c, type the value printed on the page, Esc, approve with
Shift+A; the job ends SUCCEEDED with the correction in the decision's audit record. And the
box drawn over the gross total covers the printed total: the rectangle the fractions give on
the rendered page image is where the box is drawn, inside the image, and what is printed
under it, read back from a screenshot by OCR, is "300,00"."""

from __future__ import annotations

import io
import subprocess
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from PIL import Image

from accounts.models import Membership, Role
from extraction.models import ExtractionJob, ExtractionResult, JobState, ReviewDecision
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.browser.support import PASSWORD, log_in
from tests.extraction.review.test_review import ELEKTRON, QUEUE_URL, _tenant_knowing_elektron, job_in_review

pytestmark = pytest.mark.slow

GROSS = "totals.gross"
GROSS_BOX = [0.8605, 0.7387, 0.898, 0.7482]  # on page 2, where "300,00" is printed
MAX_PRESSES = 40


@pytest.fixture
def job(transactional_db):
    """The Elektron PDF in review, its gross total misread as 3000.00, evidence with boxes. Made
    before the browser starts: Playwright's event loop forbids synchronous ORM calls after."""
    return job_in_review(_tenant_knowing_elektron(), document_bytes=ELEKTRON.read_bytes())


@pytest.fixture
def reviewer(job):
    user = get_user_model().objects.create_user(
        username=f"rev-{uuid.uuid4().hex[:8]}", password=PASSWORD, is_staff=True
    )
    Membership.objects.create(user=user, tenant=job.tenant, role=Role.REVIEWER)
    return user


def ocr_line(png: bytes) -> str:
    """What Tesseract reads in a one-line crop, enlarged and framed in white as it reads best."""
    with Image.open(io.BytesIO(png)) as shot:
        grey = shot.convert("L")
        grey = grey.resize((grey.width * 4, grey.height * 4), Image.Resampling.LANCZOS)
        framed = Image.new("L", (grey.width + 40, grey.height + 40), 255)
        framed.paste(grey, (20, 20))
        buffer = io.BytesIO()
        framed.save(buffer, format="PNG")
    read = subprocess.run(
        ["tesseract", "stdin", "stdout", "--psm", "7"], input=buffer.getvalue(), capture_output=True, check=True
    )
    return read.stdout.decode().strip()


def dark_share(png: bytes) -> float:
    """The share of a crop's pixels dark enough to be print (grey level below 100 of 255)."""
    with Image.open(io.BytesIO(png)) as shot:
        histogram = shot.convert("L").histogram()
    return sum(histogram[:100]) / sum(histogram)


def review_by_keyboard(base_url: str, job_id: uuid.UUID, user: Any) -> dict[str, Any]:
    """Drive the review in chromium; what was seen on the way, for the assertions."""
    from playwright.sync_api import sync_playwright

    seen: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        # Twice the pixels per CSS pixel: the printed total is a few CSS pixels tall.
        context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=2)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            log_in(page, base_url, user)
            page.goto(f"{base_url}/admin/extraction/extractionjob/{job_id}/review/")
            image = page.locator(".page-image[data-page='2'] img")
            image.wait_for()
            page.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=image.element_handle(), timeout=60_000
            )

            # j until the gross total is the current field.
            path = []
            for _ in range(MAX_PRESSES):
                page.keyboard.press("j")
                current = page.locator("tr.review-field.current").get_attribute("data-field")
                path.append(current)
                if current == GROSS:
                    break
            seen["path"] = path
            box = page.locator(f".field-box[data-field='{GROSS}']")
            seen["box_is_current"] = "current" in (box.get_attribute("class") or "")
            seen["box_class"] = box.get_attribute("class")

            # Where the box is drawn, against where the fractions put it on the rendered image.
            seen["image_rect"] = image.bounding_box()
            seen["box_rect"] = box.bounding_box()
            seen["viewport_height"] = page.evaluate("window.innerHeight")
            # What is printed under the box, with the boxes out of the way of the pixels.
            page.add_style_tag(content=".field-box { visibility: hidden; }")
            rect = seen["box_rect"]
            shot = page.screenshot(
                clip={"x": rect["x"] - 1, "y": rect["y"] - 1, "width": rect["width"] + 2, "height": rect["height"] + 2}
            )
            seen["ocr"] = ocr_line(shot)
            seen["dark_share"] = dark_share(shot)
            below = page.screenshot(
                clip={
                    "x": rect["x"],
                    "y": rect["y"] + 2.5 * rect["height"],
                    "width": rect["width"],
                    "height": rect["height"],
                }
            )
            seen["ocr_below"] = ocr_line(below)

            # c, type the value as printed on the page, Esc, Shift+A.
            page.keyboard.press("c")
            seen["focused"] = page.evaluate("document.activeElement.name")
            page.keyboard.type("300.00")
            page.keyboard.press("Escape")
            seen["focused_after_escape"] = page.evaluate("document.activeElement.tagName")
            seen["row_changed"] = "changed" in (
                page.locator(f"tr.review-field[data-field='{GROSS}']").get_attribute("class") or ""
            )
            page.keyboard.press("Shift+A")
            page.wait_for_url(f"{base_url}{QUEUE_URL}")
            seen["message"] = page.locator("ul.messagelist").inner_text()
        finally:
            context.close()
            browser.close()
    return seen


def test_a_review_driven_by_keyboard_on_a_pdf_with_the_gross_box_over_the_printed_total(live_server, job, reviewer):
    seen = review_by_keyboard(live_server.url, job.pk, reviewer)

    assert seen["path"][-1] == GROSS, seen["path"]
    assert seen["box_is_current"], seen["box_class"]
    image, box = seen["image_rect"], seen["box_rect"]
    x0, y0, x1, y1 = GROSS_BOX
    expected = {
        "x": image["x"] + x0 * image["width"],
        "y": image["y"] + y0 * image["height"],
        "width": (x1 - x0) * image["width"],
        "height": (y1 - y0) * image["height"],
    }
    for side in ("x", "y", "width", "height"):
        assert box[side] == pytest.approx(expected[side], abs=1.0), (side, box, expected)
    assert image["x"] <= box["x"] and box["x"] + box["width"] <= image["x"] + image["width"], (box, image)
    assert image["y"] <= box["y"] and box["y"] + box["height"] <= image["y"] + image["height"], (box, image)
    assert 0 <= box["y"] and box["y"] + box["height"] <= seen["viewport_height"], (
        "the current box is scrolled into view"
    )
    assert seen["ocr"] == "300,00", seen
    assert seen["dark_share"] > 0.1, seen
    assert seen["ocr_below"] != "300,00", seen  # the amount due, printed lower, is not under this box

    assert seen["focused"] == f"field:{GROSS}"
    assert seen["focused_after_escape"] == "BODY" and seen["row_changed"]
    assert "Approved" in seen["message"], seen["message"]
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    output = ExtractionResult.objects.get(job_id=job.pk).output
    assert output["totals"]["gross"]["value"] == "300.00"
    assert output["totals"]["gross"]["evidence"]["quote"] == "300,00"
    (record,) = ReviewDecision.objects.get(job_id=job.pk).validation["review"]["corrections"]
    assert record == {
        "field": GROSS,
        "from": "3000.00",
        "to": "300.00",
        "evidenced_by": "found",
        "evidence": {"page": 2, "start": 1353, "end": 1359, "quote": "300,00", "boxes": [GROSS_BOX]},
        "reason": "",
        "reviewer": reviewer.username,
    }


@pytest.fixture
def two_jobs(transactional_db):
    """Two Elektron jobs in one tenant's queue, the first received a minute before the second."""
    tenant = _tenant_knowing_elektron()
    first, second = (job_in_review(tenant, document_bytes=ELEKTRON.read_bytes()) for _ in range(2))
    ExtractionJob.objects.filter(pk=second.pk).update(created_at=first.created_at + timedelta(minutes=1))
    return first, second


@pytest.fixture
def queue_reviewer(two_jobs):
    user = get_user_model().objects.create_user(
        username=f"rev-{uuid.uuid4().hex[:8]}", password=PASSWORD, is_staff=True
    )
    Membership.objects.create(user=user, tenant=two_jobs[0].tenant, role=Role.REVIEWER)
    return user


SELECT_PRINTED = """([page, start, end]) => {
    // A selection of the page text's characters [start, end), as a reviewer's drag makes it.
    const view = document.querySelector(`.document-page[data-page='${page}']`);
    view.closest("details").open = true;
    const walker = document.createTreeWalker(view, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let seen = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const length = node.textContent.length;
        if (seen <= start && start < seen + length) range.setStart(node, start - seen);
        if (seen < end && end <= seen + length) range.setEnd(node, end - seen);
        seen += length;
    }
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    view.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
    return selection.toString();
}"""


def current_field(page) -> str | None:
    return page.locator("tr.review-field.current").get_attribute("data-field")


def browse_the_queue(base_url: str, first: uuid.UUID, second: uuid.UUID, user: Any) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    seen: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            log_in(page, base_url, user)
            first_url = f"{base_url}/admin/extraction/extractionjob/{first}/review/"
            page.goto(first_url)
            page.locator(".field-box[data-field='totals.net']").click()
            seen["after_box_click"] = (current_field(page), page.evaluate("document.activeElement.dataset.field"))
            page.locator("tr.review-field[data-field='supplier.iban'] td.trust").click()
            iban_box = page.locator(".field-box[data-field='supplier.iban']")
            seen["after_row_click"] = (current_field(page), "current" in (iban_box.get_attribute("class") or ""))
            page.keyboard.press("a")
            iban_row = page.locator("tr.review-field[data-field='supplier.iban']")
            seen["after_accept"] = ("accepted" in (iban_row.get_attribute("class") or ""), current_field(page))
            page.keyboard.press("Shift+R")
            seen["after_reject_without_comment"] = (page.evaluate("document.activeElement.id"), page.url)
            page.keyboard.press("Escape")
            page.keyboard.press("n")
            page.wait_for_url(f"{base_url}/admin/extraction/extractionjob/{second}/review/")

            for _ in range(MAX_PRESSES):
                page.keyboard.press("j")
                if current_field(page) == GROSS:
                    break
            seen["selected_text"] = page.evaluate(SELECT_PRINTED, [2, 1494, 1500])  # the amount due's 300,00
            gross_row = page.locator(f"tr.review-field[data-field='{GROSS}']")
            seen["after_selection"] = (
                gross_row.locator("input.field-value").input_value(),
                gross_row.locator("input.field-evidence").input_value(),
            )
            page.keyboard.press("Shift+A")
            page.wait_for_url(f"{base_url}{QUEUE_URL}")
        finally:
            context.close()
            browser.close()
    return seen


def test_clicks_find_fields_and_boxes_a_selection_evidences_and_n_opens_the_next_job(
    live_server, two_jobs, queue_reviewer
):
    first, second = two_jobs

    seen = browse_the_queue(live_server.url, first.pk, second.pk, queue_reviewer)

    assert seen["after_box_click"] == ("totals.net", "totals.net")  # the box's row, focused
    assert seen["after_row_click"] == ("supplier.iban", True)  # the row's box, highlighted
    assert seen["after_accept"][0] and seen["after_accept"][1] != "supplier.iban"
    assert seen["after_reject_without_comment"] == (
        "comment",
        f"{live_server.url}/admin/extraction/extractionjob/{first.pk}/review/",
    )
    assert seen["selected_text"] == "300,00"
    assert seen["after_selection"] == ("300.00", "2:1494:1500")
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == JobState.REVIEW_REQUIRED and not ReviewDecision.objects.filter(job_id=first.pk).exists()
    assert second.state == JobState.SUCCEEDED
    (record,) = ReviewDecision.objects.get(job_id=second.pk).validation["review"]["corrections"]
    assert (record["evidenced_by"], record["to"]) == ("selected", "300.00")
    assert (record["evidence"]["start"], record["evidence"]["end"], record["evidence"]["quote"]) == (
        1494,
        1500,
        "300,00",
    )
