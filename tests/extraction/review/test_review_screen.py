"""The review screen's document: a PDF's pages as images with a box over every field's evidence,
coloured by the field's status; text-only pages as text; the page images behind the reviewer's
own permission; and the next job of the queue for the "n" key."""

from __future__ import annotations

import io
import re
from datetime import timedelta

from django.utils import timezone
from PIL import Image

from accounts.models import Role
from extraction.models import ExtractionJob
from tests.extraction.review.test_review import ELEKTRON, job_in_review, logged_in, staff
from tests.factories import make_tenant, unique_slug

REVIEW = "/admin/extraction/extractionjob/{}/review/"


def test_a_pdf_page_is_shown_as_its_image_with_a_box_per_field_coloured_by_status(elektron_buyer):
    job = job_in_review(elektron_buyer, document_bytes=ELEKTRON.read_bytes())

    body = logged_in(staff(elektron_buyer)).get(REVIEW.format(job.pk)).content.decode()

    image = f'<img src="{REVIEW.format(job.pk)}pages/2.png" alt="Page 2 of the document">'
    assert image in body
    # The totals do not add up with the misread gross (3000.00 where 300,00 is printed): each of
    # them is in doubt, a red box where its quote is printed, at the fractions its evidence gives.
    assert (
        '<div class="field-box status-unverified" data-field="totals.gross" title="totals.gross (unverified)" '
        'style="left:86.050%;top:73.870%;width:3.750%;height:0.950%"></div>'
    ) in body
    assert (
        '<div class="field-box status-verified" data-field="supplier.iban" title="supplier.iban (verified)" '
        'style="left:51.760%;top:11.280%;width:15.090%;height:0.950%"></div>'
    ) in body
    assert body.count('<div class="field-box ') == 22  # every field with evidence; none drawn twice
    # The text stays selectable below each image, for evidencing a correction.
    assert body.count('<details class="page-text">') == 3
    assert '<tr class="review-field status-' in body and 'data-field="totals.gross"' in body


def test_a_document_without_page_images_is_shown_as_text(elektron_buyer):
    job = job_in_review(elektron_buyer, pages=("Invoice number: R-1\nTotal: 119.00\n",))

    body = logged_in(staff(elektron_buyer)).get(REVIEW.format(job.pk)).content.decode()

    assert "pages/1.png" not in body and 'class="field-box' not in body
    assert '<div class="document-page" data-page="1">' in body


def test_the_page_image_is_served_to_the_tenants_reviewers_only(elektron_buyer):
    job = job_in_review(elektron_buyer, document_bytes=ELEKTRON.read_bytes())
    url = f"{REVIEW.format(job.pk)}pages/2.png"

    served = logged_in(staff(elektron_buyer)).get(url)
    stranger = logged_in(staff(make_tenant(unique_slug("other")))).get(url)
    member = logged_in(staff(elektron_buyer, Role.MEMBER)).get(url)

    assert served.status_code == 200 and served["Content-Type"] == "image/png"
    with Image.open(io.BytesIO(served.content)) as png:
        assert png.width > 500 and png.height > png.width  # an A4 page, portrait
    assert stranger.status_code == 404
    assert member.status_code == 404
    assert logged_in(staff(elektron_buyer)).get(f"{REVIEW.format(job.pk)}pages/9.png").status_code == 404


def test_a_text_documents_page_image_is_not_found(elektron_buyer):
    job = job_in_review(elektron_buyer, pages=("Total: 119.00\n",))

    assert logged_in(staff(elektron_buyer)).get(f"{REVIEW.format(job.pk)}pages/1.png").status_code == 404


def test_the_screen_names_the_next_job_of_the_queue_and_wraps_to_the_oldest(elektron_buyer):
    first, second, third = (job_in_review(elektron_buyer) for _ in range(3))
    # One test transaction gives every job the same now(): received a minute apart instead.
    received = timezone.now()
    for minutes, job in enumerate((first, second, third)):
        ExtractionJob.objects.filter(pk=job.pk).update(created_at=received + timedelta(minutes=minutes))
    client = logged_in(staff(elektron_buyer))

    def next_of(job) -> str | None:
        found = re.search(r'data-next-url="([^"]+)"', client.get(REVIEW.format(job.pk)).content.decode())
        return found[1] if found else None

    assert next_of(first) == REVIEW.format(second.pk)
    assert next_of(second) == REVIEW.format(third.pk)
    assert next_of(third) == REVIEW.format(first.pk)


def test_the_only_job_waiting_has_no_next(elektron_buyer):
    job = job_in_review(elektron_buyer)

    body = logged_in(staff(elektron_buyer)).get(REVIEW.format(job.pk)).content.decode()

    assert "data-next-url" not in body and "(none waiting)" in body
    assert "extraction/review.js" in body
