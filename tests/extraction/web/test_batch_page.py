"""The batch page (``/jobs/batches/<id>/``): the tenant's batch with its jobs by state, its
refused files and their problems, a page of its files linking their jobs, the live script;
another tenant's batch is 404; a batch job's page links its batch."""

from __future__ import annotations

import re

from accounts.models import Role
from extraction.models import JobState
from extraction.web.views import BATCH_PAGE_SIZE
from tests.extraction.intake.batch_support import finish, submit_batch
from tests.extraction.web.test_web_pages import logged_in


def state_count(html: str, state: str) -> int:
    match = re.search(rf'<tr data-state="{state}">.*?data-role="count">(\d+)</td>', html, re.S)
    assert match is not None, state
    return int(match.group(1))


def test_the_batch_page_counts_its_jobs_and_names_its_refusals(tenant_a):
    batch_id, (done, failed, waiting) = submit_batch(tenant_a, documents=3, refused=1)
    finish(done, JobState.SUCCEEDED)
    finish(failed, JobState.FAILED_TERMINAL)

    page = logged_in(tenant_a.tenant, Role.MEMBER).get(f"/jobs/batches/{batch_id}/")

    assert page.status_code == 200
    html = page.content.decode()
    assert [state_count(html, state) for state in ("SUCCEEDED", "FAILED_TERMINAL", "ACCEPTED", "READY")] == [1, 1, 1, 0]
    assert '<progress id="batch-progress" max="3" value="2">' in html
    assert "Unsupported document type" in html and "noise-0.bin" in html
    for job_id in (done, failed, waiting):
        assert f'href="/jobs/{job_id}/"' in html
    assert "extraction/batch.js" in html and "extraction/live.js" in html


def test_the_files_are_shown_a_page_at_a_time(tenant_a):
    batch_id, jobs = submit_batch(tenant_a, documents=BATCH_PAGE_SIZE + 1)
    client = logged_in(tenant_a.tenant, Role.MEMBER)

    first = client.get(f"/jobs/batches/{batch_id}/").content.decode()
    second = client.get(f"/jobs/batches/{batch_id}/?page=2").content.decode()

    assert [f'href="/jobs/{job}/"' in first for job in jobs] == [True] * BATCH_PAGE_SIZE + [False]
    assert [f'href="/jobs/{job}/"' in second for job in jobs] == [False] * BATCH_PAGE_SIZE + [True]
    assert "page 2 of 2" in second


def test_another_tenants_batch_is_404(tenant_a, tenant_b):
    batch_id, _ = submit_batch(tenant_b, documents=1)
    assert logged_in(tenant_a.tenant, Role.ADMIN).get(f"/jobs/batches/{batch_id}/").status_code == 404


def test_a_batch_jobs_page_links_its_batch(tenant_a):
    batch_id, (job_id,) = submit_batch(tenant_a, documents=1)
    page = logged_in(tenant_a.tenant, Role.MEMBER).get(f"/jobs/{job_id}/")
    assert f'href="/jobs/batches/{batch_id}/"' in page.content.decode()
