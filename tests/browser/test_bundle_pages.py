"""A bundle's jobs in the browser (issue #27): the split job's page lists its invoices, each a
link to its part's job; a part's page names the job it came from and shows only its own pages
of the document."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import Membership
from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.models import ExtractionJob, JobState
from tests.browser.support import log_in
from tests.extraction.execution.test_bundle_jobs import ELEKTRON, FREE_FIBER
from tests.extraction.intake.test_bundles import bundle_of
from tests.factories import make_document, make_job, take_in

pytestmark = pytest.mark.slow


@pytest.fixture
def split_bundle(member):
    """A bundle of two invoices split by a worker and both parts read: (the split job's id, the
    parts' ids and states in page order). Made before the browser starts: the ORM refuses to
    run inside Playwright's event loop."""
    tenant = Membership.objects.get(user=member).tenant
    document = make_document(tenant, content=bundle_of(ELEKTRON, FREE_FIBER), filename="month.pdf")
    parent = make_job(tenant, document=document)
    assert worker.run_slot(WorkerRuntime(worker_id=f"w-{uuid.uuid4().hex[:6]}"), max_jobs=1) == 1
    parts = list(ExtractionJob.objects.filter(parent=parent).order_by("first_page"))
    for part in parts:
        take_in(part.pk)
    assert worker.run_slot(WorkerRuntime(worker_id=f"w-{uuid.uuid4().hex[:6]}"), max_jobs=2) == 2
    return parent.pk, [part.pk for part in parts], [ExtractionJob.objects.get(pk=part.pk).state for part in parts]


def test_a_split_job_lists_its_invoices_and_a_part_shows_its_own_pages(live_server, member, split_bundle, browser_page):
    parent_id, part_ids, states = split_bundle
    page = browser_page
    log_in(page, live_server.url, member)

    page.goto(f"{live_server.url}/jobs/{parent_id}/")
    page.wait_for_selector("#parts:not([hidden])")
    assert page.text_content("#job-state") == JobState.SPLIT
    rows = page.locator("#part-rows tr")
    assert rows.count() == 2
    assert [rows.nth(i).locator("td").nth(0).text_content() for i in range(2)] == ["1–3", "4–5"]
    assert [rows.nth(i).locator("td").nth(2).text_content() for i in range(2)] == states
    assert rows.nth(1).locator("a").get_attribute("href") == f"/jobs/{part_ids[1]}/"
    assert page.is_hidden("#parent-link")

    rows.nth(1).locator("a").click()
    page.wait_for_url(f"{live_server.url}/jobs/{part_ids[1]}/")
    page.wait_for_selector("#parent-link:not([hidden])")
    assert page.text_content("#parent-pages") == "4–5"
    assert page.get_attribute("#parent-job", "href") == f"/jobs/{parent_id}/"
    assert page.is_hidden("#parts")
    page.wait_for_selector("#document-text h3")
    assert page.locator("#document-text h3").all_text_contents() == ["Page 4", "Page 5"]
