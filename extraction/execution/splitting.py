"""A bundle split into its invoices: the first step of an attempt on a document of several pages
(issue #27).

A scan batch or an ERP's monthly export arrives as one PDF. Before anything reads it as an
invoice, the attempt asks :func:`~extraction.intake.bundles.split_document` where one invoice
ends and the next begins; a document of two or more parts is not read at all: its job ends
SPLIT, and one job per part is accepted in the same transaction (``split_job`` in
lifecycle.sql), each with its pages, to be claimed, read, judged, reviewed and delivered like
any other (ACC-7). A part is never split again.

The second reader: a model policy with ``bundle_second_reader: true`` (settings.MODEL_POLICIES)
whose pool is a model asks that model where the detector decided a junction by a small margin
(extraction.providers.boundaries; the attempt makes the call, under the pool's capacity like any
model call). Its answer decides those junctions, and only those; a model that fails or answers
nonsense leaves the detector's decision. Its tokens are the attempt's, in the ledger.

What keeps a wrong split from posting silently: a part reads only its own pages
(:meth:`DocumentText.part`), so a part that lost pages or took another invoice's mostly fails
its arithmetic or misses a field and goes to review; and a part has no e-invoice, since a
Factur-X/ZUGFeRD XML describes one invoice and cannot tell which part it is (were the document
one invoice, it would not have been split: the XML answers it whole).

``options.split_bundles: false`` reads the document as one invoice, whatever it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from extraction.execution import lifecycle
from extraction.execution.lifecycle import AttemptReport, Claim
from extraction.execution.outcomes import AttemptResult
from extraction.intake.bundles import BundleSplit, split_document
from extraction.intake.text import SOURCE_EINVOICE, DocumentText
from extraction.models import AttemptOutcome
from extraction.providers import PoolBinding, provider_for_policy

SPLIT_OPTION = "split_bundles"
SECOND_READER_POLICY_KEY = "bundle_second_reader"


@dataclass(frozen=True)
class SecondReading:
    """What the second reader said: the pages it says begin an invoice (None: no usable
    answer, and ``error`` says why), and the call's ledger entry."""

    first_pages: frozenset[int] | None
    report: AttemptReport
    error: str = ""


@dataclass(frozen=True)
class BundleDecision:
    """How a document's pages fall into invoices, and who decided."""

    split: BundleSplit
    second_reading: SecondReading | None = None

    @property
    def splits(self) -> bool:
        return len(self.split.parts) > 1

    @property
    def uncertain_pages(self) -> tuple[int, ...]:
        """The junctions decided by a small margin: what a second reader is asked about."""
        return tuple(junction.page for junction in self.split.junctions if junction.uncertain)

    def detail(self) -> dict[str, Any]:
        """The split job's event detail: each part's first page, what started it, whether it
        was decided narrowly, and the second reader's say."""
        detail: dict[str, Any] = {
            "boundaries": [
                {"page": part.first, "signals": sorted(part.signals), "uncertain": part.uncertain}
                for part in self.split.parts
            ]
        }
        reading = self.second_reading
        if reading is not None:
            detail["second_reader"] = {
                "model": reading.report.model,
                "decided": [junction.page for junction in self.split.junctions if junction.second_reader],
                "first_pages": sorted(reading.first_pages) if reading.first_pages is not None else None,
                "error": reading.error or None,
            }
        return detail


def first_reading(claim: Claim, document: DocumentText) -> BundleDecision | None:
    """The detector's reading of a whole document (not a part) of two or more pages the
    document shows, unless the client asked to read it whole; None when there is nothing to
    split."""
    if claim.pages is not None or claim.options.get(SPLIT_OPTION) is False:
        return None
    if document.source == SOURCE_EINVOICE or len(document.for_providers().pages) < 2:
        return None
    return BundleDecision(split_document(document))


def second_reader(claim: Claim, decision: BundleDecision) -> PoolBinding | None:
    """The pool whose model is to read the decision's uncertain junctions: the job's policy
    asks for one and its provider is a model; None otherwise (or nothing is uncertain)."""
    if not decision.uncertain_pages:
        return None
    if not settings.MODEL_POLICIES[claim.model_policy].get(SECOND_READER_POLICY_KEY, False):
        return None
    binding = provider_for_policy(claim.model_policy)
    return binding if hasattr(binding.provider, "read_boundaries") else None


def read_twice(document: DocumentText, reading: SecondReading) -> BundleDecision:
    """The split with the second reader's answer deciding the uncertain junctions (the
    detector's alone when it gave none)."""
    return BundleDecision(split_document(document, second_reading=reading.first_pages), reading)


def split_into_parts(claim: Claim, document: DocumentText, decision: BundleDecision) -> AttemptResult:
    """End the job SPLIT with a job per part (one transaction); STALE if it was no longer ours.
    The ledger entry is the second reader's call, if there was one."""
    report = decision.second_reading.report if decision.second_reading is not None else None
    won = lifecycle.split_job(
        claim,
        [(part.first, part.last) for part in decision.split.parts],
        page_count=len(document.for_providers().pages),
        report=report or AttemptReport(outcome=AttemptOutcome.SPLIT, provider="bundle_splitter"),
        detail=decision.detail(),
    )
    return AttemptResult.SPLIT if won else AttemptResult.STALE


def read_as_part(claim: Claim, document: DocumentText) -> DocumentText:
    """What the job reads: a part's own pages, or the whole document."""
    if claim.pages is None:
        return document
    first, last = claim.pages
    return document.part(first, last)
