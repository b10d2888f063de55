"""Duplicates: which uploads of the corpus the ``possible_duplicate`` check takes for one invoice.

    .venv/bin/python eval/duplicates.py [--json PATH] [--no-ocr]

1. Uploads, as a tenant's documents: every document of the accuracy corpus (eval/accuracy.py's
   cases, read along the product's path: an e-invoice from its XML, anything else by the rules);
   then the same invoices arriving a second way: each Factur-X/ZUGFeRD PDF's own XML (the
   ``*.embedded.xml`` beside it) uploaded as an XML, and every XML invoice's printed rendering
   uploaded again as a text file (read by the rules, as a re-uploaded copy is).
2. Names each upload by its fingerprints (extraction.validation.duplicates.fingerprints): two
   uploads are flagged as one invoice when they share one, which is what the check does in the
   database, pair by pair.
3. Scores against the truth: every pair of a PDF and its own XML and every pair of an invoice and
   its re-uploaded rendering must be flagged; no pair the truth says are distinct invoices (another
   number, another supplier, another document type, or neither the issue date nor the gross
   total alike) may be. Pairs the truth cannot tell apart (the same number from the same supplier
   on the same date: two syntaxes of one test invoice, say) are listed apart.

No database. Prints Markdown and writes it with the figures as JSON (``bench/results/
duplicates-<UTC time>.{txt,json}``, or the JSON to ``--json PATH``). Exit status 1 if a required
pair is missed or a distinct pair is flagged.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402

harness.setup_django()

from eval.accuracy import INVOICES, Case, collect_cases, structured_first  # noqa: E402
from eval.render_invoice_xml import render_invoice_xml  # noqa: E402
from extraction.intake.text import DocumentText, extract_document_text  # noqa: E402
from extraction.providers.builtin import extract_invoice  # noqa: E402
from extraction.validation.duplicates import fingerprints, same_supplier  # noqa: E402
from extraction.validation.schema import parse_invoice  # noqa: E402
from extraction.validation.suppliers import comparable_name, normalize_vat_id  # noqa: E402


@dataclass
class Upload:
    name: str
    how: str  # "corpus", "its own XML", "rendering re-uploaded"
    origin: str  # the corpus case it is a second copy of (itself for a corpus document)
    truth: dict[str, Any]
    keys: frozenset[str]
    identifiers: dict[str, str]  # the supplier's, as read (duplicates.same_supplier weighs them)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-ocr", action="store_true", help="skip the PNG (OCR) cases")
    args = parser.parse_args()
    uploads = corpus_uploads(collect_cases(ocr=not args.no_ocr))
    result = score(uploads)
    harness.publish_results("duplicates", lambda: print(report(result)), result, json_path=args.json)
    return 0 if not result["required_missed"] and not result["distinct_flagged"] else 1


def corpus_uploads(cases: list[Case]) -> list[Upload]:
    uploads: list[Upload] = []
    for index, case in enumerate(cases):
        document = case.load()
        answer = structured_first(index, case, document)
        uploads.append(Upload(case_id(case), "corpus", case_id(case), case.truth, *_named(answer.output)))
        if case.path is None:
            continue
        own_xml = case.path.with_name(case.path.name.removesuffix(".pdf") + ".embedded.xml")
        if case.content_type == "application/pdf" and own_xml.exists():
            read = _read_upload(own_xml.read_bytes(), "application/xml", own_xml)
            uploads.append(Upload(_relative(own_xml), "its own XML", case_id(case), case.truth, *read))
        xml = _xml_of(case, document)
        if xml is not None:
            # The invoice printed and uploaded again as text: read by the rules.
            printed = DocumentText(pages=(render_invoice_xml(xml).text,))
            uploads.append(
                Upload(
                    f"{case_id(case)} (rendering, as text)",
                    "rendering re-uploaded",
                    case_id(case),
                    case.truth,
                    *_named(extract_invoice(printed)),
                )
            )
    return uploads


def score(uploads: list[Upload]) -> dict[str, Any]:
    required: list[dict[str, Any]] = []
    distinct_flagged: list[dict[str, Any]] = []
    alike_flagged: list[dict[str, Any]] = []
    alike_not_flagged: list[dict[str, Any]] = []
    distinct_pairs = 0
    for first, second in combinations(uploads, 2):
        flagged = _flagged(first, second)
        pair = {"first": first.name, "second": second.name, "how": second.how if second.how != "corpus" else first.how}
        if first.origin == second.origin:
            required.append({**pair, "flagged": flagged})
        elif _distinct(first.truth, second.truth):
            distinct_pairs += 1
            if flagged:
                distinct_flagged.append({**pair, "shared": sorted(first.keys & second.keys)})
        elif flagged:
            alike_flagged.append(pair)
        else:
            alike_not_flagged.append(pair)
    by_how: dict[str, dict[str, int]] = {}
    for pair in required:
        counts = by_how.setdefault(pair["how"], {"pairs": 0, "flagged": 0})
        counts["pairs"] += 1
        counts["flagged"] += pair["flagged"]
    return {
        "uploads": len(uploads),
        "uploads_without_fingerprint": sorted(upload.name for upload in uploads if not upload.keys),
        "required": by_how,
        "required_missed": [pair for pair in required if not pair["flagged"]],
        "distinct_pairs": distinct_pairs,
        "distinct_flagged": distinct_flagged,
        "truth_alike_flagged": alike_flagged,
        "truth_alike_not_flagged": alike_not_flagged,
    }


def report(result: dict[str, Any]) -> str:
    out = [
        "# Duplicates on the corpus (`possible_duplicate`)",
        "",
        f"{result['uploads']} uploads: the corpus, each Factur-X/ZUGFeRD PDF's own XML, and every XML "
        "invoice's printed rendering uploaded again as text. Two uploads are flagged when they share "
        "a fingerprint (document type | supplier by VAT id, IBAN or name | invoice number | issue "
        "date or gross total).",
        "",
        "| pairs that are one invoice | pairs | flagged |",
        "|---|---:|---:|",
        *(f"| a document and {how} | {c['pairs']} | {c['flagged']} |" for how, c in sorted(result["required"].items())),
        "",
        f"Pairs the truth says are distinct invoices: {result['distinct_pairs']:,}, flagged: "
        f"{len(result['distinct_flagged'])}.",
        "",
    ]
    for title, pairs in (
        ("Missed (one invoice, not flagged)", result["required_missed"]),
        ("Distinct invoices flagged", result["distinct_flagged"]),
        ("Flagged, and alike in the truth (same number, supplier and date or gross)", result["truth_alike_flagged"]),
        ("Alike in the truth, not flagged", result["truth_alike_not_flagged"]),
    ):
        out += [f"## {title}: {len(pairs)}", ""]
        out += [f"- {pair['first']} — {pair['second']}" for pair in pairs[:60]]
        if len(pairs) > 60:
            out.append(f"- … and {len(pairs) - 60} more (in the JSON)")
        out.append("")
    if result["uploads_without_fingerprint"]:
        out += [
            f"Uploads the check cannot name (no invoice number, or no supplier, or neither an issue "
            f"date nor a gross total read): {len(result['uploads_without_fingerprint'])}: "
            + ", ".join(result["uploads_without_fingerprint"]),
            "",
        ]
    return "\n".join(out)


def case_id(case: Case) -> str:
    return f"{case.source}/{case.name}"


def _named(output: dict[str, Any] | None) -> tuple[frozenset[str], dict[str, str]]:
    """The upload's fingerprint keys and its supplier's identifiers, as the check claims them."""
    if output is None:
        return frozenset(), {}
    invoice = parse_invoice(json.dumps(output), schema=output.get("schema", "invoice.v1"))
    named = fingerprints(invoice)
    return frozenset(f.key for f in named), (named[0].matched["identifiers"] if named else {})


def _flagged(first: Upload, second: Upload) -> bool:
    """What the check decides for the later of two uploads: a shared key whose supplier
    identifier is not contradicted by a greater one (duplicates.same_supplier)."""
    return any(
        same_supplier(first.identifiers, second.identifiers, by=key.split("|")[1]) for key in first.keys & second.keys
    )


def _read_upload(data: bytes, content_type: str, path: Path) -> tuple[frozenset[str], dict[str, str]]:
    document = extract_document_text(data, content_type)
    case = Case(path.name, "upload", lambda: document, {}, path=path, content_type=content_type)
    return _named(structured_first(0, case, document).output)


def _xml_of(case: Case, document: DocumentText) -> bytes | None:
    """The XML the case is or embeds, for its printed rendering."""
    if case.path is None or document.einvoice_page is None:
        return None
    if case.content_type == "application/xml":
        return case.path.read_bytes()
    own_xml = case.path.with_name(case.path.name.removesuffix(".pdf") + ".embedded.xml")
    return own_xml.read_bytes() if own_xml.exists() else None


def _distinct(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether the truth says two invoices are different ones; unknown parts decide nothing."""

    def differ(name: str, normalize: Any) -> bool:
        a, b = first.get(name), second.get(name)
        return a is not None and b is not None and normalize(a) != normalize(b)

    supplier = first.get("supplier.vat_id") and second.get("supplier.vat_id")
    return (
        differ("document_type", str)
        or differ("invoice_number", _number)
        or (differ("supplier.vat_id", normalize_vat_id) if supplier else differ("supplier.name", comparable_name))
        or (differ("issue_date", str) and differ("totals.gross", _money))
    )


def _number(value: Any) -> str:
    return re.sub(r"[^0-9A-Z]+", "", str(value).upper())


def _money(value: Any) -> str:
    try:
        return format(Decimal(str(value)).quantize(Decimal("0.01")), "f")
    except InvalidOperation:
        return str(value)


def _relative(path: Path) -> str:
    return str(path.relative_to(INVOICES))


if __name__ == "__main__":
    sys.exit(main())
