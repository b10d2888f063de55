"""Each evidence of a stored result says where on its page the quote is printed (``boxes``), from
the page geometry kept with the document's text: on a PDF's text layer, none on a plain-text or
printed-XML page, and wherever the evidence ends up after relocation."""

from __future__ import annotations

import json

from extraction.intake.geometry import boxes_for
from extraction.intake.text import extract_document_text
from extraction.providers.builtin import extract_invoice
from extraction.validation.evidence import relocate_evidence, with_boxes
from extraction.validation.schema import parse_invoice_v1
from tests.factories import INVOICES

ELEKTRON = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"


def _evidences(output):
    for path, field in parse_invoice_v1(json.dumps(output)).fields():
        if field.evidence is not None:
            yield path, field.evidence


def test_every_evidence_on_a_text_layer_page_gets_a_box_per_printed_line():
    document = extract_document_text(ELEKTRON.read_bytes(), "application/pdf")
    output = extract_invoice(document.for_providers())

    boxed = with_boxes(output, document)

    evidences = dict(_evidences(boxed))
    assert evidences and all(evidence.boxes for evidence in evidences.values())
    gross = evidences["totals.gross"]
    assert gross.boxes == boxes_for(document.page_geometry(gross.page), gross.start, gross.end)
    assert len(gross.boxes) == 1  # "…" printed on one line
    x0, y0, x1, y1 = gross.boxes[0]
    assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
    assert "boxes" not in json.dumps(output)  # the answer itself is left as it was


def test_a_page_without_geometry_gives_null_boxes():
    document = extract_document_text(b"Invoice INV-1\nTotal 119.00\n", "text/plain")
    output = extract_invoice(document)

    boxed = with_boxes(output, document)

    assert boxed["invoice_number"]["evidence"]["boxes"] is None


def test_boxes_follow_relocated_evidence():
    document = extract_document_text(ELEKTRON.read_bytes(), "application/pdf")
    output = extract_invoice(document.for_providers())
    right = output["totals"]["gross"]["evidence"]
    # A model that miscounted: the right quote at wrong offsets.
    output["totals"]["gross"]["evidence"] = {**right, "start": 0, "end": right["end"] - right["start"]}
    relocated, moved = relocate_evidence(parse_invoice_v1(json.dumps(output)), document.for_providers())

    boxed = with_boxes(relocated.to_json_dict(), document)

    assert [relocation.field for relocation in moved] == ["totals.gross"]
    assert boxed["totals"]["gross"]["evidence"]["boxes"] == boxes_for(
        document.page_geometry(right["page"]), right["start"], right["end"]
    )
