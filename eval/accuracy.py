"""Accuracy harness: the built-in extractor, a language model and the validation policy on real invoices.

    .venv/bin/python eval/accuracy.py [--no-ocr] [--json PATH]
    .venv/bin/python eval/accuracy.py --provider local --sample 20 [--no-ocr]
    .venv/bin/python eval/accuracy.py --provider openai --base-url URL --model NAME --sample 20
        [--api-key-env VAR] [--structured-output DIALECT] [--answer-format invoice.v1|quotes]
        [--price-input-per-million USD] [--price-output-per-million USD]

1. Extraction accuracy: the built-in extractor's answer for every invoice in
   ``testdata/invoices`` with ground truth, scored field by field (precision, recall) per field
   and per source, and the share that validation would send to REVIEW_REQUIRED, and why.
   With ``--provider local|openai`` a language model answers the same documents (all of them, or
   the stratified ``--sample N``) through the worker's path (provider → ``parse_invoice_v1`` →
   ``relocate_evidence`` → the same validation), reported side by side with the built-in
   extractor on the same documents, with the model's latency, tokens and cost.
2. Corruption test: the ground truth of every XML invoice, rendered, validated clean and then
   corrupted the ways a model goes wrong; every corruption must be caught.

No database is needed: the policy runs as a pure function (``check_invoice``). Exit status 1 if
a corruption was missed, 2 if the local model server does not answer. Method and how to read the
report: eval/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import re
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402

harness.setup_django()

from django.conf import settings  # noqa: E402

from eval.render_invoice_xml import CREDIT_NOTE_CODES, render_invoice_xml  # noqa: E402
from extraction.capacity.tokens import estimate_prompt_tokens  # noqa: E402
from extraction.intake.text import (  # noqa: E402
    SOURCE_EINVOICE,
    DocumentText,
    einvoice_xml_of,
    extract_document_text,
    with_embedded_einvoice,
)
from extraction.providers.base import ProviderError, ProviderRequest  # noqa: E402
from extraction.providers.builtin import PROVIDER_NAME as BUILTIN_PROVIDER  # noqa: E402
from extraction.providers.builtin import extract_invoice  # noqa: E402
from extraction.providers.einvoice import answer_from_einvoice  # noqa: E402
from extraction.providers.quoted_answer import ANSWER_FORMATS  # noqa: E402
from extraction.providers.structured_output import DIALECTS  # noqa: E402
from extraction.validation.derivation import Derivation, derive_missing  # noqa: E402
from extraction.validation.evidence import relocate_evidence, with_boxes  # noqa: E402
from extraction.validation.fields import TRUSTED, FieldStatus, ReadingSource, Sources  # noqa: E402
from extraction.validation.policy import (  # noqa: E402
    BLOCKING,
    FAILED,
    NO_TERMS,
    POLICY_VERSION,
    AmountDueTerms,
    MasterData,
    SupplierRecord,
    ValidationOutcome,
    check_invoice,
)
from extraction.validation.readings import ReadTogether, judged_together, read_together, rules_settle  # noqa: E402
from extraction.validation.schema import (  # noqa: E402
    InvoiceOutputError,
    Supplier,
    Totals,
    parse_invoice,
    parse_invoice_v1,
    upgraded_to_v2,
)
from extraction.validation.suppliers import comparable_name, normalize_iban, normalize_vat_id  # noqa: E402
from tests.simulator import hallucinate  # noqa: E402

INVOICES = ROOT / "testdata" / "invoices"
XML_FOLDERS = ("zugferd-corpus", "factur-x-python", "xrechnung-testsuite", "en16931-examples", "invoice2data", "ubl-tr")
# Turkish and French invoices written by this project (testdata/invoices/written/README.md).
WRITTEN = INVOICES / "written"
# The tokenizer a hosted model would count a document with, for the tokens the structured path saves.
TOKEN_ESTIMATE_MODEL = "gpt-4o-mini"
HEADER_FIELDS = (
    "document_type",
    "supplier.name",
    "supplier.vat_id",
    "supplier.iban",
    "invoice_number",
    "issue_date",
    "due_date",
    "currency",
    "totals.net",
    "totals.tax",
    "totals.gross",
    "totals.prepaid",
    "totals.amount_due",
)
LINE_FIELDS = ("description", "quantity", "unit_price", "net_amount", "tax_rate")
_IBAN_SHAPE = re.compile(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}")
ALLOWED_CURRENCIES = list(settings.TENANT_DEFAULT_ALLOWED_CURRENCIES)


# --- cases and their truth ---------------------------------------------------------------------


@dataclass
class Case:
    name: str
    source: str
    load: Callable[[], DocumentText]
    truth: dict[str, Any]  # path -> expected value (None = absent); only known keys
    truth_lines: list[dict[str, Any]] | None = None  # None = lines not known
    # The document's bytes and media type, for the e-invoice it is or embeds.
    path: Path | None = None
    content_type: str = ""
    # The test data's IBAN fails mod-97 on purpose (a dummy; the index says iban_checksum_ok false):
    # validation must send it to review, so it is counted apart from false reviews.
    dummy_iban: bool = False


def _iban_of(accounts: list[str]) -> str | None:
    for account in accounts or []:
        compact = re.sub(r"\s", "", account).upper()
        if _IBAN_SHAPE.fullmatch(compact):
            return compact
    return None


def _xml_truth(record: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    totals = record["totals"]
    credit = record["syntax"] == "UBL-CreditNote" or record["type_code"] in CREDIT_NOTE_CODES
    truth = {
        "document_type": "credit_note" if credit else "invoice",
        "supplier.name": record["seller_name"],
        "supplier.vat_id": record["seller_vat_id"],
        "supplier.iban": _iban_of(record["payee_accounts"]),
        "invoice_number": record["invoice_number"],
        "issue_date": record["issue_date"],
        "due_date": record["due_date"],
        "currency": record["currency"],
        "totals.net": totals["net_total_BT109"],
        "totals.tax": totals["tax_total_BT110"],
        "totals.gross": totals["gross_total_BT112"],
        "totals.prepaid": totals["prepaid_BT113"],
        "totals.amount_due": totals["amount_due_BT115"],
    }
    lines = [
        {
            "description": line["name"],
            "quantity": line["quantity"],
            "unit_price": line["unit_price"],
            "net_amount": line["net_amount"],
            "tax_rate": line["vat_rate"],
        }
        for line in record["lines"]
    ]
    return truth, lines


def _invoice2data_truth(expected: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    truth: dict[str, Any] = {}
    for ours, theirs in (
        ("invoice_number", "invoice_number"),
        ("issue_date", "date"),
        ("due_date", "date_due"),
        ("currency", "currency"),
        ("supplier.iban", "iban"),
        ("supplier.name", "partner_name"),
    ):
        if theirs in expected:
            truth[ours] = str(expected[theirs])
    vat = expected.get("vat", expected.get("static_vat"))
    if vat is not None:
        truth["supplier.vat_id"] = str(vat)
    money = {
        k: Decimal(str(expected[k])).quantize(Decimal("0.01"))
        for k in ("amount", "amount_untaxed", "amount_tax")
        if isinstance(expected.get(k), (int, float))
    }
    if "amount" in money:
        truth["totals.gross"] = money["amount"]
    if "amount_untaxed" in money:
        truth["totals.net"] = money["amount_untaxed"]
    if "amount_tax" in money:
        truth["totals.tax"] = money["amount_tax"]
    elif "amount" in money and "amount_untaxed" in money:
        truth["totals.tax"] = money["amount"] - money["amount_untaxed"]
    items = expected.get("lines") or expected.get("line_items")
    lines = None
    if items:
        lines = []
        for item in items:
            if not any(key in item for key in ("name", "desc", "price_subtotal", "price", "price_unit")):
                continue  # section headers and notes are not items
            # Only what the template read: a field its record leaves out is unknown, not null
            # (QualityHosting's records give a price but no line amount).
            read = {
                "description": item.get("name", item.get("desc")),
                "quantity": item.get("qty"),
                "unit_price": item.get("price_unit", item.get("price")),
                "net_amount": item.get("price_subtotal"),
                "tax_rate": item.get("line_tax_percent", item.get("taxpercent")),
            }
            lines.append({name: value for name, value in read.items() if value is not None})
    return truth, lines


def _reader(path: Path, content_type: str) -> Callable[[], DocumentText]:
    """The document's text as the worker stores it: a Factur-X PDF's printed XML after its pages."""

    def load() -> DocumentText:
        data = path.read_bytes()
        document = extract_document_text(data, content_type)
        if content_type != "application/pdf":
            return document
        return with_embedded_einvoice(document, einvoice_xml_of(data, content_type))

    return load


def _has_dummy_iban(record: dict[str, Any]) -> bool:
    """Whether the invoice's IBAN is one the test data marks as failing mod-97 (its keys are the
    accounts as the XML writes them, spaces and all)."""
    iban = _iban_of(record["payee_accounts"])
    return iban is not None and any(
        ok is False and re.sub(r"\s", "", account).upper() == iban
        for account, ok in record.get("iban_checksum_ok", {}).items()
    )


def collect_cases(*, ocr: bool) -> list[Case]:
    cases: list[Case] = []
    for folder in XML_FOLDERS:
        index = json.loads((INVOICES / folder / "expected_fields.json").read_text())["records"]
        for record in index:
            truth, lines = _xml_truth(record)
            dummy = _has_dummy_iban(record)
            if record["rendered_pdf"]:
                if folder == "invoice2data":
                    continue  # its PDFs are scored against invoice2data's own JSON below
                pdf = INVOICES / folder / record["rendered_pdf"]
                cases.append(
                    Case(
                        record["rendered_pdf"],
                        f"{folder}/pdf",
                        _reader(pdf, "application/pdf"),
                        truth,
                        lines,
                        path=pdf,
                        content_type="application/pdf",
                        dummy_iban=dummy,
                    )
                )
            else:
                # An uploaded XML: its text is the product's printing of it (extraction.einvoice).
                xml = INVOICES / folder / record["file"]
                cases.append(
                    Case(
                        record["file"],
                        f"{folder}/xml rendered",
                        _reader(xml, "application/xml"),
                        truth,
                        lines,
                        path=xml,
                        content_type="application/xml",
                        dummy_iban=dummy,
                    )
                )
    compare = INVOICES / "invoice2data" / "compare"
    for expected_file in sorted(compare.glob("*.json")):
        expected = json.loads(expected_file.read_text())[0]
        truth, lines = _invoice2data_truth(expected)
        for suffix, content_type, source in (
            (".pdf", "application/pdf", "invoice2data/pdf"),
            (".txt", "text/plain", "invoice2data/txt"),
            (".png", "image/png", "invoice2data/png (OCR)"),
        ):
            path = expected_file.with_suffix(suffix)
            if path.exists() and (ocr or suffix != ".png"):
                cases.append(
                    Case(
                        path.name,
                        source,
                        _reader(path, content_type),
                        truth,
                        lines,
                        path=path,
                        content_type=content_type,
                    )
                )
    for name, expected in json.loads((WRITTEN / "expected.json").read_text())["records"].items():
        path = WRITTEN / name
        cases.append(
            Case(
                name,
                "written/txt",
                _reader(path, "text/plain"),
                dict(expected),
                None,
                path=path,
                content_type="text/plain",
            )
        )
    return cases


# --- comparing values ----------------------------------------------------------------------------


def _kind(path: str) -> str:
    leaf = path.rsplit(".", 1)[-1]
    if path.startswith("totals.") or leaf in ("quantity", "unit_price", "net_amount", "tax_rate"):
        return "amount"
    if leaf in ("iban", "vat_id"):
        return "identifier"
    if leaf in ("name", "description", "invoice_number"):
        return "text"
    return "exact"


def _decimal(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value).strip())
    except InvalidOperation:
        return None


def _normalized(path: str, value: Any) -> Any:
    if value is None:
        return None
    kind = _kind(path)
    if kind == "amount":
        number = _decimal(value)
        # An absent tax or prepaid total and a printed 0.00 say the same thing.
        if number == 0 and path in ("totals.tax", "totals.prepaid"):
            return None
        return number.normalize() if number is not None else str(value)
    if kind == "identifier":
        return normalize_vat_id(str(value))
    if kind == "text":
        return comparable_name(str(value))
    return str(value).strip()


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, expected: Any, predicted: Any) -> None:
        correct = predicted is not None and expected is not None and predicted == expected
        if predicted is not None:
            self.tp += correct
            self.fp += not correct
        if expected is not None and not correct:
            self.fn += 1

    def merge(self, other: Score) -> None:
        self.tp, self.fp, self.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def as_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": self.precision, "recall": self.recall}


def score_case(case: Case, output: dict[str, Any]) -> dict[str, Score]:
    scores: dict[str, Score] = defaultdict(Score)
    predicted = {path: value for path, value in _flat(output)}
    for path, expected in case.truth.items():
        scores[path].add(_normalized(path, expected), _normalized(path, predicted.get(path)))
    if case.truth_lines is not None:
        lines = output.get("lines", [])
        for index in range(max(len(lines), len(case.truth_lines))):
            known_line = index < len(case.truth_lines)
            truth_line = case.truth_lines[index] if known_line else {}
            line = lines[index] if index < len(lines) else {}
            for name in LINE_FIELDS:
                if known_line and name not in truth_line:
                    continue  # the truth does not know this field of a line it knows
                got = (line.get(name) or {}).get("value")
                scores[f"lines.{name}"].add(_normalized(name, truth_line.get(name)), _normalized(name, got))
    return scores


def _flat(output: dict[str, Any]) -> list[tuple[str, Any]]:
    flat = [("document_type", output["document_type"]["value"])]
    flat += [(f"supplier.{k}", v["value"]) for k, v in output["supplier"].items()]
    flat += [(k, output[k]["value"]) for k in ("invoice_number", "issue_date", "due_date", "currency")]
    flat += [(f"totals.{k}", v["value"]) for k, v in output["totals"].items()]
    return flat


# --- master data the harness's tenant keeps ------------------------------------------------------------


@dataclass
class Directory:
    """In-memory supplier master data, looked up the way validation.tenant_policy does."""

    by_vat_id: dict[str, SupplierRecord] = field(default_factory=dict)
    by_name: dict[str, SupplierRecord] = field(default_factory=dict)

    @classmethod
    def knowing(cls, name: str | None, vat_id: str | None, iban: str | None) -> Directory:
        directory = cls()
        if name or vat_id:
            record = SupplierRecord(
                name=name or "", vat_id=normalize_vat_id(vat_id or ""), iban=normalize_iban(iban) if iban else ""
            )
            if vat_id:
                directory.by_vat_id[record.vat_id] = record
            if name:
                directory.by_name[comparable_name(name)] = record
        return directory

    def master_for(self, output: dict[str, Any]) -> MasterData:
        if not self.by_vat_id and not self.by_name:
            return MasterData(has_records=False, supplier=None)
        vat_id, name = output["supplier"]["vat_id"]["value"], output["supplier"]["name"]["value"]
        if vat_id:
            record = self.by_vat_id.get(normalize_vat_id(vat_id))
            return MasterData(has_records=True, supplier=record, matched_by="vat_id" if record else "")
        record = self.by_name.get(comparable_name(name)) if name else None
        return MasterData(has_records=True, supplier=record, matched_by="name" if record else "")


def validate(
    output: dict[str, Any],
    document: DocumentText,
    directory: Directory,
    allowed: list[str] | None = None,
    *,
    source: ReadingSource | Sources = ReadingSource.RULES,
    derived: dict[str, Derivation] | None = None,
    amount_due_terms: AmountDueTerms = NO_TERMS,
) -> ValidationOutcome:
    invoice = parse_invoice(json.dumps(output), schema=output.get("schema", "invoice.v1"))
    return check_invoice(
        invoice=invoice,
        document=document,
        allowed_currencies=allowed or ALLOWED_CURRENCIES,
        overrides={},
        master=directory.master_for(output),
        sources=(source,) if isinstance(source, ReadingSource) else source,
        derived=derived,
        amount_due_terms=amount_due_terms,
    )


# --- calibration: how often a field with a status is right ------------------------------------------


_LINE_PATH = re.compile(r"lines\[(\d+)\]\.(\w+)")


def _truth_at(case: Case, path: str) -> tuple[bool, Any, str]:
    """(whether the truth knows the field, its value, the per-field table's name for it)."""
    if path in case.truth:
        return True, case.truth[path], path
    line = _LINE_PATH.fullmatch(path)
    if line and line[2] in LINE_FIELDS and case.truth_lines is not None:
        index = int(line[1])
        if index >= len(case.truth_lines):
            return True, None, f"lines.{line[2]}"  # a line the truth does not have: extra
        truth_line = case.truth_lines[index]
        return line[2] in truth_line, truth_line.get(line[2]), f"lines.{line[2]}"
    return False, None, path


def field_calibration(case: Case, output: dict[str, Any], fields: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each listed field of one answer with its status and, where the truth knows the field,
    whether the value is right (compared as the per-field table compares)."""
    values = dict(_flat_all(output))
    rows = []
    for path, trust in fields.items():
        known, expected, name = _truth_at(case, path)
        leaf = name.rsplit(".", 1)[-1] if name.startswith("lines.") else path
        right = _normalized(leaf, values.get(path)) == _normalized(leaf, expected) if known else None
        rows.append({"path": path, "field": name, "status": trust["status"], "right": right})
    return rows


def _flat_all(output: dict[str, Any]) -> list[tuple[str, Any]]:
    invoice = parse_invoice(json.dumps(output), schema=output.get("schema", "invoice.v1"))
    return [(path, value.value) for path, value in invoice.fields()]


def _boxes_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The share of evidence that carries boxes, by the kind of page it is on."""
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        for kind, counts in (row.get("evidence_boxes") or {}).items():
            totals[kind].update(counts)
    return {
        kind: {**counts, "share": counts["boxed"] / counts["evidence"] if counts["evidence"] else None}
        for kind, counts in sorted(totals.items())
    }


def _calibration_summary(rows: list[dict[str, Any]], cases: list[Case]) -> dict[str, Any]:
    """Per status and per field: how many values had it and how many of those the truth knows
    were right; the share of fields and documents trusted; what posting only verified values gives."""
    answered = [row for row in rows if row.get("trust") is not None]
    by_status: dict[str, Counter[str]] = defaultdict(Counter)
    by_field: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for row in answered:
        for entry in row["trust"]:
            for counter in (by_status[entry["status"]], by_field[entry["field"]][entry["status"]]):
                counter["fields"] += 1
                if entry["right"] is not None:
                    counter["known"] += 1
                    counter["right"] += entry["right"]

    def figures(counter: Counter[str]) -> dict[str, Any]:
        known = counter["known"]
        return {
            "fields": counter["fields"],
            "known": known,
            "right": counter["right"],
            "precision": counter["right"] / known if known else None,
        }

    listed = sum(len(row["trust"]) for row in answered)
    trusted = sum(entry["status"] in TRUSTED for row in answered for entry in row["trust"])
    verified_known = [
        entry for row in answered for entry in row["trust"] if entry["status"] in TRUSTED and entry["right"] is not None
    ]
    # The values a client would have to type if it posted only trusted ones: every value the
    # truth holds (not null) that was not posted right.
    truth_values = sum(
        sum(value is not None for value in case.truth.values())
        + sum(value is not None for line in case.truth_lines or [] for value in line.values())
        for case in cases
    )
    return {
        "by_status": {status.value: figures(by_status[status.value]) for status in FieldStatus},
        "by_field": {
            name: {status: figures(counter) for status, counter in statuses.items()}
            for name, statuses in sorted(by_field.items(), key=lambda item: _field_order(item[0]))
        },
        "fields_listed": listed,
        "fields_trusted": trusted,
        "documents": len(answered),
        "documents_fully_trusted": sum(
            all(entry["status"] in TRUSTED for entry in row["trust"]) for row in answered if row["trust"]
        ),
        "posting_trusted_only": {
            "posted_known": len(verified_known),
            "posted_right": sum(entry["right"] for entry in verified_known),
            "posted_wrong": sum(not entry["right"] for entry in verified_known),
            "truth_values": truth_values,
        },
    }


# --- part 1: extraction accuracy -------------------------------------------------------------------


@dataclass
class Answer:
    """One extractor's answer to one document: the ``invoice.v1`` JSON, or why there is none."""

    output: dict[str, Any] | None
    error: dict[str, str] | None = None  # {"kind", "message"} when output is None
    seconds: float | None = None  # the model call's wall time
    input_tokens: int | None = None
    output_tokens: int | None = None
    relocated: int = 0  # evidence spans relocate_evidence moved to where their quote is printed
    provider: str = ""  # "einvoice" when the structured path answered
    # rules_and_model: the two readings made one (never written to an answers log)
    together: ReadTogether | None = None
    # The totals filled in by rule, as the worker fills them (extraction.validation.derivation)
    derived: dict[str, Derivation] | None = None
    # What an e-invoice's XML adds to its amount due (extraction.validation.policy)
    amount_due_terms: AmountDueTerms = NO_TERMS


Extractor = Callable[[int, Case, DocumentText], Answer]


def builtin_extractor(index: int, case: Case, document: DocumentText) -> Answer:
    return Answer(extract_invoice(document.for_providers()))


def structured_first(index: int, case: Case, document: DocumentText) -> Answer:
    """The product's default path (a tenant's einvoice_intake structured_first) for an
    invoice.v2 job: a document that is or embeds an e-invoice is read from its XML, any other
    goes to the built-in extractor."""
    if document.einvoice_page is not None and case.path is not None:
        xml = einvoice_xml_of(case.path.read_bytes(), case.content_type)
        answer = answer_from_einvoice(xml, document, schema="invoice.v2") if xml is not None else None
        if answer is not None:
            return Answer(answer.output, provider="einvoice", amount_due_terms=answer.amount_due_terms)
    return Answer(upgraded_to_v2(extract_invoice(document.for_providers())))


# Nothing extracted: how a failed document is scored (every field in its truth missed).
_NOTHING: dict[str, Any] = {
    "document_type": {"value": None},
    "supplier": {name: {"value": None} for name in Supplier.model_fields},
    "invoice_number": {"value": None},
    "issue_date": {"value": None},
    "due_date": {"value": None},
    "currency": {"value": None},
    "lines": [],
    "totals": {name: {"value": None} for name in Totals.model_fields},
}


class ModelExtractor:
    """The worker's path for one document: the provider's call, ``parse_invoice_v1``, then
    ``relocate_evidence``. A provider error or an answer that is not ``invoice.v1`` is that
    document's failure, never the run's."""

    def __init__(
        self,
        provider: Any,
        model: str,
        *,
        max_output_tokens: int = 3000,
        timeout_seconds: float = 600,
        answers_log: Path | None = None,
    ):
        self.provider = provider
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.timeout_seconds = timeout_seconds
        # A run of an hour must survive an interruption: every answer is appended to the log as it
        # arrives, and a run with the same log takes the answers it holds instead of calling again.
        self.answers_log = answers_log
        self._logged = _read_answers(answers_log, model) if answers_log else {}
        self._log_lock = threading.Lock()

    def __call__(self, index: int, case: Case, document: DocumentText) -> Answer:
        key = f"{case.source}/{case.name}"
        if key in self._logged:
            return self._logged[key]
        answer = self._call(index, document)
        if (answer.error or {}).get("kind") != "bench_error":  # a bug of ours is not the model's answer
            self._append(key, answer)
            self._logged[key] = answer  # asked again (rules_and_model): the same answer, no second call
        return answer

    def _append(self, key: str, answer: Answer) -> None:
        if self.answers_log is None:
            return
        record = {"model": self.model, "case": key, **dataclasses.asdict(answer)}
        with self._log_lock, self.answers_log.open("a", encoding="utf-8") as log:
            log.write(json.dumps(record, ensure_ascii=False) + "\n")

    def _call(self, index: int, stored: DocumentText) -> Answer:
        document = stored.for_providers()  # what the worker sends: a PDF's visible pages only
        request = ProviderRequest(
            job_id=f"bench-accuracy-{index:04d}",
            attempt=1,
            document=document,
            schema="invoice.v1",
            model=self.model,
            max_output_tokens=self.max_output_tokens,
            timeout_seconds=self.timeout_seconds,
        )
        started = time.monotonic()
        try:
            response = self.provider.extract(request)
        except ProviderError as error:
            return Answer(None, _failure(error.kind.value, str(error)), seconds=time.monotonic() - started)
        except Exception as error:  # noqa: BLE001 — a bug or an SDK surprise: the document fails, not the run
            traceback.print_exc(file=sys.stderr)
            return Answer(None, _failure("bench_error", f"{type(error).__name__}: {error}"), time.monotonic() - started)
        answer = Answer(
            None,
            seconds=time.monotonic() - started,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
        )
        try:
            invoice = parse_invoice_v1(response.output_text)
        except InvoiceOutputError as error:
            answer.error = _failure("invalid_output", f"{type(error).__name__}: {error}")
            return answer
        invoice, relocations = relocate_evidence(invoice, document)
        answer.output, answer.relocated = invoice.to_json_dict(), len(relocations)
        return answer


class TogetherExtractor:
    """``rules_and_model`` as the worker runs it: the rules read first, and a reading the policy
    accepts alone (judged with the case's master data) is the answer, with no model asked;
    otherwise the model's answer (from ``model``, asked once) and the rules' reading make one
    answer (extraction.validation.readings), each reading judged on its own."""

    def __init__(self, model: ModelExtractor) -> None:
        self.model = model

    def __call__(self, index: int, case: Case, document: DocumentText) -> Answer:
        read = document.for_providers()
        rules, _ = relocate_evidence(parse_invoice_v1(json.dumps(extract_invoice(read))), read)
        directory = _directory(case)
        judged, derived = derive_missing(rules)  # as the worker judges the rules' reading alone
        if rules_settle(validate(judged.to_json_dict(), document, directory, derived=derived)):
            return Answer(rules.to_json_dict(), provider=BUILTIN_PROVIDER)
        answer = self.model(index, case, document)
        if answer.output is None:
            # The model failed for good: the worker judges the rules' reading alone (review).
            return dataclasses.replace(answer, output=rules.to_json_dict(), error=None, provider=BUILTIN_PROVIDER)

        def judge(invoice: Any, sources: Sources) -> ValidationOutcome:
            judged, derived = derive_missing(invoice)  # as the worker judges it
            return validate(judged.to_json_dict(), document, directory, source=sources, derived=derived)

        together = read_together(rules, parse_invoice_v1(json.dumps(answer.output)), judge)
        return dataclasses.replace(answer, output=together.invoice.to_json_dict(), together=together)


def _read_answers(path: Path, model: str) -> dict[str, Answer]:
    if not path.exists():
        return {}
    answers: dict[str, Answer] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.pop("model") == model:
            case = record.pop("case")
            answers[case] = Answer(**record)
    return answers


def _failure(kind: str, message: str) -> dict[str, str]:
    return {"kind": kind, "message": message[:500]}


def run_extraction(
    cases: list[Case],
    extractor: Extractor = builtin_extractor,
    *,
    documents: list[DocumentText] | None = None,
    progress: str | None = None,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Score and validate ``extractor``'s answers. ``documents``, if given, are the cases' texts
    already read; ``progress`` names the extractor on a stderr line per document; ``concurrency``
    calls at once (a local server's slots)."""
    texts = documents if documents is not None else [case.load() for case in cases]
    answers = [
        _derived(answer) for answer in _answer_all(cases, texts, extractor, concurrency=concurrency, progress=progress)
    ]
    per_field: dict[str, Score] = defaultdict(Score)
    per_source: dict[str, Score] = defaultdict(Score)
    rows = []
    for index, case in enumerate(cases):
        answer = answers[index]
        scores = score_case(case, answer.output if answer.output is not None else _NOTHING)
        for name, score in scores.items():
            per_field[name].merge(score)
            per_source[case.source].merge(score)
        rows.append(_case_row(case, texts[index], answer, scores))
        if progress:
            took = f"{answer.seconds:.1f} s" if answer.seconds is not None else "–"
            print(
                f"[{progress} {index + 1}/{len(cases)}] {case.source} {case.name}: {took}, {_verdict(rows[-1])}",
                file=sys.stderr,
                flush=True,
            )
    return _summary(rows, per_field, per_source, cases)


def _case_row(case: Case, document: DocumentText, answer: Answer, scores: dict[str, Score]) -> dict[str, Any]:
    """One document's line of the report: who answered, what validation said, which fields were wrong."""
    output = answer.output if answer.output is not None else _NOTHING
    row: dict[str, Any] = {
        "case": case.name,
        "source": case.source,
        "provider": answer.provider or "",
        "dummy_iban": case.dummy_iban,
    }
    if answer.provider == "einvoice":
        # What a model call for this document would have read (CAP-4's estimate), saved.
        row["tokens_saved"] = estimate_prompt_tokens(document.for_providers().full_text, TOKEN_ESTIMATE_MODEL)
    if answer.output is None:
        row.update(review_required=False, failed=answer.error, reasons=[])
    else:
        directory = _directory(case)
        if answer.together is not None:
            outcome = judged_together(
                validate(output, document, directory, source=answer.together.sources, derived=answer.derived),
                answer.together,
            )
        else:
            outcome = validate(
                output,
                document,
                directory,
                source=_reading_source(answer),
                derived=answer.derived,
                amount_due_terms=answer.amount_due_terms,
            )
        row.update(review_required=outcome.review_required, failed=None, reasons=outcome.reasons)
        row["trust"] = field_calibration(case, output, outcome.fields)
        row["evidence_boxes"] = _boxed_evidence(output, document)
    row["wrong_fields"] = sorted(n for n, s in scores.items() if s.fp or s.fn)
    row["values"] = _values(output, scores)
    if answer.seconds is not None:
        row.update(
            seconds=round(answer.seconds, 3),
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            evidence_relocated=answer.relocated,
        )
    return row


def _boxed_evidence(output: dict[str, Any], document: DocumentText) -> dict[str, dict[str, int]]:
    """Per kind of page (its text's source; the printed e-invoice XML apart): how many evidences
    the answer has there and how many of them got boxes, as a stored result would."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"evidence": 0, "boxed": 0})
    boxed = with_boxes(output, document)
    for _path, value in parse_invoice(json.dumps(boxed), schema=boxed.get("schema", "invoice.v1")).fields():
        evidence = value.evidence
        if evidence is None:
            continue
        kind = SOURCE_EINVOICE if evidence.page == document.einvoice_page else document.source
        counts[kind]["evidence"] += 1
        counts[kind]["boxed"] += bool(evidence.boxes)
    return dict(counts)


def _derived(answer: Answer) -> Answer:
    """The answer as the worker judges and stores it: with what its totals state filled in."""
    if answer.output is None:
        return answer
    schema = answer.output.get("schema", "invoice.v1")
    invoice, derived = derive_missing(parse_invoice(json.dumps(answer.output), schema=schema))
    if not derived:
        return answer
    return dataclasses.replace(answer, output=invoice.to_json_dict(), derived=derived)


def _directory(case: Case) -> Directory:
    """The harness tenant's master data for a case: it knows the invoice's real supplier."""
    return Directory.knowing(
        case.truth.get("supplier.name"), case.truth.get("supplier.vat_id"), case.truth.get("supplier.iban")
    )


def _reading_source(answer: Answer) -> ReadingSource:
    """Who gave the answer: the e-invoice's XML, a model (only its calls are timed; an answers
    log written before readings were recorded still says so), or the rules."""
    if answer.provider == "einvoice":
        return ReadingSource.EINVOICE
    if answer.provider == BUILTIN_PROVIDER:
        return ReadingSource.RULES
    return ReadingSource.MODEL if answer.seconds is not None else ReadingSource.RULES


def _verdict(row: dict[str, Any]) -> str:
    if row["failed"]:
        return f"FAILED {row['failed']['kind']}: {row['failed']['message'][:120]}"
    return f"REVIEW_REQUIRED {','.join(row['reasons'])}" if row["review_required"] else "SUCCEEDED"


def _summary(
    rows: list[dict[str, Any]], per_field: dict[str, Score], per_source: dict[str, Score], cases: list[Case]
) -> dict[str, Any]:
    """The report's figures over every document's row."""
    source_cases = Counter(r["source"] for r in rows)
    source_review = Counter(r["source"] for r in rows if r["review_required"])
    source_failed = Counter(r["source"] for r in rows if r["failed"])
    reasons: Counter[str] = Counter(reason for r in rows if not r["failed"] for reason in r["reasons"])
    failure_kinds = Counter(r["failed"]["kind"] for r in rows if r["failed"])
    reviewed, failed = sum(source_review.values()), sum(source_failed.values())
    right = [r for r in rows if not r["wrong_fields"]]
    # A deliberately dummy IBAN must go to review (iban_invalid): not a false review.
    right_real = [r for r in right if not r["dummy_iban"]]
    false_reasons: Counter[str] = Counter(reason for r in right_real if r["review_required"] for reason in r["reasons"])
    structured = [r for r in rows if r["provider"] == "einvoice"]
    return {
        "per_field": {name: per_field[name].as_dict() for name in sorted(per_field, key=_field_order)},
        "per_source": {
            source: {
                **per_source[source].as_dict(),
                "cases": source_cases[source],
                "review_required": source_review[source],
                "failed": source_failed[source],
            }
            for source in sorted(source_cases)
        },
        "review_required": reviewed,
        "cases": len(rows),
        "review_reasons": dict(reasons.most_common()),
        # A failed document (no answer, or not invoice.v1) never reaches validation: it is not
        # counted in review_required, but in failed and in review_required_or_failed.
        "failed": failed,
        "failure_kinds": dict(failure_kinds.most_common()),
        "review_required_or_failed": reviewed + failed,
        # Outputs right on every field the truth knows, and how many of them validation still
        # sent to review (the extractor's false reviews); wrong outputs it let through.
        "right_everywhere": len(right),
        "false_reviews": sum(r["review_required"] for r in right),
        "false_review_rate": sum(r["review_required"] for r in right) / len(right) if right else None,
        "right_everywhere_without_dummy_iban": len(right_real),
        "false_reviews_without_dummy_iban": sum(r["review_required"] for r in right_real),
        "false_review_rate_without_dummy_iban": (
            sum(r["review_required"] for r in right_real) / len(right_real) if right_real else None
        ),
        "false_review_reasons_without_dummy_iban": dict(false_reasons.most_common()),
        "false_review_cases_without_dummy_iban": [
            {"case": f"{r['source']}/{r['case']}", "reasons": r["reasons"]} for r in right_real if r["review_required"]
        ],
        "dummy_iban_cases": sum(r["dummy_iban"] for r in rows),
        "dummy_iban_sent_to_review": sum(r["dummy_iban"] and "iban_invalid" in r["reasons"] for r in rows),
        "einvoice": {
            "cases": len(structured),
            "right_everywhere": sum(not r["wrong_fields"] for r in structured),
            "not_exact": [
                {"case": f"{r['source']}/{r['case']}", "wrong_fields": r["wrong_fields"]}
                for r in structured
                if r["wrong_fields"]
            ],
            "model_calls_saved": len(structured),
            "prompt_tokens_saved": sum(r["tokens_saved"] for r in structured),
            "token_estimate_model": TOKEN_ESTIMATE_MODEL,
        },
        "accepted_with_wrong_field": sum(
            bool(r["wrong_fields"]) and not r["review_required"] and not r["failed"] for r in rows
        ),
        "model_calls": _call_stats(rows),
        "calibration": _calibration_summary(rows, cases),
        "evidence_boxes": _boxes_summary(rows),
        "cases_detail": rows,
    }


def _answer_all(
    cases: list[Case], texts: list[DocumentText], extractor: Extractor, *, concurrency: int, progress: str | None
) -> list[Answer]:
    if concurrency <= 1:
        return [extractor(index, case, texts[index]) for index, case in enumerate(cases)]
    answers: dict[int, Answer] = {}
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(extractor, index, case, texts[index]): index for index, case in enumerate(cases)}
        for future in as_completed(futures):
            index = futures[future]
            answers[index] = future.result()
            if progress:
                took = answers[index].seconds or 0.0
                print(
                    f"[{progress} answered {len(answers)}/{len(cases)}] {cases[index].name}: {took:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
    return [answers[index] for index in range(len(cases))]


def _values(output: dict[str, Any], scores: dict[str, Score]) -> dict[str, Any]:
    """What the extractor answered for each scored field (a line field: one value per line)."""
    flat = dict(_flat(output))
    values: dict[str, Any] = {}
    for name in scores:
        if name.startswith("lines."):
            leaf = name.removeprefix("lines.")
            values[name] = [(line.get(leaf) or {}).get("value") for line in output.get("lines", [])]
        else:
            values[name] = flat.get(name)
    return values


def _call_stats(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    timed = [r["seconds"] for r in rows if r.get("seconds") is not None]
    if not timed:
        return None
    tokens_in = [r["input_tokens"] for r in rows if r.get("input_tokens") is not None]
    tokens_out = [r["output_tokens"] for r in rows if r.get("output_tokens") is not None]
    ordered = sorted(timed)
    return {
        "calls": len(timed),
        "mean_ms": round(1000 * sum(timed) / len(timed)),
        "p95_ms": round(1000 * ordered[math.ceil(0.95 * len(ordered)) - 1]),  # nearest rank
        "max_ms": round(1000 * ordered[-1]),
        "with_token_counts": len(tokens_in),
        "mean_input_tokens": sum(tokens_in) / len(tokens_in) if tokens_in else None,
        "mean_output_tokens": sum(tokens_out) / len(tokens_out) if tokens_out else None,
        "evidence_relocated": sum(r.get("evidence_relocated") or 0 for r in rows),
    }


# --- the sample ---------------------------------------------------------------------------------------

# Kinds of source, in the order the sample's round-robin visits them: a model should meet a
# rendered XML invoice, a real PDF and a scan before it meets a second of any kind.
SOURCE_KINDS = ("xml rendered", "pdf", "png (OCR)", "txt")


def source_order(sources: set[str]) -> list[str]:
    """Sources in the sample's fixed order: the first of every kind, then the second of every
    kind, …; within a kind by folder (XML_FOLDERS' order)."""

    def folder_rank(source: str) -> int:
        folder = source.split("/", 1)[0]
        return XML_FOLDERS.index(folder) if folder in XML_FOLDERS else len(XML_FOLDERS)

    def kind_rank(source: str) -> int:
        kind = source.split("/", 1)[-1]
        return SOURCE_KINDS.index(kind) if kind in SOURCE_KINDS else len(SOURCE_KINDS)

    by_kind: dict[int, list[str]] = defaultdict(list)
    for source in sorted(sources, key=lambda s: (kind_rank(s), folder_rank(s), s)):
        by_kind[kind_rank(source)].append(source)
    ordered: list[str] = []
    for depth in range(max(len(group) for group in by_kind.values())):
        ordered += [group[depth] for _, group in sorted(by_kind.items()) if depth < len(group)]
    return ordered


def stratified_sample(cases: list[Case], size: int) -> list[Case]:
    """``size`` cases, deterministically: round-robin over the sources in ``source_order``, each
    source's cases taken in name order; every source is represented once ``size`` reaches the
    number of sources."""
    queues = {
        source: sorted((c for c in cases if c.source == source), key=lambda c: c.name)
        for source in {c.source for c in cases}
    }
    order = source_order(set(queues))
    sample: list[Case] = []
    while len(sample) < min(size, len(cases)):
        for source in order:
            if queues[source] and len(sample) < size:
                sample.append(queues[source].pop(0))
    return sample


# --- built-in extractor and model, side by side ----------------------------------------------------------


def compare(cases: list[Case], builtin: dict[str, Any], model: dict[str, Any], examples: int = 5) -> dict[str, Any]:
    """Per field, the documents where one of the two was right and the other wrong, among the
    documents the model answered. A field is right on a document when every value of it the
    truth knows matched and nothing extra was extracted (a line field: on every line)."""
    fields: dict[str, dict[str, Any]] = {}
    for case, ours, theirs in zip(cases, builtin["cases_detail"], model["cases_detail"], strict=True):
        if theirs["failed"]:
            continue  # no answer to compare: in the model's failures and its recall instead
        for name in sorted(set(ours["values"]) | set(theirs["values"]), key=_field_order):
            rules_right = name not in ours["wrong_fields"]
            model_right = name not in theirs["wrong_fields"]
            entry = fields.setdefault(
                name,
                {"model_right_rules_wrong": 0, "rules_right_model_wrong": 0, "both_wrong": 0, "examples": {}},
            )
            if rules_right == model_right:
                entry["both_wrong"] += not rules_right
                continue
            which = "model_right_rules_wrong" if model_right else "rules_right_model_wrong"
            entry[which] += 1
            shown = entry["examples"].setdefault(which, [])
            if len(shown) < examples:
                shown.append(
                    {
                        "case": case.name,
                        "source": case.source,
                        "truth": _truth_of(case, name),
                        "builtin": ours["values"].get(name),
                        "model": f"(failed: {theirs['failed']['kind']})"
                        if theirs["failed"]
                        else theirs["values"].get(name),
                    }
                )
    return fields


def _truth_of(case: Case, name: str) -> Any:
    if name.startswith("lines."):
        leaf = name.removeprefix("lines.")
        return [line.get(leaf) for line in case.truth_lines or []]
    return case.truth.get(name)


def _field_order(name: str) -> int:
    order = [*HEADER_FIELDS, *(f"lines.{n}" for n in LINE_FIELDS)]
    return order.index(name) if name in order else len(order)


# --- part 2: corruption test -------------------------------------------------------------------------

_OTHER_VAT_IDS = ("DE136695976", "FR11999999998", "NL810433941B01", "BE0123456749")


def _with(output: dict[str, Any], path: str, value: Any = ..., evidence: Any = ...) -> dict[str, Any]:
    changed = json.loads(json.dumps(output))
    node = changed
    *parents, leaf = path.split(".")
    for part in parents:
        node = node[part]
    if value is not ...:
        node[leaf]["value"] = value
    if evidence is not ...:
        node[leaf]["evidence"] = evidence
    return changed


def _plus(value: str, delta: str) -> str:
    return str(Decimal(value) + Decimal(delta))


@dataclass(frozen=True)
class Corruption:
    name: str
    intended_check: str
    apply: Callable[[dict[str, Any], DocumentText, random.Random], dict[str, Any] | None]
    allowed: Callable[[dict[str, Any]], list[str]] | None = None  # the tenant's currencies, if not default


def _wrong_gross(output, document, rng):
    gross = output["totals"]["gross"]["value"]
    return _with(output, "totals.gross", _plus(gross, "10.00")) if gross is not None else None


def _wrong_amount_due(output, document, rng):
    due = output["totals"]["amount_due"]["value"]
    return _with(output, "totals.amount_due", _plus(due, "100.00")) if due is not None else None


def _invented_iban(output, document, rng):
    return hallucinate(output, document, rng)


def _currency_as_is(output, document, rng):
    return output if output["currency"]["value"] else None


def _span_not_in_text(output, document, rng):
    evidence = output["totals"]["gross"]["evidence"]
    if evidence is None:
        return None
    moved = {**evidence, "start": evidence["start"] + 1, "end": evidence["end"] + 1}
    return _with(output, "totals.gross", evidence=moved)


def _quote_not_in_document(output, document, rng):
    evidence = output["totals"]["net"]["evidence"]
    if evidence is None:
        return None
    return _with(output, "totals.net", evidence={**evidence, "quote": f"Net total {evidence['quote']}"})


def _wrong_vat_id(output, document, rng):
    current = normalize_vat_id(output["supplier"]["vat_id"]["value"] or "")
    other = next(v for v in rng.sample(_OTHER_VAT_IDS, len(_OTHER_VAT_IDS)) if v != current)
    return _with(output, "supplier.vat_id", other)


CORRUPTIONS = (
    Corruption("wrong gross total (+10.00)", "totals_sum", _wrong_gross),
    Corruption("wrong amount due (+100.00)", "amount_due", _wrong_amount_due),
    Corruption("invented IBAN (valid mod-97, evidence elsewhere)", "evidence_values", _invented_iban),
    Corruption(
        "currency the tenant does not allow",
        "currency_allowed",
        _currency_as_is,
        allowed=lambda output: [c for c in ALLOWED_CURRENCIES if c != output["currency"]["value"]],
    ),
    Corruption("evidence span shifted (quote not at its offsets)", "evidence_spans", _span_not_in_text),
    Corruption("quote that is not in the document", "evidence_spans", _quote_not_in_document),
    Corruption("wrong supplier VAT id", "supplier_master_data", _wrong_vat_id),
)


def run_corruption() -> dict[str, Any]:
    rng = random.Random(20261102)
    clean_cases = 0
    false_reviews: list[dict[str, Any]] = []
    false_reasons: Counter[str] = Counter()
    results = {
        c.name: {
            "intended_check": c.intended_check,
            "applied": 0,
            "caught": 0,
            "caught_by_intended": 0,
            "applied_to_passing": 0,
            "caught_of_passing": 0,
            "missed": [],
        }
        for c in CORRUPTIONS
    }
    dummy_iban_cases = dummy_iban_reviewed = 0
    for folder in XML_FOLDERS:
        for record in json.loads((INVOICES / folder / "expected_fields.json").read_text())["records"]:
            xml = (INVOICES / folder / record["file"]).read_bytes()
            rendered = render_invoice_xml(xml)
            # As an uploaded e-invoice is stored and answered: its printing, and invoice.v2.
            document = DocumentText(pages=(rendered.text,), source=SOURCE_EINVOICE, einvoice_page=1)
            truth = rendered.truth_v2
            read = answer_from_einvoice(xml, document, schema="invoice.v2")
            terms = read.amount_due_terms if read is not None else NO_TERMS
            directory = Directory.knowing(
                truth["supplier"]["name"]["value"],
                truth["supplier"]["vat_id"]["value"],
                truth["supplier"]["iban"]["value"],
            )
            clean = validate(truth, document, directory, amount_due_terms=terms)
            if _has_dummy_iban(record):
                # Its IBAN fails mod-97 on purpose: review is right (counted apart, not "clean").
                dummy_iban_cases += 1
                dummy_iban_reviewed += "iban_invalid" in clean.reasons
            else:
                clean_cases += 1
                if clean.review_required:
                    false_reviews.append({"case": f"{folder}/{record['file']}", "reasons": clean.reasons})
                    false_reasons.update(clean.reasons)
            for corruption in CORRUPTIONS:
                corrupted = corruption.apply(truth, document, rng)
                if corrupted is None:
                    continue
                allowed = corruption.allowed(truth) if corruption.allowed else None
                outcome = validate(corrupted, document, directory, allowed, amount_due_terms=terms)
                result = results[corruption.name]
                result["applied"] += 1
                result["caught"] += outcome.review_required
                if not clean.review_required:
                    # The honest denominator: outputs the policy accepts until they are corrupted.
                    result["applied_to_passing"] += 1
                    result["caught_of_passing"] += outcome.review_required
                by_intended = any(
                    c["check"] == corruption.intended_check and c["status"] == FAILED and c["severity"] == BLOCKING
                    for c in outcome.checks
                )
                result["caught_by_intended"] += by_intended
                if not outcome.review_required or not by_intended:
                    result["missed"].append(f"{folder}/{record['file']}")
    return {
        "schema": "invoice.v2",
        "clean_cases": clean_cases,
        "dummy_iban_cases": dummy_iban_cases,
        "dummy_iban_sent_to_review": dummy_iban_reviewed,
        "false_reviews": len(false_reviews),
        "false_review_rate": len(false_reviews) / clean_cases if clean_cases else None,
        "false_review_reasons": dict(false_reasons.most_common()),
        "false_review_cases": false_reviews,
        "corruptions": results,
    }


# --- report ----------------------------------------------------------------------------------------

# A stated example price (USD per million input / output tokens), to put a $0 local run beside a
# paid endpoint's order of magnitude.
EXAMPLE_PRICES = (0.15, 0.60)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _share(count: int, total: int) -> str:
    return f"{count} ({_pct(count / total if total else None)})"


def markdown(
    extraction: dict[str, Any], corruption: dict[str, Any], note: str = "", structured: dict[str, Any] | None = None
) -> str:
    out = [f"# Accuracy — built-in extractor, validation policy {POLICY_VERSION}", ""]
    if note:
        out += [note, ""]
    if structured is not None:
        out += _structured_tables(structured)
        out += ["# The built-in extractor alone (every document to the rules, as before e-invoice intake)", ""]
    out += _extraction_tables(extraction)
    out += _corruption_tables(corruption)
    return "\n".join(out) + "\n"


def _structured_tables(run: dict[str, Any]) -> list[str]:
    """The product's default path: e-invoices read from their XML, the rules for the rest."""
    einvoice, total = run["einvoice"], run["cases"]
    out = [
        "## The product's path: e-invoices read exactly, the rules otherwise (invoice.v2)",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| documents | {total} |",
        f"| taken as e-invoices (no model call) | {_share(einvoice['cases'], total)} |",
        f"| of them exact on every field the truth knows | {_share(einvoice['right_everywhere'], einvoice['cases'])} |",
        f"| model calls saved | {einvoice['model_calls_saved']} |",
        f"| prompt tokens saved ({einvoice['token_estimate_model']} tokenizer) | {einvoice['prompt_tokens_saved']:,} |",
        f"| REVIEW_REQUIRED | {_share(run['review_required'], total)} |",
        f"| documents with a deliberately dummy IBAN (review is right) | {run['dummy_iban_cases']}, "
        f"{run['dummy_iban_sent_to_review']} sent to review by iban_invalid |",
        f"| right on every field, without a dummy IBAN | {run['right_everywhere_without_dummy_iban']} |",
        f"| of them sent to review (false-review rate) | {run['false_reviews_without_dummy_iban']} "
        f"({_pct(run['false_review_rate_without_dummy_iban'])}) |",
        f"| accepted with a wrong field | {run['accepted_with_wrong_field']} |",
        "",
    ]
    if run["false_review_cases_without_dummy_iban"]:
        out += ["False reviews (right answers sent to review), case by case:", "", "| case | reasons |", "|---|---|"]
        out += [
            f"| {row['case']} | {', '.join(row['reasons'])} |" for row in run["false_review_cases_without_dummy_iban"]
        ]
        out.append("")
    reviewed = [row for row in run["cases_detail"] if row["review_required"]]
    if reviewed:
        out += [
            "Every REVIEW_REQUIRED case and why:",
            "",
            "| case | answered by | reasons | why |",
            "|---|---|---|---|",
        ]
        for row in reviewed:
            if row["dummy_iban"]:
                why = "the test data's IBAN is a deliberate dummy (fails mod-97): review is right"
            elif row["wrong_fields"]:
                why = "wrong or missed: " + ", ".join(row["wrong_fields"])
            else:
                why = "right on every field the truth knows: a false review"
            out.append(
                f"| {row['source']}/{row['case']} | {row['provider'] or 'rules'} | {', '.join(row['reasons'])} | {why} |"
            )
        out.append("")
    if einvoice["not_exact"]:
        out += ["E-invoices not exact on every field (what the truth index and the reader disagree on):", ""]
        out += [f"- {row['case']}: {', '.join(row['wrong_fields'])}" for row in einvoice["not_exact"]]
        out.append("")
    out += _extraction_tables(run, scope=" — the product's path")
    return out


def _extraction_tables(extraction: dict[str, Any], scope: str = "") -> list[str]:
    out = [
        f"## Field-level precision / recall (all sources){scope}",
        "",
        "| field | in truth | extracted correctly | wrong or extra | missed | precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in extraction["per_field"].items():
        out.append(
            f"| {name} | {s['tp'] + s['fn']} | {s['tp']} | {s['fp']} | {s['fn']} "
            f"| {_pct(s['precision'])} | {_pct(s['recall'])} |"
        )
    out += [
        "",
        f"## Per source (all fields){scope}",
        "",
        "| source | cases | precision | recall | REVIEW_REQUIRED |",
        "|---|---:|---:|---:|---:|",
    ]
    for source, s in extraction["per_source"].items():
        out.append(
            f"| {source} | {s['cases']} | {_pct(s['precision'])} | {_pct(s['recall'])} "
            f"| {s['review_required']} ({_pct(s['review_required'] / s['cases'])}) |"
        )
    total = extraction["cases"]
    out.append(
        f"| **all** | {total} | | | {extraction['review_required']} ({_pct(extraction['review_required'] / total)}) |"
    )
    out += [
        "",
        f"Why the answers land in REVIEW_REQUIRED{scope} (cases per reason):",
        "",
        "| reason | cases |",
        "|---|---:|",
    ]
    out += [f"| {reason} | {count} |" for reason, count in extraction["review_reasons"].items()]
    out.append("")
    out += _calibration_tables(extraction["calibration"], scope)
    out += [
        f"## Evidence placed on its page (boxes){scope}",
        "",
        "| page text from | evidence | with boxes | share |",
        "|---|---:|---:|---:|",
        *(
            f"| {kind} | {s['evidence']} | {s['boxed']} | {_pct(s['share'])} |"
            for kind, s in extraction["evidence_boxes"].items()
        ),
        "",
    ]
    return out


def _calibration_tables(calibration: dict[str, Any], scope: str = "") -> list[str]:
    """How often a value with each status is right, and what posting only trusted values gives."""
    out = [
        f"## Each field's status against the truth{scope}",
        "",
        "| status | values | the truth knows | right | precision |",
        "|---|---:|---:|---:|---:|",
    ]
    for status, s in calibration["by_status"].items():
        out.append(f"| {status} | {s['fields']} | {s['known']} | {s['right']} | {_pct(s['precision'])} |")
    posting = calibration["posting_trusted_only"]
    out += [
        "",
        f"Values verified or derived: {_share(calibration['fields_trusted'], calibration['fields_listed'])}; documents "
        f"whose every listed value is: {_share(calibration['documents_fully_trusted'], calibration['documents'])}. "
        f"A client posting only verified or derived values posts {posting['posted_known']} values the truth knows, "
        f"{posting['posted_wrong']} of them wrong, and enters the rest of the "
        f"{posting['truth_values']} values the truth holds by hand.",
        "",
        "| field | verified: right / known | unverified: right / known | conflicting: right / known |",
        "|---|---:|---:|---:|",
    ]
    for name, statuses in calibration["by_field"].items():
        if not any(s["known"] for s in statuses.values()):
            continue  # the truth does not know this field anywhere
        cells = []
        for status in ("verified", "unverified", "conflicting"):
            s = statuses.get(status)
            cells.append(f"{s['right']} / {s['known']}" if s and s["known"] else "–")
        out.append(f"| {name} | {' | '.join(cells)} |")
    out.append("")
    return out


def _corruption_tables(corruption: dict[str, Any]) -> list[str]:
    out = [
        "## Corruption test (ground truth of every XML invoice, rendered, then corrupted)",
        "",
        "| corruption | applied | caught (REVIEW_REQUIRED) | catch rate | caught by the intended check "
        "| catch rate on outputs that pass clean |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for name, r in corruption["corruptions"].items():
        rate = _pct(r["caught"] / r["applied"] if r["applied"] else None)
        passing = r["applied_to_passing"]
        out.append(
            f"| {name} | {r['applied']} | {r['caught']} | {rate} "
            f"| {r['caught_by_intended']} / {r['applied']} ({r['intended_check']}) "
            f"| {r['caught_of_passing']} / {passing} ({_pct(r['caught_of_passing'] / passing if passing else None)}) |"
        )
    out += [
        "",
        (
            f"False-review rate on the clean outputs ({corruption.get('schema', 'invoice.v1')}): "
            f"{corruption['false_reviews']} of {corruption['clean_cases']} "
            f"({_pct(corruption['false_review_rate'])}). Counted apart: {corruption.get('dummy_iban_cases', 0)} "
            f"invoices whose IBAN is a deliberate dummy (fails mod-97), "
            f"{corruption.get('dummy_iban_sent_to_review', 0)} of them sent to review by iban_invalid, as they must be. "
            "Reasons (cases):"
        ),
        "",
        "| reason | cases |",
        "|---|---:|",
    ]
    out += [f"| {reason} | {count} |" for reason, count in corruption["false_review_reasons"].items()]
    return out


def cost_per_thousand(stats: dict[str, Any] | None, price_in: float, price_out: float) -> float | None:
    """USD per 1,000 documents at the mean tokens per document; None without token counts."""
    if not stats or stats["mean_input_tokens"] is None or stats["mean_output_tokens"] is None:
        return None
    return 1000 * (stats["mean_input_tokens"] * price_in + stats["mean_output_tokens"] * price_out) / 1_000_000


def _cell(value: Any, width: int = 60) -> str:
    if value is None:
        text = "(none)"
    elif isinstance(value, list):
        text = "; ".join("(none)" if v is None else str(v) for v in value) or "(no lines)"
    else:
        text = str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def markdown_side_by_side(run: dict[str, Any]) -> str:
    builtin, model, setup = run["builtin"], run["model"], run["provider"]
    label = f"{setup['model']} ({setup['provider']})"
    documents = run["documents"]
    total = model["cases"]
    out = [f"# Accuracy — built-in extractor vs {label}, validation policy {POLICY_VERSION}", ""]
    if documents["sample"]:
        chosen = (
            f"the stratified sample of {total} of the {documents['of']} documents (`--sample {documents['sample']}`: "
            f"round-robin over the sources in the order {', '.join(documents['source_order'])}; "
            f"{len(model['per_source'])} of {len(documents['source_order'])} sources represented)"
        )
    else:
        chosen = f"all {total} documents"
    out += [
        f"Both extractors answer the same documents: {chosen}. Model: `{setup['model']}` at {setup['base_url']} "
        f"(structured output `{setup['structured_output']}`, answer format `{setup['answer_format']}`, "
        f"max {setup['max_output_tokens']} output tokens), its answer parsed as invoice.v1, its evidence relocated "
        "and validated as the built-in extractor's is. A document the model failed on (a provider error, or an "
        "answer that is not invoice.v1) has every field of its truth scored as missed, and counts in "
        "'REVIEW_REQUIRED or failed', not in REVIEW_REQUIRED.",
        "",
        "## Field-level precision / recall, side by side",
        "",
        "| field | in truth | built-in precision | built-in recall | model precision | model recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(set(builtin["per_field"]) | set(model["per_field"]), key=_field_order):
        ours, theirs = builtin["per_field"].get(name), model["per_field"].get(name)
        present = (ours or theirs)["tp"] + (ours or theirs)["fn"]
        out.append(
            f"| {name} | {present} | {_pct(ours and ours['precision'])} | {_pct(ours and ours['recall'])} "
            f"| {_pct(theirs and theirs['precision'])} | {_pct(theirs and theirs['recall'])} |"
        )
    out += [
        "",
        "## Per source (all fields), side by side",
        "",
        "| source | cases | built-in precision | built-in recall | built-in REVIEW_REQUIRED "
        "| model precision | model recall | model REVIEW_REQUIRED or failed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for source, ours in builtin["per_source"].items():
        theirs = model["per_source"][source]
        out.append(
            f"| {source} | {ours['cases']} | {_pct(ours['precision'])} | {_pct(ours['recall'])} "
            f"| {_share(ours['review_required'], ours['cases'])} | {_pct(theirs['precision'])} "
            f"| {_pct(theirs['recall'])} | {_share(theirs['review_required'] + theirs['failed'], theirs['cases'])} |"
        )
    out += [
        "",
        "## Review share and false reviews",
        "",
        "| | built-in extractor | model |",
        "|---|---:|---:|",
        f"| documents | {builtin['cases']} | {total} |",
        f"| REVIEW_REQUIRED | {_share(builtin['review_required'], builtin['cases'])} "
        f"| {_share(model['review_required'], total)} |",
        f"| failed (no answer, or not invoice.v1) | {_share(builtin['failed'], builtin['cases'])} "
        f"| {_share(model['failed'], total)} |",
        f"| REVIEW_REQUIRED or failed (not accepted) | {_share(builtin['review_required_or_failed'], builtin['cases'])} "
        f"| {_share(model['review_required_or_failed'], total)} |",
        f"| right on every field the truth knows | {builtin['right_everywhere']} | {model['right_everywhere']} |",
        f"| false-review rate: REVIEW_REQUIRED among those | {builtin['false_reviews']} "
        f"({_pct(builtin['false_review_rate'])}) | {model['false_reviews']} ({_pct(model['false_review_rate'])}) |",
        f"| accepted (SUCCEEDED) with a wrong or missed field | {builtin['accepted_with_wrong_field']} "
        f"| {model['accepted_with_wrong_field']} |",
        "",
        "Why the answers land in REVIEW_REQUIRED (cases per reason):",
        "",
        "| reason | built-in extractor | model |",
        "|---|---:|---:|",
    ]
    reasons = Counter(builtin["review_reasons"]) + Counter(model["review_reasons"])
    out += [
        f"| {reason} | {builtin['review_reasons'].get(reason, 0)} | {model['review_reasons'].get(reason, 0)} |"
        for reason, _ in reasons.most_common()
    ]
    failures = [r for r in model["cases_detail"] if r["failed"]]
    if failures:
        out += ["", "The model's failures:", "", "| document | source | kind | message |", "|---|---|---|---|"]
        out += [
            f"| {r['case']} | {r['source']} | {r['failed']['kind']} | {_cell(r['failed']['message'], 160)} |"
            for r in failures
        ]
    out += ["", *_model_cost_lines(run), ""]
    if run.get("together"):
        out += _together_lines(builtin, model, run["together"])
    out += _disagreement_lines(run["disagreements"], model["failed"])
    if run.get("builtin_whole_corpus"):
        whole = run["builtin_whole_corpus"]
        out += [
            "",
            f"# The built-in extractor on the whole corpus ({whole['cases']} documents, as without --provider)",
            "",
        ]
        out += _extraction_tables(whole, " — built-in extractor, whole corpus")
    else:
        out.append("")
    out += _corruption_tables(run["corruption"])
    return "\n".join(out) + "\n"


def _together_lines(builtin: dict[str, Any], model: dict[str, Any], together: dict[str, Any]) -> list[str]:
    """``rules_and_model`` beside each reading alone, on the same documents: precision per field
    (the target: at least the rules', above the model's), the review share, and calibration."""
    total = together["cases"]
    out = [
        "## Rules and model read together (`reading: rules_and_model`)",
        "",
        "The rules read first; a document their reading settles alone (the policy accepts it) is "
        "answered by the rules and the model is not asked. Any other document is read by the model "
        "too (its answers above) and the two readings make one answer "
        "(extraction/validation/readings.py): a value both read alike is kept; the model's reading "
        "changes the rules' values (a gap filled, a disagreement its verified value wins, a block of "
        "lines) only when the answer it makes then passes the policy; otherwise the rules' values "
        "stand and the document goes to review with the model's values listed beside them.",
        "",
        "| field | in truth | rules precision | model precision | together precision | together recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(set(builtin["per_field"]) | set(together["per_field"]), key=_field_order):
        ours, theirs, both = (run["per_field"].get(name) for run in (builtin, model, together))
        present = (both or ours or theirs)["tp"] + (both or ours or theirs)["fn"]
        out.append(
            f"| {name} | {present} | {_pct(ours and ours['precision'])} | {_pct(theirs and theirs['precision'])} "
            f"| {_pct(both and both['precision'])} | {_pct(both and both['recall'])} |"
        )
    out += [
        "",
        "| | rules | model | together |",
        "|---|---:|---:|---:|",
        f"| REVIEW_REQUIRED or failed | {_share(builtin['review_required_or_failed'], builtin['cases'])} "
        f"| {_share(model['review_required_or_failed'], model['cases'])} "
        f"| {_share(together['review_required_or_failed'], total)} |",
        f"| false-review rate | {_pct(builtin['false_review_rate'])} | {_pct(model['false_review_rate'])} "
        f"| {_pct(together['false_review_rate'])} |",
        f"| accepted with a wrong or missed field | {builtin['accepted_with_wrong_field']} "
        f"| {model['accepted_with_wrong_field']} | {together['accepted_with_wrong_field']} |",
        f"| documents the model was asked about | 0 | {_asked(model)} | {_asked(together)} |",
        f"| model latency per document (mean) | 0 s | {_per_document(model, 'seconds')} "
        f"| {_per_document(together, 'seconds')} |",
        f"| model tokens per document (mean, in + out) | 0 | {_per_document(model, 'tokens')} "
        f"| {_per_document(together, 'tokens')} |",
        "",
        "Why read together the answers land in REVIEW_REQUIRED (cases per reason):",
        "",
        "| reason | cases |",
        "|---|---:|",
        *(f"| {reason} | {count} |" for reason, count in together["review_reasons"].items()),
        "",
    ]
    out += _calibration_tables(together["calibration"], " — rules and model read together")
    out += _calibration_tables(model["calibration"], " — the model alone")
    return out


def _asked(run: dict[str, Any]) -> str:
    calls = (run["model_calls"] or {}).get("calls", 0)
    return f"{calls} of {run['cases']}"


def _per_document(run: dict[str, Any], what: str) -> str:
    """A run's model cost spread over all its documents (one the model was not asked about
    costs nothing), so runs that ask the model about different shares compare."""
    stats = run["model_calls"]
    if not stats:
        return "0"
    if what == "seconds":
        return f"{stats['calls'] * stats['mean_ms'] / 1000 / run['cases']:,.0f} s"
    if stats["mean_input_tokens"] is None or stats["mean_output_tokens"] is None:
        return "–"
    share = stats["calls"] / run["cases"]
    return f"{share * stats['mean_input_tokens']:,.0f} + {share * stats['mean_output_tokens']:,.0f}"


def _model_cost_lines(run: dict[str, Any]) -> list[str]:
    stats, prices = run["model"]["model_calls"], run["prices"]
    out = ["## The model's latency, tokens and cost", ""]
    if not stats:
        return [*out, "No model call was made."]

    def tokens(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f}"

    out += [
        "| calls | mean latency | p95 latency | max latency | mean tokens in | mean tokens out | evidence relocated |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {stats['calls']} | {stats['mean_ms']:,} ms | {stats['p95_ms']:,} ms | {stats['max_ms']:,} ms "
        f"| {tokens(stats['mean_input_tokens'])} | {tokens(stats['mean_output_tokens'])} "
        f"| {stats['evidence_relocated']} |",
        "",
        "Latency is each call's wall time (failed calls included), with as many calls at once as "
        "`--concurrency` allows (the local server's slots share its two cores); p95 is nearest-rank.",
        "",
    ]
    cost, example = prices["cost_per_1000_documents_usd"], prices["example_cost_per_1000_documents_usd"]
    if cost is None:
        return [*out, "No token counts were reported, so no cost per document."]
    tokens_from = f"from the mean tokens of the {stats['with_token_counts']} calls that reported them"
    if prices["input_per_million"] or prices["output_per_million"]:
        out.append(
            f"Cost per 1,000 documents: ${cost:,.2f} at ${prices['input_per_million']} / "
            f"${prices['output_per_million']} per million input / output tokens ({tokens_from})."
        )
    else:
        at = "at $0 (local)" if run["provider"]["provider"] == "local" else "at $0 (no --price-… given)"
        out.append(
            f"Cost per 1,000 documents: ${cost:,.2f} {at}; at an example price of ${EXAMPLE_PRICES[0]:.2f} / "
            f"${EXAMPLE_PRICES[1]:.2f} per million input / output tokens the same tokens would cost ${example:,.2f} "
            f"({tokens_from}; counted by this model's tokenizer, another model's differs)."
        )
    return out


def _disagreement_lines(disagreements: dict[str, Any], failed: int) -> list[str]:
    left_out = f" The {failed} documents the model failed on are left out." if failed else ""
    out = [
        "## Where they disagree",
        "",
        "Documents per field where one extractor was right (every value the truth knows, nothing extra) and the "
        f"other was not.{left_out}",
        "",
        "| field | model right, rules wrong | rules right, model wrong | both wrong |",
        "|---|---:|---:|---:|",
    ]
    if not disagreements:
        return [*out[:-2], "No document to compare: the model answered none."]
    for name, d in disagreements.items():
        out.append(f"| {name} | {d['model_right_rules_wrong']} | {d['rules_right_model_wrong']} | {d['both_wrong']} |")
    examples = [
        (name, which, example)
        for name, d in disagreements.items()
        for which in ("model_right_rules_wrong", "rules_right_model_wrong")
        for example in d["examples"].get(which, [])
    ]
    if examples:
        out += [
            "",
            "Examples (up to 5 per field and direction):",
            "",
            "| field | right | document | truth | built-in extractor | model |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {name} | {'model' if which == 'model_right_rules_wrong' else 'rules'} "
            f"| {_cell(e['case'], 50)} ({e['source']}) | {_cell(e['truth'])} | {_cell(e['builtin'])} "
            f"| {_cell(e['model'])} |"
            for name, which, e in examples
        ]
    return out


# --- the model's provider ------------------------------------------------------------------------------


def local_setup() -> dict[str, Any]:
    local = settings.LOCAL_MODEL
    return {
        "provider": "local",
        "base_url": f"http://{local['host']}:{local['port']}/v1",
        "health_url": f"http://{local['host']}:{local['port']}/health",
        "model": local["weights"],
        "api_key_env": "LOCAL_MODEL_API_KEY",
        "structured_output": "json_schema",
        "answer_format": "quotes",
        "token_limit_parameter": "max_tokens",
        "sampling": {"temperature": 0, "repeat_penalty": 1.0},
    }


def local_server_answers(url: str, timeout: float = 2.0) -> str | None:
    """None if ``GET url`` answers 200 within ``timeout``, else what went wrong."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return None if response.status == 200 else f"HTTP {response.status}"
    except urllib.error.HTTPError as error:
        return f"HTTP {error.code}"  # llama-server answers 503 while it loads the weights
    except (OSError, ValueError) as error:
        return f"{type(error).__name__}: {getattr(error, 'reason', error)}"


def build_provider(setup: dict[str, Any]) -> Any:
    from extraction.providers.openai_compat import OpenAIProvider

    return OpenAIProvider(
        base_url=setup["base_url"],
        api_key=os.environ.get(setup["api_key_env"], "") or "not-needed",
        token_limit_parameter=setup["token_limit_parameter"],
        structured_output=setup["structured_output"],
        answer_format=setup["answer_format"],
        sampling=setup["sampling"],
    )


# --- the run: parse → set up → run → report ---------------------------------------------------------


def parse_args() -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The options, checked; ``--concurrency`` filled in from the provider when not given."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-ocr", action="store_true", help="skip the PNG (OCR) cases")
    parser.add_argument("--json", type=Path, help="the JSON's path (default: bench/results/accuracy-<UTC time>.json)")
    parser.add_argument(
        "--provider",
        choices=("builtin", "local", "openai"),
        default="builtin",
        help="who answers beside the built-in extractor: nobody (builtin, the default), the local model server "
        "(settings.LOCAL_MODEL), or an OpenAI-compatible endpoint (--base-url, --model)",
    )
    parser.add_argument(
        "--sample",
        "--limit",
        dest="sample",
        type=int,
        metavar="N",
        help="a deterministic sample of N documents, round-robin over the sources (default: all)",
    )
    parser.add_argument("--base-url", help="openai: the endpoint's base URL, e.g. https://api.openai.com/v1")
    parser.add_argument("--model", help="openai: the model name")
    parser.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="openai: the variable holding the API key (OPENAI_API_KEY)"
    )
    parser.add_argument("--structured-output", choices=DIALECTS, default="openai_strict", help="openai: the dialect")
    parser.add_argument("--answer-format", choices=ANSWER_FORMATS, default="invoice.v1", help="openai: the format")
    parser.add_argument(
        "--answers-log",
        type=Path,
        help="append each model answer to this JSON-lines file, and take the answers it already holds "
        "for the same model instead of calling again (resume an interrupted run; delete it after a prompt change)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="model calls at once (default: the local server's slots, else 1)",
    )
    parser.add_argument("--price-input-per-million", type=float, default=0.0, metavar="USD")
    parser.add_argument("--price-output-per-million", type=float, default=0.0, metavar="USD")
    args = parser.parse_args()
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be at least 1")
    if args.concurrency is None:
        args.concurrency = int(settings.LOCAL_MODEL["slots"]) if args.provider == "local" else 1
    return parser, args


def provider_setup(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any] | None:
    """The model's set-up (None: the built-in extractor alone); a wrong option ends the run here."""
    if args.provider == "local":
        return local_setup()
    if args.provider == "openai":
        if not args.base_url or not args.model:
            parser.error("--provider openai needs --base-url and --model")
        if not os.environ.get(args.api_key_env):
            print(f"accuracy.py: {args.api_key_env} is not set; calling without an API key", file=sys.stderr)
        return {
            "provider": "openai",
            "base_url": args.base_url,
            "model": args.model,
            "api_key_env": args.api_key_env,
            "structured_output": args.structured_output,
            "answer_format": args.answer_format,
            "token_limit_parameter": "max_completion_tokens",
            "sampling": None,
        }
    return None


def local_server_ready(setup: dict[str, Any]) -> bool:
    """Whether the local model server answers its health check; if not, says how to start it."""
    problem = local_server_answers(setup["health_url"])
    if problem:
        print(
            f"accuracy.py: the local model server does not answer GET {setup['health_url']} within 2 s "
            f"({problem}).\nStart it with `.venv/bin/python manage.py local_model serve` (once installed by "
            "`bin/setup --with-local-model`), or choose another --provider.",
            file=sys.stderr,
        )
        return False
    return True


def choose_documents(args: argparse.Namespace) -> tuple[list[Case], list[Case], dict[str, Any]]:
    """Every case, the ones to answer (all, or the stratified sample) and the sample's description."""
    cases = collect_cases(ocr=not args.no_ocr)
    chosen = stratified_sample(cases, args.sample) if args.sample else cases
    documents_info = {
        "sample": args.sample,
        "of": len(cases),
        "source_order": source_order({case.source for case in cases}),
        "cases": [{"case": case.name, "source": case.source} for case in chosen],
    }
    return cases, chosen, documents_info


def evaluate_builtin(
    args: argparse.Namespace, cases: list[Case], chosen: list[Case], documents_info: dict[str, Any], started: float
) -> tuple[dict[str, Any], Callable[[], None]]:
    """The product's path and the built-in extractor alone, and the corruption test: the result
    and what prints its report."""
    texts = [case.load() for case in chosen]
    structured = run_extraction(chosen, structured_first, documents=texts)
    extraction = run_extraction(chosen, documents=texts)
    corruption = run_corruption()
    result = {
        "policy_version": POLICY_VERSION,
        "structured_first": structured,
        "extraction": extraction,
        "corruption": corruption,
        "seconds": round(time.monotonic() - started, 1),
    }
    note = ""
    if args.sample:
        result["documents"] = documents_info
        note = f"On the stratified sample of {len(chosen)} of the {len(cases)} documents (`--sample {args.sample}`)."
    return result, lambda: print(markdown(extraction, corruption, note, structured))


def answer_with_model(
    provider: Any,
    setup: dict[str, Any],
    args: argparse.Namespace,
    chosen: list[Case],
    texts: list[DocumentText],
    *,
    max_output_tokens: int,
    timeout_seconds: float,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's answers to ``chosen``, scored and validated, and the same answers read
    together with the rules (``rules_and_model``); the provider is closed after."""
    extractor = ModelExtractor(
        provider,
        setup["model"],
        max_output_tokens=max_output_tokens,
        timeout_seconds=timeout_seconds,
        answers_log=args.answers_log,
    )
    try:
        model = run_extraction(
            chosen, extractor, documents=texts, progress=setup["provider"], concurrency=args.concurrency
        )
        together = run_extraction(chosen, TogetherExtractor(extractor), documents=texts)
    finally:
        provider.close()
    return model, together


def evaluate_beside_model(
    args: argparse.Namespace,
    setup: dict[str, Any],
    cases: list[Case],
    chosen: list[Case],
    documents_info: dict[str, Any],
    started: float,
) -> tuple[dict[str, Any], Callable[[], None]]:
    """The model and the built-in extractor on the same documents, the built-in extractor on the
    whole corpus when a sample was taken, and the corruption test: the result and what prints
    its report."""
    provider = build_provider(setup)
    model_max_tokens, model_timeout = 3000, 600
    print(
        f"accuracy.py: {setup['model']} ({setup['provider']}) on {len(chosen)} documents, "
        f"{args.concurrency} at a time (a local model on two cores takes about a minute per document)",
        file=sys.stderr,
        flush=True,
    )
    texts = [case.load() for case in chosen]
    builtin = run_extraction(chosen, documents=texts)
    model, together = answer_with_model(
        provider, setup, args, chosen, texts, max_output_tokens=model_max_tokens, timeout_seconds=model_timeout
    )
    whole = run_extraction(cases) if len(chosen) < len(cases) else None
    corruption = run_corruption()
    stats = model["model_calls"]
    result = {
        "policy_version": POLICY_VERSION,
        "provider": {
            **{k: v for k, v in setup.items() if k != "health_url"},
            "max_output_tokens": model_max_tokens,
            "timeout_seconds": model_timeout,
        },
        "prices": {
            "input_per_million": args.price_input_per_million,
            "output_per_million": args.price_output_per_million,
            "cost_per_1000_documents_usd": cost_per_thousand(
                stats, args.price_input_per_million, args.price_output_per_million
            ),
            "example_prices_per_million": list(EXAMPLE_PRICES),
            "example_cost_per_1000_documents_usd": cost_per_thousand(stats, *EXAMPLE_PRICES),
        },
        "documents": documents_info,
        "builtin": builtin,
        "model": model,
        "together": together,
        "disagreements": compare(chosen, builtin, model),
        "builtin_whole_corpus": whole,
        "corruption": corruption,
        "seconds": round(time.monotonic() - started, 1),
    }
    return result, lambda: print(markdown_side_by_side(result))


def main() -> int:
    parser, args = parse_args()
    setup = provider_setup(parser, args)
    if setup is not None and setup["provider"] == "local" and not local_server_ready(setup):
        return 2
    started = time.monotonic()
    cases, chosen, documents_info = choose_documents(args)
    if setup is None:
        result, report = evaluate_builtin(args, cases, chosen, documents_info, started)
    else:
        result, report = evaluate_beside_model(args, setup, cases, chosen, documents_info, started)
    harness.publish_results("accuracy", report, result, json_path=args.json)
    missed = sum(r["applied"] - r["caught"] for r in result["corruption"]["corruptions"].values())
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
