"""The run command's demo upload: running it again must not submit the invoices again (each
would be posted to the demo ERP once more)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from extraction.management.commands.demo_upload import DEMO_FILES
from extraction.models import ExtractionJob
from tests.factories import make_tenant_context


@pytest.mark.django_db(transaction=True)
def test_running_the_demo_again_replays_its_jobs_instead_of_submitting_new_ones(live_server):
    demo = make_tenant_context("demo-again")
    first, second = io.StringIO(), io.StringIO()
    call_command("demo_upload", base_url=live_server.url, token=demo.token, timeout=0, stdout=first)
    call_command("demo_upload", base_url=live_server.url, token=demo.token, timeout=0, stdout=second)
    assert ExtractionJob.objects.filter(tenant=demo.tenant).count() == len(DEMO_FILES)
    assert second.getvalue().count("(submitted by an earlier run)") == len(DEMO_FILES)
    assert "earlier run" not in first.getvalue()
