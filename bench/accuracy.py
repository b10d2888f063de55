"""Accuracy harness: the built-in extractor and the validation policy on real invoices.

    .venv/bin/python bench/accuracy.py [--no-ocr] [--json PATH]

1. Extraction accuracy: the built-in extractor's answer for every invoice in
   ``testdata/invoices`` with ground truth, scored field by field (precision, recall) per field
   and per source, and the share that validation would send to REVIEW_REQUIRED, and why.
2. Corruption test: the ground truth of every XML invoice, rendered, validated clean and then
   corrupted the ways a model goes wrong; every corruption must be caught.

No database is needed: the policy runs as a pure function (``check_invoice``). Exit status 1 if
a corruption was missed. Method and how to read the report: bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402

harness.setup_django()

from django.conf import settings  # noqa: E402

from bench.render_invoice_xml import CREDIT_NOTE_CODES, render_invoice_xml  # noqa: E402
from extraction.intake.text import DocumentText, extract_document_text  # noqa: E402
from extraction.providers.builtin import extract_invoice  # noqa: E402
from extraction.validation.policy import (  # noqa: E402
    BLOCKING,
    FAILED,
    POLICY_VERSION,
    MasterData,
    SupplierRecord,
    ValidationOutcome,
    check_invoice,
)
from extraction.validation.schema import parse_invoice_v1  # noqa: E402
from extraction.validation.suppliers import comparable_name, normalize_iban, normalize_vat_id  # noqa: E402
from tests.simulator import hallucinate  # noqa: E402

INVOICES = ROOT / "testdata" / "invoices"
XML_FOLDERS = ("zugferd-corpus", "factur-x-python", "xrechnung-testsuite", "en16931-examples", "invoice2data")
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
            lines.append(
                {
                    "description": item.get("name", item.get("desc")),
                    "quantity": item.get("qty"),
                    "unit_price": item.get("price_unit", item.get("price")),
                    "net_amount": item.get("price_subtotal"),
                    "tax_rate": item.get("line_tax_percent", item.get("taxpercent")),
                }
            )
    return truth, lines


def _reader(path: Path, content_type: str) -> Callable[[], DocumentText]:
    return lambda: extract_document_text(path.read_bytes(), content_type)


def collect_cases(*, ocr: bool) -> list[Case]:
    cases: list[Case] = []
    for folder in XML_FOLDERS:
        index = json.loads((INVOICES / folder / "expected_fields.json").read_text())["records"]
        for record in index:
            truth, lines = _xml_truth(record)
            if record["rendered_pdf"]:
                if folder == "invoice2data":
                    continue  # its PDFs are scored against invoice2data's own JSON below
                pdf = INVOICES / folder / record["rendered_pdf"]
                cases.append(
                    Case(record["rendered_pdf"], f"{folder}/pdf", _reader(pdf, "application/pdf"), truth, lines)
                )
            else:
                xml = INVOICES / folder / record["file"]
                cases.append(
                    Case(
                        record["file"],
                        f"{folder}/xml rendered",
                        lambda xml=xml: DocumentText(pages=(render_invoice_xml(xml.read_bytes()).text,)),
                        truth,
                        lines,
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
                cases.append(Case(path.name, source, _reader(path, content_type), truth, lines))
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
            truth_line = case.truth_lines[index] if index < len(case.truth_lines) else {}
            line = lines[index] if index < len(lines) else {}
            for name in LINE_FIELDS:
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
    output: dict[str, Any], document: DocumentText, directory: Directory, allowed: list[str] | None = None
) -> ValidationOutcome:
    invoice = parse_invoice_v1(json.dumps(output))
    return check_invoice(
        invoice=invoice,
        document=document,
        allowed_currencies=allowed or ALLOWED_CURRENCIES,
        overrides={},
        master=directory.master_for(output),
    )


# --- part 1: extraction accuracy -------------------------------------------------------------------


def run_extraction(cases: list[Case]) -> dict[str, Any]:
    per_field: dict[str, Score] = defaultdict(Score)
    per_source: dict[str, Score] = defaultdict(Score)
    source_cases: Counter[str] = Counter()
    source_review: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    rows = []
    for case in cases:
        document = case.load()
        output = extract_invoice(document)
        scores = score_case(case, output)
        directory = Directory.knowing(
            case.truth.get("supplier.name"), case.truth.get("supplier.vat_id"), case.truth.get("supplier.iban")
        )
        outcome = validate(output, document, directory)
        for name, score in scores.items():
            per_field[name].merge(score)
            per_source[case.source].merge(score)
        source_cases[case.source] += 1
        source_review[case.source] += outcome.review_required
        reasons.update(outcome.reasons)
        rows.append(
            {
                "case": case.name,
                "source": case.source,
                "review_required": outcome.review_required,
                "reasons": outcome.reasons,
                "wrong_fields": sorted(n for n, s in scores.items() if s.fp or s.fn),
            }
        )
    return {
        "per_field": {name: per_field[name].as_dict() for name in sorted(per_field, key=_field_order)},
        "per_source": {
            source: {
                **per_source[source].as_dict(),
                "cases": source_cases[source],
                "review_required": source_review[source],
            }
            for source in sorted(source_cases)
        },
        "review_required": sum(source_review.values()),
        "cases": len(cases),
        "review_reasons": dict(reasons.most_common()),
        "cases_detail": rows,
    }


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
    for folder in XML_FOLDERS:
        for record in json.loads((INVOICES / folder / "expected_fields.json").read_text())["records"]:
            rendered = render_invoice_xml((INVOICES / folder / record["file"]).read_bytes())
            document = DocumentText(pages=(rendered.text,))
            truth = rendered.truth
            directory = Directory.knowing(
                truth["supplier"]["name"]["value"],
                truth["supplier"]["vat_id"]["value"],
                truth["supplier"]["iban"]["value"],
            )
            clean = validate(truth, document, directory)
            clean_cases += 1
            if clean.review_required:
                false_reviews.append({"case": f"{folder}/{record['file']}", "reasons": clean.reasons})
                false_reasons.update(clean.reasons)
            for corruption in CORRUPTIONS:
                corrupted = corruption.apply(truth, document, rng)
                if corrupted is None:
                    continue
                allowed = corruption.allowed(truth) if corruption.allowed else None
                outcome = validate(corrupted, document, directory, allowed)
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
        "clean_cases": clean_cases,
        "false_reviews": len(false_reviews),
        "false_review_rate": len(false_reviews) / clean_cases if clean_cases else None,
        "false_review_reasons": dict(false_reasons.most_common()),
        "false_review_cases": false_reviews,
        "corruptions": results,
    }


# --- report ----------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def markdown(extraction: dict[str, Any], corruption: dict[str, Any]) -> str:
    out = [f"# Accuracy — built-in extractor, validation policy {POLICY_VERSION}", ""]
    out += [
        "## Field-level precision / recall (all sources)",
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
        "## Per source (all fields)",
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
        "Why the built-in extractor's answers land in REVIEW_REQUIRED (cases per reason):",
        "",
        "| reason | cases |",
        "|---|---:|",
    ]
    out += [f"| {reason} | {count} |" for reason, count in extraction["review_reasons"].items()]
    out += [
        "",
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
            f"False-review rate on the clean outputs: {corruption['false_reviews']} of {corruption['clean_cases']} "
            f"({_pct(corruption['false_review_rate'])}). Reasons (cases):"
        ),
        "",
        "| reason | cases |",
        "|---|---:|",
    ]
    out += [f"| {reason} | {count} |" for reason, count in corruption["false_review_reasons"].items()]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-ocr", action="store_true", help="skip the PNG (OCR) cases")
    parser.add_argument("--json", type=Path, help="the JSON's path (default: bench/results/accuracy-<UTC time>.json)")
    args = parser.parse_args()
    started = time.monotonic()
    extraction = run_extraction(collect_cases(ocr=not args.no_ocr))
    corruption = run_corruption()
    result = {
        "policy_version": POLICY_VERSION,
        "extraction": extraction,
        "corruption": corruption,
        "seconds": round(time.monotonic() - started, 1),
    }
    harness.publish_results("accuracy", lambda: print(markdown(extraction, corruption)), result, json_path=args.json)
    missed = sum(r["applied"] - r["caught"] for r in corruption["corruptions"].values())
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
