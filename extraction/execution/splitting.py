"""A bundle split into its invoices: the first step of an attempt on a document of several pages
(issue #27).

A scan batch or an ERP's monthly export arrives as one PDF. Before anything reads it as an
invoice, the attempt asks :func:`~extraction.intake.bundles.split_document` where one invoice
ends and the next begins; a document of two or more parts is not read at all: its job ends
SPLIT, and one job per part is accepted in the same transaction (``split_job`` in
lifecycle.sql), each with its pages, to be claimed, read, judged, reviewed and delivered like
any other (ACC-7). A part is never split again.

What keeps a wrong split from posting silently: a part reads only its own pages
(:meth:`DocumentText.part`), so a part that lost pages or took another invoice's mostly fails
its arithmetic or misses a field and goes to review; and a part has no e-invoice, since a
Factur-X/ZUGFeRD XML describes one invoice and cannot tell which part it is (were the document
one invoice, it would not have been split: the XML answers it whole).

``options.split_bundles: false`` reads the document as one invoice, whatever it holds.
"""

from __future__ import annotations

from extraction.execution import lifecycle
from extraction.execution.lifecycle import AttemptReport, Claim
from extraction.execution.outcomes import AttemptResult
from extraction.intake.bundles import BundleSplit, split_document
from extraction.intake.text import SOURCE_EINVOICE, DocumentText
from extraction.models import AttemptOutcome

SPLIT_OPTION = "split_bundles"


def bundle_parts(claim: Claim, document: DocumentText) -> BundleSplit | None:
    """The document's parts when the job should be split: a whole document (not a part), of
    two or more pages the document shows, which the detector finds two or more invoices in and
    the client did not ask to read whole. None otherwise."""
    if claim.pages is not None or claim.options.get(SPLIT_OPTION) is False:
        return None
    if document.source == SOURCE_EINVOICE or len(document.for_providers().pages) < 2:
        return None
    split = split_document(document)
    return split if len(split.parts) > 1 else None


def split_into_parts(claim: Claim, document: DocumentText, split: BundleSplit) -> AttemptResult:
    """End the job SPLIT with a job per part (one transaction); STALE if it was no longer ours.

    The parent's job event records why each part starts where it does (the signals of its
    first junction) and which parts hold an uncertain junction."""
    detail = {
        "boundaries": [
            {"page": part.first, "signals": sorted(part.signals), "uncertain": part.uncertain} for part in split.parts
        ]
    }
    won = lifecycle.split_job(
        claim,
        [(part.first, part.last) for part in split.parts],
        page_count=len(document.for_providers().pages),
        report=AttemptReport(outcome=AttemptOutcome.SPLIT, provider="bundle_splitter"),
        detail=detail,
    )
    return AttemptResult.SPLIT if won else AttemptResult.STALE


def read_as_part(claim: Claim, document: DocumentText) -> DocumentText:
    """What the job reads: a part's own pages, or the whole document."""
    if claim.pages is None:
        return document
    first, last = claim.pages
    return document.part(first, last)
