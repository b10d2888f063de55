"""The model as the second reader of a bundle's boundaries (issue #27): a policy with
``bundle_second_reader`` asks its model where the detector decided a junction narrowly; the
answer decides those junctions only, under the pool's capacity, in the attempt's ledger; a
failed or nonsensical answer leaves the detector's decision."""

from __future__ import annotations

import uuid

import pytest

from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.intake.bundles import split_bundle
from extraction.models import Attempt, AttemptOutcome, ExtractionJob, JobEvent, JobState
from tests.extraction.execution.test_bundle_jobs import ELEKTRON, FREE_FIBER
from tests.extraction.intake.test_bundles import bundle_of
from tests.factories import make_document, make_job

# Two invoices; the second names another supplier but prints no number: the detector keeps
# them together by a small margin (the supplier's name and the first's closed totals, 4 < 6).
ACME = (
    "ACME Supplies GmbH\nVAT ID: DE136695976\nInvoice number: A-100\nInvoice date: 2026-11-02\n"
    "Widget 2 x 50.00 = 100.00\nNet total: 100.00 EUR\nVAT 19%: 19.00 EUR\nTotal: 119.00 EUR\n"
)
BOLT = "Bolt Parts GmbH\nWidget 1 x 10.00 = 10.00\nNet total: 10.00 EUR\nVAT 19%: 1.90 EUR\nTotal: 11.90 EUR\n"


def test_the_text_bundle_is_one_narrow_junction_for_the_detector():
    split = split_bundle([ACME, BOLT])
    assert [(part.first, part.last) for part in split.parts] == [(1, 2)]
    [junction] = split.junctions
    assert (junction.page, junction.score, junction.boundary, junction.uncertain) == (2, 4, False, True)


@pytest.fixture
def second_reader_policy(sim_policy):
    """``second_reader_policy(enabled)``: a model policy on the simulator, its second reader on or off."""
    return lambda enabled=True: sim_policy(reading="model", bundle_second_reader=enabled)


def _text_bundle_job(tenant, policy: str) -> ExtractionJob:
    document = make_document(tenant.tenant, content=f"{ACME}\f{BOLT}".encode(), filename="two.txt")
    return make_job(tenant.tenant, document=document, model_policy=policy)


def _run(jobs: int = 1) -> None:
    assert worker.run_slot(WorkerRuntime(worker_id=f"w-{uuid.uuid4().hex[:6]}"), max_jobs=jobs) == jobs


def _ledger_tokens(job: ExtractionJob) -> tuple[int | None, int | None]:
    attempt = Attempt.objects.get(job=job)
    return attempt.input_tokens, attempt.output_tokens


@pytest.mark.django_db(transaction=True)
def test_the_model_decides_the_narrow_junction_and_the_bundle_is_split(tenant, sim, second_reader_policy):
    sim.control(boundary_answer="1,2")
    job = _text_bundle_job(tenant, second_reader_policy())

    _run()

    job.refresh_from_db()
    assert job.state == JobState.SPLIT
    parts = ExtractionJob.objects.filter(parent=job).order_by("first_page")
    assert [(part.first_page, part.last_page) for part in parts] == [(1, 1), (2, 2)]
    stats = sim.stats()
    assert stats["outcomes"] == {"boundaries": 1}  # one question, no extraction of the whole
    [asked] = stats["recent_requests"]
    assert (asked["json_schema_name"], asked["max_completion_tokens"]) == ("invoice_first_pages", 200)
    detail = JobEvent.objects.get(job=job, to_state=JobState.SPLIT).detail
    assert detail["second_reader"] == {"model": "sim-model", "decided": [2], "first_pages": [1, 2], "error": None}
    attempt = Attempt.objects.get(job=job)
    assert (attempt.outcome, attempt.provider) == (AttemptOutcome.SPLIT, "openai")
    assert _ledger_tokens(job) == (stats["tokens"]["prompt"], stats["tokens"]["completion"])


@pytest.mark.django_db(transaction=True)
def test_a_model_that_keeps_the_pages_together_leaves_one_invoice_and_one_ledger_row(tenant, sim, second_reader_policy):
    sim.control(boundary_answer="1")
    job = _text_bundle_job(tenant, second_reader_policy())

    _run()

    job.refresh_from_db()
    assert job.state in (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED)
    assert not ExtractionJob.objects.filter(parent=job).exists()
    stats = sim.stats()
    assert stats["outcomes"] == {"boundaries": 1, "ok": 1}  # the question, then the extraction
    # One attempt, one ledger row: the question's tokens and the extraction's.
    assert _ledger_tokens(job) == (stats["tokens"]["prompt"], stats["tokens"]["completion"])


@pytest.mark.django_db(transaction=True)
def test_a_failed_second_reader_leaves_the_detectors_decision(tenant, sim, second_reader_policy):
    sim.control(error_next=1)  # the question fails; the extraction after it does not
    job = _text_bundle_job(tenant, second_reader_policy())

    _run()

    job.refresh_from_db()
    assert job.state in (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED)  # read whole, as the detector decided
    assert not ExtractionJob.objects.filter(parent=job).exists()
    assert sim.stats()["outcomes"] == {"boundaries": 1, "ok": 1}


@pytest.mark.django_db(transaction=True)
def test_an_answer_naming_pages_the_bundle_lacks_is_not_used(tenant, sim, second_reader_policy):
    sim.control(boundary_answer="1,7")
    job = _text_bundle_job(tenant, second_reader_policy())

    _run()

    job.refresh_from_db()
    assert job.state in (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED)
    assert not ExtractionJob.objects.filter(parent=job).exists()


@pytest.mark.django_db(transaction=True)
def test_without_the_policys_second_reader_no_question_is_asked(tenant, sim, second_reader_policy):
    sim.control(boundary_answer="1,2")
    job = _text_bundle_job(tenant, second_reader_policy(enabled=False))

    _run()

    assert "boundaries" not in sim.stats()["outcomes"]
    assert not ExtractionJob.objects.filter(parent=job).exists()


@pytest.mark.django_db(transaction=True)
def test_a_bundle_with_no_narrow_junction_is_split_without_asking(tenant, sim, second_reader_policy):
    document = make_document(tenant.tenant, content=bundle_of(ELEKTRON, FREE_FIBER), filename="month.pdf")
    job = make_job(tenant.tenant, document=document, model_policy=second_reader_policy())

    _run()

    job.refresh_from_db()
    assert job.state == JobState.SPLIT
    assert sim.stats()["calls"] == 0
    assert "second_reader" not in JobEvent.objects.get(job=job, to_state=JobState.SPLIT).detail
