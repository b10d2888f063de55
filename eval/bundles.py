"""Bundle splitting: where one invoice ends and the next begins, on PDFs built from the sample invoices.

    .venv/bin/python eval/bundles.py [--json PATH] [--mixed N] [--scanned N] [--seed S]
    .venv/bin/python eval/bundles.py --through-worker [--through-worker-limit N] [--with-scanned]
        [--no-control] [--no-wrong-splits] [...]

1. Builds bundles, deterministically, by concatenating the sample PDFs of ``testdata/invoices``
   (pypdf), 2 to 6 invoices each, in families: ``mixed`` (any invoices), ``same supplier`` (one
   supplier's invoices back to back), ``same number`` (invoices that print the same invoice number,
   as the sample sets reuse them), ``multi-page`` (only invoices of two pages or more),
   ``unnumbered`` (only invoices that print no page numbers) and ``scanned`` (a few bundles of
   short invoices, the same-supplier ones among them, turned into page images at 150 dpi, so the
   worker reads them by OCR: about 4 s a page). A ``mixed`` bundle whose first invoice is a
   Factur-X/ZUGFeRD PDF carries that invoice's XML as its attachment, as an ERP export might.
2. Reads each bundle as the worker does (``extract_document_text``, then the attached e-invoice
   printed as a page after the visible ones) and splits it with
   ``extraction.intake.bundles.split_document``, which leaves that printed page out.
3. Scores the page boundaries against the invoices the bundle was built from: precision,
   recall and F1 over all boundaries, the parts that hold pages of two invoices, and every bundle
   split wrong with the signals at the page concerned. Then the same bundles again with every
   printed page number blanked (the detector's own patterns), as pages of a scan batch without
   them; and the split of a 500-page bundle made of the bundles' pages, timed.

No database. Prints Markdown and writes it with the figures as JSON, through
``bench/harness.py``'s ``publish_results`` (``bench/results/bundles-<UTC time>.{txt,json}``, or
the JSON to ``--json PATH``). Exit status 1 if the target (F1 >= 0.98 and no part holding two
invoices' pages) is missed on the printed pages.

``--through-worker`` measures the split through the product path instead, on the same bundles
(the text ones; the scanned family only with ``--with-scanned``, its OCR being slow;
``--through-worker-limit N`` takes N of them, the families in turn). Each bundle is stored as a
document of a tenant made for the run (its ``possible_duplicate`` check off: bundles reuse
invoices), accepted with the default model policy (``EXTRACTION_PROVIDER=builtin`` unless set),
taken in and run by a worker slot in this process until the job is SPLIT or ended whole; then
each part is taken in and run until it ends. The parts' pages are scored as above, with each
part's end state: the one figure that must be 0 is the parts that ended SUCCEEDED holding pages
of two invoices or missing pages of theirs (a wrong split must go to review); a SUCCEEDED part's
invoice number is compared with its invoice's truth. It uses a database of its own,
``eval_bundles`` (created, migrated and its job tables emptied here; never the dev database
nor the tests'), Redis database 10 for the capacity limiter and a temporary media root. Results
in ``bench/results/bundles-worker-<UTC time>.{txt,json}``; exit status 1 if a part ended
SUCCEEDED with wrong pages, a part did not end, or the target above is missed.

With it, two measurements, each on unless ``--no-control`` / ``--no-wrong-splits``:

- the control: each invoice of the bundles accepted alone (its pages as the bundles hold them,
  no attached e-invoice; and, for one carrying a Factur-X/ZUGFeRD XML, the sample file itself)
  in a tenant made likewise, and each part holding one whole invoice compared with it: end
  state, invoice number and gross total; every part that differs, with both review reasons.
- wrong splits: each bundle's job accepted, claimed and split by ``lifecycle.split_job`` at
  wrong boundaries, a tenant per kind: every true boundary one page later, one page earlier
  (where every part stays non-empty), one boundary dropped (each in turn), a boundary added
  inside each multi-page invoice. Each part holding wrong pages is taken in and run until it
  ends; a SUCCEEDED one is harmless when its invoice number and gross total are its main
  invoice's truth (the invoice it holds most pages of), harmful otherwise. Reported, not part
  of the exit status.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402

# --through-worker: a database, Redis database and media root of its own (set before Django is).
EVAL_DATABASE = "eval_bundles"
EVAL_REDIS_URL = "redis://127.0.0.1:6379/10"
THROUGH_WORKER = "--through-worker" in sys.argv[1:]
MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="eval-bundles-media-")) if THROUGH_WORKER else None

if MEDIA_ROOT is None:
    harness.setup_django()
else:
    harness.ensure_database(EVAL_DATABASE, **({"DEMO_ERP": "1"} if os.environ.get("DEMO_ERP") == "1" else {}))
    os.environ.setdefault("EXTRACTION_PROVIDER", "builtin")
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # not a line per attempt among the report's
    harness.setup_django(
        POSTGRES_DB=EVAL_DATABASE, REDIS_URL=EVAL_REDIS_URL, MEDIA_ROOT=str(MEDIA_ROOT), PGAPPNAME="eval-bundles"
    )

from PIL import Image  # noqa: E402
from pypdf import PdfReader, PdfWriter  # noqa: E402

from extraction.intake.bundles import (  # noqa: E402
    PAGE_NUMBER_PATTERNS,
    BundleSplit,
    Part,
    Signal,
    find_page_number,
    split_bundle,
    split_document,
)
from extraction.intake.text import (  # noqa: E402
    PDF,
    DocumentText,
    embedded_invoice_xml,
    extract_document_text,
    with_embedded_einvoice,
)
from extraction.validation.suppliers import comparable_name  # noqa: E402

INVOICES = ROOT / "testdata" / "invoices"
# The folders whose expected_fields.json names the PDF each record is the truth of.
INDEXED_FOLDERS = ("zugferd-corpus", "factur-x-python")
TARGET_F1 = 0.98
FAMILIES = ("mixed", "same supplier", "same number", "multi-page", "unnumbered", "scanned")
# The scanned family's first bundles: one supplier's invoices with one number, then one
# supplier's two invoices and the twin printings of another's.
SCANNED_BUNDLES = (
    (
        "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf",
        "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach_DueDate.pdf",
        "zugferd-corpus/ZUGFeRDv2/correct/intarsys/MINIMUM/zugferd_2p0_MINIMUM.pdf",
    ),
    (
        "invoice2data/compare/coolblue1.pdf",
        "invoice2data/compare/coolblue2.pdf",
        "zugferd-corpus/ZUGFeRDv2/correct/FNFE-factur-x-examples/Facture_FR_BASICWL.pdf",
        "zugferd-corpus/ZUGFeRDv2/correct/FNFE-factur-x-examples/Facture_FR_MINIMUM.pdf",
    ),
)
SCAN_DPI = 150
LARGE_BUNDLE_PAGES = 500


@dataclass(frozen=True)
class Invoice:
    """A sample PDF: its path under testdata/invoices, pages, and the truth's supplier and number."""

    name: str
    pages: int
    supplier: str
    number: str
    prints_page_numbers: bool
    einvoice: tuple[str, bytes] | None = field(repr=False)
    gross: Decimal | None = None  # the truth's gross total (BT-112, invoice2data's amount)


@dataclass(frozen=True)
class Bundle:
    name: str
    family: str
    members: tuple[Invoice, ...]
    attach_einvoice: bool = False
    scanned: bool = False

    @property
    def starts(self) -> list[int]:
        """The first page of each invoice, 1-based."""
        starts, page = [], 1
        for member in self.members:
            starts.append(page)
            page += member.pages
        return starts


# --- the sample invoices -----------------------------------------------------------------------


def sample_invoices() -> list[Invoice]:
    """Every PDF in testdata/invoices with the supplier and invoice number its truth gives (the
    embedded XML's index, or invoice2data's JSON), sorted by path."""
    truth: dict[str, tuple[str, str, Any]] = {}
    for folder in INDEXED_FOLDERS:
        for record in json.loads((INVOICES / folder / "expected_fields.json").read_text())["records"]:
            if record["rendered_pdf"]:
                truth[f"{folder}/{record['rendered_pdf']}"] = (
                    record["seller_name"],
                    record["invoice_number"],
                    record["totals"]["gross_total_BT112"],
                )
    for expected in sorted((INVOICES / "invoice2data" / "compare").glob("*.json")):
        record = json.loads(expected.read_text())[0]
        truth[f"invoice2data/compare/{expected.stem}.pdf"] = (
            record["issuer"],
            str(record["invoice_number"]),
            record.get("amount"),
        )
    invoices = []
    for path in sorted(INVOICES.rglob("*.pdf")):
        name = str(path.relative_to(INVOICES))
        supplier, number, gross = truth[name]
        data = path.read_bytes()
        pages = extract_document_text(data, PDF).pages
        invoices.append(
            Invoice(
                name=name,
                pages=len(PdfReader(io.BytesIO(data)).pages),
                supplier=comparable_name(supplier),
                number=number.lstrip("#").strip(),
                prints_page_numbers=any(find_page_number(page) for page in pages),
                einvoice=embedded_invoice_xml(data),
                gross=_decimal(gross),
            )
        )
    return invoices


def _decimal(value: Any) -> Decimal | None:
    """An amount as a Decimal (None: none, or not a number)."""
    if value is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _chunks(items: Sequence[Invoice], size: int = 6) -> list[tuple[Invoice, ...]]:
    """``items`` cut into runs of 2 to ``size``."""
    runs = [tuple(items[i : i + size]) for i in range(0, len(items), size)]
    if len(runs) > 1 and len(runs[-1]) == 1:
        runs[-2:] = [runs[-2][:-1], (runs[-2][-1], *runs[-1])]
    return [run for run in runs if len(run) >= 2]


def _random_bundles(
    family: str, pool: Sequence[Invoice], count: int, rng: random.Random, *, attach: bool = False
) -> list[Bundle]:
    bundles = []
    for index in range(count):
        members = tuple(rng.sample(list(pool), rng.randint(2, min(6, len(pool)))))
        bundles.append(Bundle(f"{family} {index + 1}", family, members, attach and members[0].einvoice is not None))
    return bundles


def _grouped_bundles(family: str, invoices: Sequence[Invoice], key: str) -> list[Bundle]:
    """Each group of invoices sharing ``key`` back to back, in path order and reversed."""
    groups: dict[str, list[Invoice]] = defaultdict(list)
    for invoice in invoices:
        groups[getattr(invoice, key)].append(invoice)
    bundles = []
    for value, group in sorted(groups.items()):
        for order, members in (("", group), (" reversed", group[::-1])):
            for index, run in enumerate(_chunks(members)):
                bundles.append(Bundle(f"{family} {value!r}{order} {index + 1}", family, run))
    return bundles


def _scanned_bundles(invoices: Sequence[Invoice], count: int, rng: random.Random) -> list[Bundle]:
    by_name = {invoice.name: invoice for invoice in invoices}
    chosen = [tuple(by_name[name] for name in names) for names in SCANNED_BUNDLES]
    short = [invoice for invoice in invoices if invoice.pages <= 2]
    while len(chosen) < count:
        chosen.append(tuple(rng.sample(short, rng.randint(2, 3))))
    return [Bundle(f"scanned {i + 1}", "scanned", members, scanned=True) for i, members in enumerate(chosen[:count])]


def build_bundles(invoices: Sequence[Invoice], *, mixed: int, scanned: int, seed: int) -> list[Bundle]:
    rng = random.Random(seed)
    multi_page = [invoice for invoice in invoices if invoice.pages > 1]
    unnumbered = [invoice for invoice in invoices if not invoice.prints_page_numbers]
    return [
        *_random_bundles("mixed", invoices, mixed, rng, attach=True),
        *_grouped_bundles("same supplier", invoices, "supplier"),
        *_grouped_bundles("same number", invoices, "number"),
        *_random_bundles("multi-page", multi_page, 10, rng),
        *_random_bundles("unnumbered", unnumbered, 10, rng),
        *_scanned_bundles(invoices, scanned, rng),
    ]


def bundle_pdf(bundle: Bundle) -> bytes:
    writer = PdfWriter()
    for member in bundle.members:
        writer.append(INVOICES / member.name)
    first = bundle.members[0].einvoice
    if bundle.attach_einvoice and first is not None:
        writer.add_attachment(first[0], first[1])
    buffer = io.BytesIO()
    writer.write(buffer)
    return _scan(buffer.getvalue()) if bundle.scanned else buffer.getvalue()


def _scan(data: bytes) -> bytes:
    """The PDF as a scanner returns it: one grey image a page (pdftoppm, as production's OCR
    rasterises), no text layer."""
    with tempfile.TemporaryDirectory(prefix="bundle-scan-") as workdir:
        source = Path(workdir) / "bundle.pdf"
        source.write_bytes(data)
        subprocess.run(["pdftoppm", "-r", str(SCAN_DPI), "-gray", "-png", str(source), f"{workdir}/page"], check=True)
        images = [Image.open(path).convert("RGB") for path in sorted(Path(workdir).glob("page-*.png"))]
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", resolution=SCAN_DPI, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def read_as_worker(data: bytes) -> DocumentText:
    """The text the worker reads (extraction.execution.attempt): the PDF's pages, then its
    attached e-invoice printed as a page."""
    text = extract_document_text(data, PDF)
    attached = embedded_invoice_xml(data)
    return with_embedded_einvoice(text, attached[1]) if attached else text


def blank_page_numbers(page: str) -> str:
    for pattern in PAGE_NUMBER_PATTERNS:
        page = pattern.sub(lambda match: " " * len(match[0]), page)
    return page


# --- scoring -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    bundle: Bundle
    split: BundleSplit
    missed: list[int]
    invented: list[int]
    mixed_parts: list[dict[str, Any]]

    @property
    def wrong(self) -> bool:
        return bool(self.missed or self.invented)


def score(bundle: Bundle, split: BundleSplit) -> Outcome:
    starts = bundle.starts
    truth = set(starts[1:])
    predicted = set(split.boundaries)
    mixed = []
    for part in split.parts:
        held = [
            i for i, start in enumerate(starts) if start <= part.last and start + bundle.members[i].pages > part.first
        ]
        if len(held) > 1:
            mixed.append({"pages": [part.first, part.last], "invoices": [bundle.members[i].name for i in held]})
    return Outcome(bundle, split, sorted(truth - predicted), sorted(predicted - truth), mixed)


def _member_at(bundle: Bundle, page: int) -> str:
    for start, member in zip(bundle.starts, bundle.members, strict=True):
        if start <= page < start + member.pages:
            return f"{member.name} p{page - start + 1}/{member.pages}"
    return "?"


def _signals_at(outcome: Outcome, page: int) -> str:
    junction = outcome.split.junctions[page - 2]
    signals = ", ".join(sorted(signal.value for signal in junction.signals)) or "none"
    return f"{signals} (score {junction.score}{', uncertain' if junction.uncertain else ''})"


def metrics(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    true_positive = sum(len(set(o.bundle.starts[1:]) & set(o.split.boundaries)) for o in outcomes)
    predicted = sum(len(o.split.boundaries) for o in outcomes)
    actual = sum(len(o.bundle.starts) - 1 for o in outcomes)
    precision = true_positive / predicted if predicted else 1.0
    recall = true_positive / actual if actual else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    wrong = [o for o in outcomes if o.wrong]
    return {
        "bundles": len(outcomes),
        "invoices": sum(len(o.bundle.members) for o in outcomes),
        "pages": sum(o.bundle.starts[-1] + o.bundle.members[-1].pages - 1 for o in outcomes),
        "boundaries": actual,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "wrong_bundles": len(wrong),
        "wrong_flagged_uncertain": sum(o.split.uncertain for o in wrong),
        "mixed_parts": sum(len(o.mixed_parts) for o in outcomes),
        "uncertain_bundles": sum(o.split.uncertain for o in outcomes),
    }


def case_record(outcome: Outcome) -> dict[str, Any]:
    bundle = outcome.bundle
    return {
        "bundle": bundle.name,
        "family": bundle.family,
        "members": [
            {"file": m.name, "first": s, "last": s + m.pages - 1}
            for s, m in zip(bundle.starts, bundle.members, strict=True)
        ],
        "einvoice_attached": bundle.attach_einvoice,
        "parts": [
            {"first": p.first, "last": p.last, "signals": sorted(p.signals), "uncertain": p.uncertain}
            for p in outcome.split.parts
        ],
        "missed": [
            {"page": p, "at": _member_at(bundle, p), "signals": _signals_at(outcome, p)} for p in outcome.missed
        ],
        "invented": [
            {"page": p, "at": _member_at(bundle, p), "signals": _signals_at(outcome, p)} for p in outcome.invented
        ],
        "mixed_parts": outcome.mixed_parts,
    }


# --- the run -----------------------------------------------------------------------------------


def _table(rows: dict[str, dict[str, Any]]) -> None:
    print(
        "| bundles | invoices | pages | boundaries | precision | recall | F1 | wrong bundles (flagged uncertain) "
        "| parts with two invoices | uncertain bundles |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, m in rows.items():
        print(
            f"| {name}: {m['bundles']} | {m['invoices']} | {m['pages']} | {m['boundaries']} | {m['precision']:.3f} "
            f"| {m['recall']:.3f} | {m['f1']:.3f} | {m['wrong_bundles']} ({m['wrong_flagged_uncertain']}) "
            f"| {m['mixed_parts']} | {m['uncertain_bundles']} |"
        )


def _by_family(outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    rows = {family: metrics([o for o in outcomes if o.bundle.family == family]) for family in FAMILIES}
    rows["all"] = metrics(outcomes)
    return rows


def _print_cases(title: str, cases: Sequence[dict[str, Any]], limit: int | None = None) -> None:
    print(f"\n### {title}: {len(cases)}\n")
    if not cases:
        print("None.")
    for case in cases[:limit]:
        members = ", ".join(f"{m['file'].rsplit('/', 1)[-1]} ({m['first']}-{m['last']})" for m in case["members"])
        parts = ", ".join(f"{p['first']}-{p['last']}{'?' if p['uncertain'] else ''}" for p in case["parts"])
        print(f"- **{case['bundle']}**: {members}; split {parts}")
        for kind in ("missed", "invented"):
            for item in case[kind]:
                print(f"  - {kind} boundary at page {item['page']} ({item['at']}): {item['signals']}")
        for mixed in case["mixed_parts"]:
            names = " + ".join(name.rsplit("/", 1)[-1] for name in mixed["invoices"])
            print(f"  - part {mixed['pages'][0]}-{mixed['pages'][1]} holds pages of {names}")
    if limit is not None and len(cases) > limit:
        print(f"- ... and {len(cases) - limit} more in the JSON")


def _large_bundle(outcomes: Sequence[Outcome], texts: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """The bundles' pages one after another up to 500 pages, split once and timed."""
    pages: list[str] = []
    starts: list[int] = []
    for outcome in outcomes:
        for start, member in zip(outcome.bundle.starts, outcome.bundle.members, strict=True):
            if len(pages) + member.pages > LARGE_BUNDLE_PAGES:
                break
            starts.append(len(pages) + 1)
            pages.extend(texts[outcome.bundle.name][start - 1 : start - 1 + member.pages])
        if len(pages) >= LARGE_BUNDLE_PAGES - 6:
            break
    started = time.perf_counter()
    split = split_bundle(pages)
    seconds = time.perf_counter() - started
    truth, predicted = set(starts[1:]), set(split.boundaries)
    hits = len(truth & predicted)
    f1 = 2 * hits / (len(truth) + len(predicted)) if truth or predicted else 1.0
    return {"pages": len(pages), "invoices": len(starts), "seconds": round(seconds, 2), "f1": round(f1, 4)}


# --- through the worker (--through-worker) ------------------------------------------------------

SUCCEEDED, REVIEW_REQUIRED, FAILED_TERMINAL, SPLIT = "SUCCEEDED", "REVIEW_REQUIRED", "FAILED_TERMINAL", "SPLIT"
ENDED = (SUCCEEDED, REVIEW_REQUIRED, FAILED_TERMINAL)
# How long a bundle's jobs may take to end before the eval moves on (a retry's back-off included).
JOB_WAIT_SECONDS = 120.0


@dataclass
class WorkerRun:
    """A bundle through the product path: the parts the worker made, scored as the detector's
    split is, and each part's end."""

    outcome: Outcome
    parent_state: str
    parts: list[dict[str, Any]]
    same_as_detector: bool
    seconds: float

    @property
    def wrong(self) -> bool:
        return self.outcome.wrong or any(part["wrong_pages"] for part in self.parts)


def _limited(bundles: Sequence[Bundle], limit: int | None) -> list[Bundle]:
    """``limit`` bundles taken from the families in turn, in their order; all if None."""
    if limit is None:
        return list(bundles)
    queues = [[b for b in bundles if b.family == family] for family in FAMILIES]
    chosen: set[str] = set()
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.add(queue.pop(0).name)
    return [bundle for bundle in bundles if bundle.name in chosen]


def _fresh_eval_database() -> None:
    """Empty the job tables of this eval's own database (a run cut short leaves jobs a slot
    would claim) and forget the limiter's state in its Redis database."""
    from django.conf import settings

    from extraction.capacity import limiter

    name = settings.DATABASES["default"]["NAME"]
    if name != EVAL_DATABASE or settings.REDIS_URL != EVAL_REDIS_URL:
        raise SystemExit(f"Refusing to empty {name!r} / {settings.REDIS_URL}: not {EVAL_DATABASE} / {EVAL_REDIS_URL}.")
    harness.reset_job_tables(harness.django_dsn(), vacuum=False)
    for pool in settings.PROVIDER_POOLS:
        limiter.reset_pool(pool)
    limiter.forget_answered_headroom()


def _take_in(job_id: uuid.UUID) -> None:
    """ACCEPTED -> READY as ingress does it: the job's requested event taken in."""
    from extraction.events import EventType
    from extraction.execution import lifecycle
    from extraction.models import OutboxEvent

    event = OutboxEvent.objects.get(job_id=job_id, event_type=EventType.REQUESTED)
    lifecycle.take_in_requested_event(event_id=event.event_id, payload=event.payload)


def _run_until_ended(job_ids: Sequence[uuid.UUID], rt: Any) -> None:
    """Run worker slots in this process until every job is SPLIT or ended (or the wait is up)."""
    from extraction.execution import worker
    from extraction.models import ExtractionJob

    deadline = time.monotonic() + JOB_WAIT_SECONDS
    while time.monotonic() < deadline:
        states = ExtractionJob.objects.filter(pk__in=job_ids).values_list("state", flat=True)
        running = sum(state not in (*ENDED, SPLIT) for state in states)
        if not running:
            return
        if not worker.run_slot(rt, max_jobs=running):
            time.sleep(0.5)  # a retry not due yet


def _invoice_number(result: Any) -> str | None:
    field_value = (result.output or {}).get("invoice_number") if result is not None else None
    value = field_value.get("value") if isinstance(field_value, dict) else None
    return None if value is None else str(value).lstrip("#").strip()


def _gross_total(result: Any) -> Decimal | None:
    totals = (result.output or {}).get("totals") if result is not None else None
    gross = totals.get("gross") if isinstance(totals, dict) else None
    return _decimal(gross.get("value")) if isinstance(gross, dict) else None


def _review_reasons(result: Any) -> list[str]:
    return list((result.validation or {}).get("reasons", [])) if result is not None else []


def _same_number(number: str | None, truth: str | None) -> bool:
    return number is not None and truth is not None and number.casefold() == truth.casefold()


def _amount(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _accept(tenant: Any, document: Any) -> uuid.UUID:
    """A job for the document, as the API accepts one: the default model policy, no options."""
    from extraction.intake.acceptance import JobRequest, accept_job

    request = JobRequest(
        document=document,
        schema="invoice.v1",
        model_policy="default",
        options={},
        priority_class="batch",
        deadline_seconds=24 * 3600,
    )
    return accept_job(tenant=tenant, idempotency_key=uuid.uuid4().hex, request=request).job_id


def through_worker(bundle: Bundle, tenant: Any, rt: Any) -> WorkerRun:
    """Store the bundle as the tenant's document, accept a job for it, take it in and run it;
    then take in and run its parts until each ends."""
    from extraction.intake.documents import store_document
    from extraction.models import ExtractionJob, ExtractionResult, JobEvent

    started = time.monotonic()
    data = bundle_pdf(bundle)
    detector = split_document(read_as_worker(data))  # the junctions' evidence, for the report
    page_count = bundle.starts[-1] + bundle.members[-1].pages - 1
    document, _ = store_document(tenant=tenant, upload=io.BytesIO(data), filename="bundle.pdf")
    parent_id = _accept(tenant, document)
    _take_in(parent_id)
    _run_until_ended([parent_id], rt)
    parent = ExtractionJob.objects.get(pk=parent_id)
    jobs = [parent]
    signals: dict[int, tuple[frozenset[Signal], bool]] = {}
    if parent.state == SPLIT:
        jobs = list(ExtractionJob.objects.filter(parent=parent).order_by("first_page"))
        for job in jobs:
            _take_in(job.pk)
        _run_until_ended([job.pk for job in jobs], rt)
        jobs = list(ExtractionJob.objects.filter(parent=parent).order_by("first_page"))
        event = JobEvent.objects.get(job=parent, to_state=SPLIT)
        signals = {
            item["page"]: (frozenset(Signal(s) for s in item["signals"]), item["uncertain"])
            for item in event.detail["boundaries"]
        }
    results = {result.job_id: result for result in ExtractionResult.objects.filter(job__in=jobs)}
    parts, records = [], []
    starts = bundle.starts
    for job in jobs:
        first, last = job.first_page or 1, job.last_page or page_count  # a job ended whole has none
        started_by, uncertain = signals.get(first, (frozenset(), False))
        parts.append(Part(first, last, started_by, uncertain))
        held = [i for i, start in enumerate(starts) if start <= last and start + bundle.members[i].pages > first]
        own = bundle.members[held[0]] if len(held) == 1 else None
        whole = own is not None and (first, last) == (starts[held[0]], starts[held[0]] + own.pages - 1)
        result = results.get(job.pk)
        number, gross = _invoice_number(result), _gross_total(result)
        records.append(
            {
                "first": first,
                "last": last,
                "state": job.state,
                "uncertain": uncertain,
                "invoices": [bundle.members[i].name for i in held],
                "two_invoices": len(held) > 1,
                "missing_pages": own is not None and not whole,
                "wrong_pages": not whole,
                "invoice_number": number,
                "truth_number": own.number if own is not None else None,
                "number_right": own is not None and _same_number(number, own.number),
                "gross": _amount(gross),
                "truth_gross": _amount(own.gross) if own is not None else None,
                "review_reasons": _review_reasons(result),
            }
        )
    outcome = score(bundle, BundleSplit(parts=tuple(parts), junctions=detector.junctions))
    same = [(p.first, p.last) for p in parts] == [(p.first, p.last) for p in detector.parts]
    return WorkerRun(outcome, parent.state, records, same, round(time.monotonic() - started, 2))


def part_metrics(runs: Sequence[WorkerRun]) -> dict[str, Any]:
    parts = [part for run in runs for part in run.parts]
    succeeded = [part for part in parts if part["state"] == SUCCEEDED]
    whole_succeeded = [part for part in succeeded if not part["wrong_pages"]]

    def states(chosen: Sequence[dict[str, Any]]) -> dict[str, int]:
        counted: dict[str, int] = defaultdict(int)
        for part in chosen:
            counted[part["state"]] += 1
        return dict(sorted(counted.items()))

    return {
        "parts": len(parts),
        "states": states(parts),
        "succeeded": len(succeeded),
        "review_required": sum(part["state"] == REVIEW_REQUIRED for part in parts),
        "failed_terminal": sum(part["state"] == FAILED_TERMINAL for part in parts),
        "not_ended": sum(part["state"] not in ENDED for part in parts),
        "two_invoices": sum(part["two_invoices"] for part in parts),
        "two_invoices_states": states([part for part in parts if part["two_invoices"]]),
        "missing_pages": sum(part["missing_pages"] for part in parts),
        "missing_pages_states": states([part for part in parts if part["missing_pages"]]),
        "succeeded_wrong_pages": sum(part["wrong_pages"] for part in succeeded),
        "succeeded_number_right": sum(part["number_right"] for part in whole_succeeded),
        "succeeded_number_wrong": sum(not part["number_right"] for part in whole_succeeded),
        "unsplit_bundles": sum(run.parent_state != SPLIT for run in runs),
        "differs_from_detector": sum(not run.same_as_detector for run in runs),
        "seconds": round(sum(run.seconds for run in runs), 1),
    }


def worker_case_record(run: WorkerRun) -> dict[str, Any]:
    return {**case_record(run.outcome), "parent_state": run.parent_state, "parts": run.parts, "seconds": run.seconds}


def _part_table(rows: dict[str, dict[str, Any]]) -> None:
    print(
        "| bundles | parts | SUCCEEDED | REVIEW_REQUIRED | FAILED_TERMINAL | not ended | two invoices' pages "
        "(states) | missing pages (states) | **SUCCEEDED with wrong pages** | SUCCEEDED number right / wrong "
        "| ended unsplit | differs from detector | seconds |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for name, m in rows.items():
        two = ", ".join(f"{k} {v}" for k, v in m["two_invoices_states"].items()) or "-"
        missing = ", ".join(f"{k} {v}" for k, v in m["missing_pages_states"].items()) or "-"
        print(
            f"| {name}: {m['bundles']} | {m['parts']} | {m['succeeded']} | {m['review_required']} "
            f"| {m['failed_terminal']} | {m['not_ended']} | {m['two_invoices']} ({two}) | {m['missing_pages']} "
            f"({missing}) | **{m['succeeded_wrong_pages']}** | {m['succeeded_number_right']} / "
            f"{m['succeeded_number_wrong']} | {m['unsplit_bundles']} | {m['differs_from_detector']} | {m['seconds']} |"
        )


def _print_worker_cases(title: str, cases: Sequence[dict[str, Any]]) -> None:
    print(f"\n### {title}: {len(cases)}\n")
    if not cases:
        print("None.")
    for case in cases:
        members = ", ".join(f"{m['file'].rsplit('/', 1)[-1]} ({m['first']}-{m['last']})" for m in case["members"])
        print(f"- **{case['bundle']}** ({case['parent_state']}): {members}")
        for part in case["parts"]:
            held = " + ".join(name.rsplit("/", 1)[-1] for name in part["invoices"])
            number = f"number {part['invoice_number']!r} (truth {part['truth_number']!r})"
            reasons = f"; review: {', '.join(part['review_reasons'])}" if part["review_reasons"] else ""
            flag = (
                " **two invoices**" if part["two_invoices"] else " **missing pages**" if part["missing_pages"] else ""
            )
            print(
                f"  - part {part['first']}-{part['last']}{'?' if part['uncertain'] else ''} {part['state']}: "
                f"{held}{flag}; {number}{reasons}"
            )
        for kind in ("missed", "invented"):
            for item in case[kind]:
                print(f"  - {kind} boundary at page {item['page']} ({item['at']}): {item['signals']}")


# --- control and wrong splits (--through-worker --control / --wrong-splits) ---------------------

# The wrong splits forced on each bundle: every true boundary a page later, a page earlier
# (where every part stays non-empty), one boundary dropped (each in turn), a boundary added
# inside each multi-page invoice.
WRONG_KINDS = ("later", "earlier", "merged", "cut")


def _page_count(bundle: Bundle) -> int:
    return bundle.starts[-1] + bundle.members[-1].pages - 1


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def run_alone(invoice: Invoice, tenant: Any, rt: Any, *, as_file: bool = False) -> dict[str, Any]:
    """The invoice accepted alone and run until it ends: its pages as the bundles hold them
    (pypdf's copy, no attached e-invoice), or with ``as_file`` the sample file itself."""
    from extraction.intake.documents import store_document
    from extraction.models import ExtractionJob, ExtractionResult

    data = (INVOICES / invoice.name).read_bytes() if as_file else bundle_pdf(Bundle(invoice.name, "alone", (invoice,)))
    document, _ = store_document(tenant=tenant, upload=io.BytesIO(data), filename="invoice.pdf")
    job_id = _accept(tenant, document)
    _take_in(job_id)
    _run_until_ended([job_id], rt)
    job = ExtractionJob.objects.get(pk=job_id)
    result = ExtractionResult.objects.filter(job_id=job_id).first()
    number, gross = _invoice_number(result), _gross_total(result)
    return {
        "invoice": invoice.name,
        "state": job.state,
        "invoice_number": number,
        "gross": _amount(gross),
        "truth_number": invoice.number,
        "truth_gross": _amount(invoice.gross),
        "number_right": _same_number(number, invoice.number),
        "review_reasons": _review_reasons(result),
    }


def control_records(runs: Sequence[WorkerRun], alone: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each part that holds one whole invoice, beside that invoice read alone."""
    records = []
    for run in runs:
        for part in run.parts:
            if part["wrong_pages"]:
                continue
            solo = alone[part["invoices"][0]]
            records.append(
                {
                    "bundle": run.outcome.bundle.name,
                    "family": run.outcome.bundle.family,
                    "pages": [part["first"], part["last"]],
                    "invoice": part["invoices"][0],
                    "state": part["state"],
                    "alone_state": solo["state"],
                    "same_state": part["state"] == solo["state"],
                    "same_number": part["invoice_number"] == solo["invoice_number"],
                    "same_gross": _decimal(part["gross"]) == _decimal(solo["gross"]),
                    "invoice_number": part["invoice_number"],
                    "alone_invoice_number": solo["invoice_number"],
                    "gross": part["gross"],
                    "alone_gross": solo["gross"],
                    "review_reasons": part["review_reasons"],
                    "alone_review_reasons": solo["review_reasons"],
                }
            )
    return records


def control_metrics(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "parts": len(records),
        "succeeded": sum(r["state"] == SUCCEEDED for r in records),
        "alone_succeeded": sum(r["alone_state"] == SUCCEEDED for r in records),
        "same_state": sum(r["same_state"] for r in records),
        "reviewed_alone_succeeded": sum(
            r["state"] == REVIEW_REQUIRED and r["alone_state"] == SUCCEEDED for r in records
        ),
        "succeeded_alone_reviewed": sum(
            r["state"] == SUCCEEDED and r["alone_state"] == REVIEW_REQUIRED for r in records
        ),
        "other_state_difference": sum(
            not r["same_state"] and {r["state"], r["alone_state"]} != {SUCCEEDED, REVIEW_REQUIRED} for r in records
        ),
        "same_number": sum(r["same_number"] for r in records),
        "same_gross": sum(r["same_gross"] for r in records),
        "same_all": sum(r["same_state"] and r["same_number"] and r["same_gross"] for r in records),
    }


def wrong_splits(bundle: Bundle, kind: str) -> list[list[tuple[int, int]]]:
    """The page ranges of each wrong split of ``kind`` forced on the bundle (none where the
    kind cannot apply: a boundary that cannot move, no multi-page invoice)."""
    true, pages = bundle.starts[1:], _page_count(bundle)
    if kind == "later":  # from the end: the last part must keep a page
        later: list[int] = []
        following = pages + 1
        for start in reversed(true):
            following = start + 1 if start + 1 < following else start
            later.insert(0, following)
        variants = [later]
    elif kind == "earlier":  # from the start: the first part must keep a page
        earlier: list[int] = []
        previous = 1
        for start in true:
            previous = start - 1 if start - 1 > previous else start
            earlier.append(previous)
        variants = [earlier]
    elif kind == "merged":
        variants = [[start for start in true if start != dropped] for dropped in true]
    elif kind == "cut":
        cuts = [s + m.pages // 2 for s, m in zip(bundle.starts, bundle.members, strict=True) if m.pages > 1]
        variants = [sorted([*true, *cuts])] if cuts else []
    else:
        raise ValueError(kind)
    return [
        [(first, following - 1) for first, following in pairwise([1, *bounds, pages + 1])]
        for bounds in variants
        if bounds != true
    ]


def _held(bundle: Bundle, first: int, last: int) -> list[tuple[int, int, int]]:
    """The invoices a part holds pages of: (member index, first and last page of the invoice held)."""
    held = []
    for index, (start, member) in enumerate(zip(bundle.starts, bundle.members, strict=True)):
        low, high = max(first, start), min(last, start + member.pages - 1)
        if low <= high:
            held.append((index, low - start + 1, high - start + 1))
    return held


def _holds(bundle: Bundle, held: Sequence[tuple[int, int, int]]) -> str:
    described = []
    for index, low, high in held:
        member = bundle.members[index]
        pages = f"p{low}" if low == high else f"p{low}-{high}"
        described.append(f"{_short(member.name)} {pages}/{member.pages}")
    return " + ".join(described)


def forced_split(
    bundle: Bundle, kind: str, ranges: list[tuple[int, int]], document: Any, tenant: Any, rt: Any, alone: dict[str, Any]
) -> list[dict[str, Any]]:
    """Accept a job for the bundle, claim it and split it at ``ranges`` as the worker would,
    then take in and run each part holding wrong pages (the others are the true split's parts,
    which the main run measures: left ACCEPTED) until it ends. One record per such part."""
    from extraction.execution import lifecycle
    from extraction.models import AttemptOutcome, ExtractionJob, ExtractionResult

    parent_id = _accept(tenant, document)
    _take_in(parent_id)
    claim = lifecycle.claim_next_job(worker_id=rt.worker_id, policies=["default"])
    if claim is None or claim.job_id != parent_id:
        raise SystemExit(f"{bundle.name} {kind}: claimed {claim and claim.job_id}, not the bundle's job {parent_id}")
    split = lifecycle.split_job(
        claim,
        ranges,
        page_count=_page_count(bundle),
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.SPLIT, provider="eval-bundles"),
        detail={"boundaries": [], "forced": kind},
    )
    if not split:
        raise SystemExit(f"{bundle.name} {kind}: the forced split lost its claim")
    jobs = {(job.first_page, job.last_page): job.pk for job in ExtractionJob.objects.filter(parent_id=parent_id)}
    wrong = []
    for first, last in ranges:
        held = _held(bundle, first, last)
        member = bundle.members[held[0][0]]
        if len(held) > 1 or held[0][1:] != (1, member.pages):
            wrong.append((first, last, held))
    for first, last, _ in wrong:
        _take_in(jobs[first, last])
    _run_until_ended([jobs[first, last] for first, last, _ in wrong], rt)
    ids = [jobs[first, last] for first, last, _ in wrong]
    states = dict(ExtractionJob.objects.filter(pk__in=ids).values_list("pk", "state"))
    results = {result.job_id: result for result in ExtractionResult.objects.filter(job_id__in=ids)}
    records = []
    for first, last, held in wrong:
        job_id = jobs[first, last]
        # The part's main invoice: the most pages, then the one whose first page it holds.
        index = max(held, key=lambda h: (h[2] - h[1] + 1, h[1] == 1, -h[0]))[0]
        main = bundle.members[index]
        solo = alone.get(main.name)
        result = results.get(job_id)
        number, gross = _invoice_number(result), _gross_total(result)
        # The gross's reference: the truth's, or the invoice alone's read where the truth has none.
        reference = main.gross if main.gross is not None else _decimal((solo or {}).get("gross"))
        number_right = _same_number(number, main.number)
        gross_right = gross is not None and gross == reference  # Decimal: 300.00 == 300
        records.append(
            {
                "kind": kind,
                "bundle": bundle.name,
                "family": bundle.family,
                "ranges": [list(r) for r in ranges],
                "first": first,
                "last": last,
                "holds": _holds(bundle, held),
                "invoices": [bundle.members[i].name for i, _, _ in held],
                "two_invoices": len(held) > 1,
                "missing_pages": any(low != 1 or high != bundle.members[i].pages for i, low, high in held),
                "main": main.name,
                "state": states.get(job_id),
                "review_reasons": _review_reasons(result),
                "invoice_number": number,
                "gross": _amount(gross),
                "truth_number": main.number,
                "truth_gross": _amount(main.gross),
                "gross_reference": "truth" if main.gross is not None else "alone",
                "alone": None if solo is None else {k: solo[k] for k in ("state", "invoice_number", "gross")},
                "number_right": number_right,
                "gross_right": gross_right,
                "harmless": states.get(job_id) == SUCCEEDED and number_right and gross_right,
            }
        )
    return records


def run_wrong_splits(
    bundles: Sequence[Bundle], rt: Any, alone: dict[str, Any], only: Sequence[str] = WRONG_KINDS
) -> list[dict[str, Any]]:
    """Every wrong split of every kind on every bundle, each kind in a tenant of its own."""
    from extraction.intake.documents import store_document

    records: list[dict[str, Any]] = []
    for kind in only:
        tenant = harness.make_tenant(f"eval-bundles-{kind}").tenant
        started = time.monotonic()
        variants = 0
        for bundle in bundles:
            forced = wrong_splits(bundle, kind)
            if not forced:
                continue
            data = bundle_pdf(bundle)
            document, _ = store_document(tenant=tenant, upload=io.BytesIO(data), filename="bundle.pdf")
            for ranges in forced:
                records.extend(forced_split(bundle, kind, ranges, document, tenant, rt, alone))
                variants += 1
        print(
            f"  wrong splits {kind}: {variants} splits, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True
        )
    return records


def wrong_split_metrics(records: Sequence[dict[str, Any]], kind: str) -> dict[str, Any]:
    chosen = [r for r in records if r["kind"] == kind]
    succeeded = [r for r in chosen if r["state"] == SUCCEEDED]
    return {
        "splits": len({(r["bundle"], tuple(map(tuple, r["ranges"]))) for r in chosen}),
        "parts": len(chosen),
        "two_invoices": sum(r["two_invoices"] for r in chosen),
        "missing_pages": sum(r["missing_pages"] for r in chosen),
        "review_required": sum(r["state"] == REVIEW_REQUIRED for r in chosen),
        "succeeded": len(succeeded),
        "succeeded_harmless": sum(r["harmless"] for r in succeeded),
        "succeeded_harmful": sum(not r["harmless"] for r in succeeded),
        "failed_terminal": sum(r["state"] == FAILED_TERMINAL for r in chosen),
        "not_ended": sum(r["state"] not in ENDED for r in chosen),
    }


def _print_control(rows: dict[str, dict[str, Any]], records: Sequence[dict[str, Any]], alone: dict[str, Any]) -> None:
    print("\n## Control: each part beside its invoice read alone\n")
    states = defaultdict(int)
    for solo in alone.values():
        states[solo["state"]] += 1
    print(
        f"Each of the {len(alone)} invoices in the bundles accepted alone (its pages as the bundles hold them, no "
        f"attached e-invoice; tenant likewise, possible_duplicate off, default policy) and run: "
        f"{', '.join(f'{k} {v}' for k, v in sorted(states.items()))}. Each part holding one whole invoice compared "
        "with it.\n"
    )
    print(
        "| parts | SUCCEEDED (alone) | same state | part REVIEW_REQUIRED, alone SUCCEEDED | part SUCCEEDED, alone "
        "REVIEW_REQUIRED | other difference | same number | same gross | same state, number and gross |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, m in rows.items():
        print(
            f"| {name}: {m['parts']} | {m['succeeded']} ({m['alone_succeeded']}) | {m['same_state']} "
            f"| {m['reviewed_alone_succeeded']} | {m['succeeded_alone_reviewed']} | {m['other_state_difference']} "
            f"| {m['same_number']} | {m['same_gross']} | {m['same_all']} |"
        )
    differing = [r for r in records if not (r["same_state"] and r["same_number"] and r["same_gross"])]
    print(f"\n### Parts that differ from their invoice alone: {len(differing)}\n")
    if not differing:
        print("None.")
    for r in differing:
        print(
            f"- **{r['bundle']}** part {r['pages'][0]}-{r['pages'][1]} {_short(r['invoice'])}: part {r['state']} "
            f"(number {r['invoice_number']!r}, gross {r['gross']}; reasons {', '.join(r['review_reasons']) or '-'}) "
            f"vs alone {r['alone_state']} (number {r['alone_invoice_number']!r}, gross {r['alone_gross']}; reasons "
            f"{', '.join(r['alone_review_reasons']) or '-'})"
        )


def _print_wrong_splits(rows: dict[str, dict[str, Any]], records: Sequence[dict[str, Any]]) -> None:
    print("\n## Wrong splits forced on the bundles\n")
    print(
        "Each bundle's job accepted, claimed and split at wrong boundaries (`lifecycle.split_job`), a tenant per "
        "kind: **later** / **earlier**: every true boundary moved one page (one split per bundle; a boundary "
        "that would empty a part stays); **merged**: one true boundary dropped (one split per boundary); "
        "**cut**: a boundary added inside each multi-page invoice, after page ⌊n/2⌋ (one split per bundle). "
        "Only the parts with wrong pages are taken in and run (the others are the true split's). A SUCCEEDED "
        "part is harmless when its invoice number and gross equal its main invoice's truth (the invoice "
        "it holds most pages of; the alone read's gross where the truth has none), harmful otherwise.\n"
    )
    print(
        "| kind | splits | parts with wrong pages | two invoices' pages | missing pages | REVIEW_REQUIRED "
        "| SUCCEEDED | harmless | **harmful** | FAILED_TERMINAL | not ended |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, m in rows.items():
        print(
            f"| {name} | {m['splits']} | {m['parts']} | {m['two_invoices']} | {m['missing_pages']} "
            f"| {m['review_required']} | {m['succeeded']} | {m['succeeded_harmless']} | **{m['succeeded_harmful']}** "
            f"| {m['failed_terminal']} | {m['not_ended']} |"
        )
    succeeded = [r for r in records if r["state"] == SUCCEEDED]
    print(f"\n### SUCCEEDED with wrong pages: {len(succeeded)}\n")
    if not succeeded:
        print("None.")
    for r in succeeded:
        ranges = ", ".join(f"{a}-{b}" for a, b in r["ranges"])
        verdict = "harmless" if r["harmless"] else "**harmful**"
        solo = r["alone"] or {}
        print(
            f"- {verdict} [{r['kind']}] **{r['bundle']}** split {ranges}: part {r['first']}-{r['last']} holds "
            f"{r['holds']}; number {r['invoice_number']!r} (truth {r['truth_number']!r}), gross {r['gross']} "
            f"({r['gross_reference']} {r['truth_gross'] if r['gross_reference'] == 'truth' else solo.get('gross')}); "
            f"main invoice alone: {solo.get('state')}, number {solo.get('invoice_number')!r}, gross {solo.get('gross')}"
        )


def run_through_worker(args: argparse.Namespace) -> int:
    from django.conf import settings

    from extraction.execution.runtime import WorkerRuntime

    started = time.monotonic()
    invoices = sample_invoices()
    built = build_bundles(invoices, mixed=args.mixed, scanned=args.scanned if args.with_scanned else 0, seed=args.seed)
    bundles = _limited(built, args.through_worker_limit)
    _fresh_eval_database()
    tenant = harness.make_tenant("eval-bundles").tenant  # possible_duplicate off, limits out of reach
    rt = WorkerRuntime(worker_id=f"eval-bundles-{uuid.uuid4().hex[:6]}")
    runs = []
    for index, bundle in enumerate(bundles, 1):
        runs.append(through_worker(bundle, tenant, rt))
        print(f"  {index}/{len(bundles)} {bundle.name}: {runs[-1].seconds} s", file=sys.stderr, flush=True)
    alone: dict[str, dict[str, Any]] = {}
    if args.control or args.wrong_splits:  # the wrong splits' gross where the truth has none
        alone_tenant = harness.make_tenant("eval-bundles-alone").tenant
        used = {member.name: member for bundle in bundles for member in bundle.members}
        for name, invoice in sorted(used.items()):
            alone[name] = run_alone(invoice, alone_tenant, rt)
            if invoice.einvoice is not None:
                alone[name]["as_file"] = run_alone(invoice, alone_tenant, rt, as_file=True)
        print(f"  {len(alone)} invoices alone: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    control = control_records(runs, alone) if args.control else []
    wrong_split_parts = run_wrong_splits(bundles, rt, alone) if args.wrong_splits else []
    rt.stopping.set()
    elapsed = time.monotonic() - started
    families = [family for family in FAMILIES if any(b.family == family for b in bundles)]

    def rows_of(measure: Any) -> dict[str, dict[str, Any]]:
        rows = {family: measure([r for r in runs if r.outcome.bundle.family == family]) for family in families}
        rows["all"] = measure(runs)
        return rows

    boundary_rows = rows_of(lambda chosen: metrics([r.outcome for r in chosen]))
    control_rows = {family: control_metrics([r for r in control if r["family"] == family]) for family in families}
    control_rows["all"] = control_metrics(control)
    wrong_split_rows = {kind: wrong_split_metrics(wrong_split_parts, kind) for kind in WRONG_KINDS}
    part_rows = rows_of(lambda chosen: {"bundles": len(chosen), **part_metrics(chosen)})
    total, parts = boundary_rows["all"], part_rows["all"]
    met = (
        parts["succeeded_wrong_pages"] == 0
        and parts["not_ended"] == 0
        and total["f1"] >= TARGET_F1
        and total["mixed_parts"] == 0
    )
    wrong = [worker_case_record(r) for r in runs if r.wrong or r.outcome.mixed_parts]
    number_wrong = [
        worker_case_record(r)
        for r in runs
        if any(p["state"] == SUCCEEDED and not p["wrong_pages"] and not p["number_right"] for p in r.parts)
    ]
    not_ended = [worker_case_record(r) for r in runs if any(p["state"] not in ENDED for p in r.parts)]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    provider = settings.EXTRACTION_PROVIDER

    def report() -> None:
        print("# Bundle splitting through the worker (eval/bundles.py --through-worker)\n")
        print(
            f"{len(bundles)} bundles ({', '.join(families)}) built from {len(invoices)} sample PDFs (seed "
            f"{args.seed}), each stored as a document of a fresh tenant (possible_duplicate off), accepted with "
            f"the default model policy (provider {provider}), taken in and run by a worker slot in this process, "
            f"then its parts likewise. Database {EVAL_DATABASE}, Redis {EVAL_REDIS_URL}. "
            f"Commit {commit.stdout.strip() or '?'}, {elapsed:.0f} s.\n"
        )
        print("## Page boundaries of the parts\n")
        _table(boundary_rows)
        print("\n## How the parts ended\n")
        _part_table(part_rows)
        verdict = "met" if met else "NOT met"
        print(
            f"\nParts that ended SUCCEEDED holding pages of two invoices or missing pages of theirs: "
            f"**{parts['succeeded_wrong_pages']}** (must be 0). Target (that, every part ended, F1 >= {TARGET_F1}, "
            f"no part with two invoices' pages): **{verdict}**."
        )
        _print_worker_cases("Bundles split wrong", wrong)
        _print_worker_cases("Bundles with a SUCCEEDED part whose invoice number is not its invoice's", number_wrong)
        if not_ended:
            _print_worker_cases("Bundles with a part that did not end", not_ended)
        if args.control:
            _print_control(control_rows, control, alone)
            with_file = [solo for solo in alone.values() if "as_file" in solo]
            file_states: dict[str, int] = defaultdict(int)
            for solo in with_file:
                file_states[solo["as_file"]["state"]] += 1
            print(
                f"\nThe {len(with_file)} of them carrying a Factur-X/ZUGFeRD XML, accepted as the sample file itself "
                f"(the XML read): {', '.join(f'{k} {v}' for k, v in sorted(file_states.items())) or '-'}."
            )
        if args.wrong_splits:
            _print_wrong_splits(wrong_split_rows, wrong_split_parts)

    result = {
        "mode": "through_worker",
        "seed": args.seed,
        "commit": commit.stdout.strip(),
        "database": EVAL_DATABASE,
        "redis_url": EVAL_REDIS_URL,
        "provider": provider,
        "seconds": round(elapsed, 1),
        "target": {"f1": TARGET_F1, "succeeded_wrong_pages": 0, "met": met},
        "boundaries": boundary_rows,
        "parts": part_rows,
        "wrong": wrong,
        "succeeded_number_wrong": number_wrong,
        "not_ended": not_ended,
        "bundles": [worker_case_record(r) for r in runs],
        "alone": alone,
        "control": {"rows": control_rows if args.control else None, "parts": control},
        "wrong_splits": {"rows": wrong_split_rows if args.wrong_splits else None, "parts": wrong_split_parts},
    }
    harness.publish_results("bundles-worker", report, result, json_path=args.json)
    return 0 if met else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="the JSON's path (default: bench/results/bundles-<UTC time>.json)")
    parser.add_argument("--mixed", type=int, default=40, help="how many mixed bundles (40)")
    parser.add_argument("--scanned", type=int, default=4, help="how many scanned bundles, read by OCR (4; 0 skips)")
    parser.add_argument("--seed", type=int, default=27, help="the bundles' random seed (27, the issue)")
    parser.add_argument(
        "--through-worker", action="store_true", help="split through the product path (database eval_bundles)"
    )
    parser.add_argument(
        "--through-worker-limit", type=int, metavar="N", help="with --through-worker: N bundles (default all)"
    )
    parser.add_argument(
        "--with-scanned", action="store_true", help="with --through-worker: the scanned family too (OCR, slow)"
    )
    parser.add_argument(
        "--control",
        action=argparse.BooleanOptionalAction,
        help="with --through-worker: each invoice also read alone, each part compared with it (default on)",
    )
    parser.add_argument(
        "--wrong-splits",
        action=argparse.BooleanOptionalAction,
        help="with --through-worker: wrong boundaries forced on each bundle, its wrong parts run (default on)",
    )
    args = parser.parse_args()
    if args.through_worker != THROUGH_WORKER:  # an abbreviation: Django is set up for no database
        parser.error("spell --through-worker out")
    extras = (args.through_worker_limit, args.control, args.wrong_splits)
    if not args.through_worker and (any(extra is not None for extra in extras) or args.with_scanned):
        parser.error("--through-worker-limit, --with-scanned, --control and --wrong-splits go with --through-worker")
    args.control = args.control is not False
    args.wrong_splits = args.wrong_splits is not False
    if args.through_worker:
        try:
            return run_through_worker(args)
        finally:
            if MEDIA_ROOT is not None:
                shutil.rmtree(MEDIA_ROOT, ignore_errors=True)
    started = time.monotonic()
    invoices = sample_invoices()
    bundles = build_bundles(invoices, mixed=args.mixed, scanned=args.scanned, seed=args.seed)
    printed, blanked, texts = [], [], {}
    einvoice_pages_left_out = 0
    for bundle in bundles:
        document = read_as_worker(bundle_pdf(bundle))
        visible = document.for_providers().pages
        if len(visible) != bundle.starts[-1] + bundle.members[-1].pages - 1:
            raise SystemExit(f"{bundle.name}: {len(visible)} pages read, the invoices have other counts")
        einvoice_pages_left_out += document.einvoice_page is not None
        texts[bundle.name] = visible
        printed.append(score(bundle, split_document(document)))
        blanked.append(score(bundle, split_bundle([blank_page_numbers(page) for page in visible])))
    large = _large_bundle(printed, texts)
    elapsed = time.monotonic() - started
    printed_rows, blanked_rows = _by_family(printed), _by_family(blanked)
    met = printed_rows["all"]["f1"] >= TARGET_F1 and printed_rows["all"]["mixed_parts"] == 0
    wrong = [case_record(o) for o in printed if o.wrong or o.mixed_parts]
    wrong_blanked = [case_record(o) for o in blanked if o.wrong or o.mixed_parts]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)

    def report() -> None:
        print("# Bundle splitting (eval/bundles.py)\n")
        print(
            f"{len(bundles)} bundles built from {len(invoices)} sample PDFs (seed {args.seed}), read as the worker "
            f"reads them; {einvoice_pages_left_out} carried a Factur-X XML whose printed page was left out. "
            f"Commit {commit.stdout.strip() or '?'}, {elapsed:.0f} s.\n"
        )
        print("## Pages as printed\n")
        _table(printed_rows)
        verdict = "met" if met else "NOT met"
        print(f"\nTarget F1 >= {TARGET_F1} and no part with pages of two invoices: **{verdict}**.")
        _print_cases("Bundles split wrong", wrong)
        print("\n## Page numbers blanked (a scan batch that prints none)\n")
        _table(blanked_rows)
        _print_cases("Bundles split wrong", wrong_blanked, limit=15)
        print(
            f"\n## {large['pages']} pages at once\n\n{large['invoices']} invoices split in {large['seconds']} s, "
            f"F1 {large['f1']:.3f}."
        )

    result = {
        "seed": args.seed,
        "commit": commit.stdout.strip(),
        "target": {"f1": TARGET_F1, "met": met},
        "printed": printed_rows,
        "page_numbers_blanked": blanked_rows,
        "einvoice_pages_left_out": einvoice_pages_left_out,
        "large_bundle": large,
        "wrong": wrong,
        "wrong_page_numbers_blanked": wrong_blanked,
        "bundles": [case_record(o) for o in printed],
    }
    harness.publish_results("bundles", report, result, json_path=args.json)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
