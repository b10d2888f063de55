"""The answer a small model gives well: each field's text exactly as the document prints it.

A model on two CPU cores writes about a dozen tokens a second, and the ``invoice.v1`` answer
spends most of its tokens on evidence offsets (which small models miscount; the worker re-finds
quotes anyway) and on normalized values (which they get wrong: "05.03.2018" left as printed,
"19%" as a tax rate). In the ``quotes`` answer format the model copies each field's text as
printed, a third of the tokens, and :func:`invoice_from_quotes` builds the ``invoice.v1`` answer:
the evidence is where the quote is printed, the value is read from the quote with the
document's own conventions (decimal comma or point, day or month first), the readings the
built-in extractor and the validator use. Nothing is taken on trust: a quote printed nowhere
keeps an empty span, which the validator reports (VAL-2), and an unreadable quote stays the
value, which the field-type check reports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from extraction.intake.text import DocumentText
from extraction.providers.builtin.header import document_type_of_title, find_document_type
from extraction.providers.builtin.layout import invoice_field, prepare
from extraction.providers.builtin.readings import (
    decimal_text,
    read_amounts,
    read_dates,
    uses_decimal_comma,
    writes_month_first,
)
from extraction.validation.evidence import find_quote
from extraction.validation.locale import CURRENCY_CODES, CURRENCY_SIGNS, currency_of_sign, read_number
from extraction.validation.schema import DOCUMENT_TYPES, SCHEMA_ID

ANSWER_FORMATS = ("invoice.v1", "quotes")
QUOTES_SCHEMA_NAME = "invoice_quotes_v1"

# Answer key → (invoice.v1 path, how its value is read from the quote). Order is the answer's.
HEADER_FIELDS: dict[str, tuple[str, str]] = {
    "supplier_name": ("supplier.name", "text"),
    "supplier_vat_id": ("supplier.vat_id", "identifier"),
    "supplier_iban": ("supplier.iban", "identifier"),
    "invoice_number": ("invoice_number", "text"),
    "issue_date": ("issue_date", "date"),
    "due_date": ("due_date", "date"),
    "currency": ("currency", "currency"),
}
LINE_FIELDS: dict[str, str] = {
    "description": "text",
    "quantity": "amount",
    "unit_price": "amount",
    "net_amount": "amount",
    "tax_rate": "rate",
    "tax_amount": "amount",
}
TOTAL_FIELDS: dict[str, str] = {
    "net": "amount",
    "tax": "amount",
    "gross": "amount",
    "prepaid": "amount",
    "amount_due": "amount",
}

_PRINTED_NUMBER = re.compile(r"[-−–]?\s?\d[\d.,'\u00a0\u202f ]*")
_CODE = re.compile(r"(?<![A-Za-z])([A-Z]{3})(?![A-Za-z])")


class QuotedAnswerError(ValueError):
    """The model's answer is not a quotes answer (a grammar-less server may answer anything)."""


def quotes_json_schema() -> dict[str, Any]:
    """The answer's JSON schema, already in the strict form (every key required, nullable)."""
    text = {"type": ["string", "null"]}
    line = _closed({name: text for name in LINE_FIELDS})
    return _closed(
        {
            "document_type": {"type": "string", "enum": list(DOCUMENT_TYPES)},
            "document_title": text,
            **{name: text for name in HEADER_FIELDS},
            "lines": {"type": "array", "items": line},
            **{name: text for name in TOTAL_FIELDS},
        }
    )


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def invoice_from_quotes(answer: Any, document: DocumentText) -> dict[str, Any]:
    """The ``invoice.v1`` answer for a quotes answer about ``document``."""
    if not isinstance(answer, Mapping):
        raise QuotedAnswerError("the answer is not a JSON object")
    reader = _Reader(document)
    kind = answer.get("document_type")
    if kind not in DOCUMENT_TYPES:
        raise QuotedAnswerError(f"document_type {kind!r} is not one of {', '.join(DOCUMENT_TYPES)}")
    title = _quote(answer, "document_title")
    # The printed title decides where it says something: a small model calls a "Rechnung (380)"
    # a credit note, and a credit note flips the direction of every amount in the ERP. Where the
    # model's title says nothing (it quoted "REG Regulatory information"), the title the
    # document prints decides, as the rules read it.
    decided = document_type_of_title(title) if title else None
    document_type: dict[str, Any] = {"value": kind, "evidence": reader.evidence(title, near=(1, 0)) if title else None}
    if decided is not None:
        document_type["value"] = decided
    else:
        printed = find_document_type(prepare(document))
        if printed is not None:
            document_type = invoice_field(document, printed)
    invoice: dict[str, Any] = {"schema": SCHEMA_ID, "document_type": document_type, "supplier": {}}
    for key, (path, reading) in HEADER_FIELDS.items():
        field = reader.field(_quote(answer, key), reading, near=(1, 0))
        if path.startswith("supplier."):
            invoice["supplier"][path.removeprefix("supplier.")] = field
        else:
            invoice[path] = field
    lines = answer.get("lines")
    if not isinstance(lines, list):
        raise QuotedAnswerError("lines is not a list")
    invoice["lines"] = []
    position = (1, 0)
    for index, line in enumerate(lines):
        if not isinstance(line, Mapping):
            raise QuotedAnswerError(f"lines[{index}] is not an object")
        fields = {}
        for key, reading in LINE_FIELDS.items():
            fields[key] = reader.field(_quote(line, key, where=f"lines[{index}]."), reading, near=position)
            position = reader.last_end or position
        invoice["lines"].append(fields)
    # Totals are printed below the lines: the occurrence nearest the end of the last page.
    last = len(document.pages) or 1
    end = (last, len(document.pages[-1]) if document.pages else 0)
    invoice["totals"] = {
        key: reader.field(_quote(answer, key), reading, near=end) for key, reading in TOTAL_FIELDS.items()
    }
    # EN 16931 amounts are positive where the document prints a deduction with a minus: a paid
    # amount (BT-113), and every amount of a credit note, whose type carries the direction.
    _drop_sign(invoice["totals"]["prepaid"])
    amounts = [*invoice["totals"].values()]
    amounts += [field for line in invoice["lines"] for key, field in line.items() if LINE_FIELDS[key] == "amount"]
    if document_type["value"] == "credit_note" and any(_negative(field) for field in amounts):
        for field in amounts:
            _drop_sign(field)
    return invoice


def _negative(field: dict[str, Any]) -> bool:
    value = field["value"]
    return isinstance(value, str) and value.startswith("-")


def _drop_sign(field: dict[str, Any]) -> None:
    if _negative(field):
        field["value"] = field["value"][1:]


def _quote(answer: Mapping[str, Any], key: str, *, where: str = "") -> str | None:
    if key not in answer:
        raise QuotedAnswerError(f"{where}{key} is missing")
    value = answer[key]
    if value is not None and not isinstance(value, str):
        raise QuotedAnswerError(f"{where}{key} is not a string or null")
    return value if value and value.strip() else None


class _Reader:
    def __init__(self, document: DocumentText) -> None:
        self.document = document
        text = document.full_text
        self.decimal_comma = uses_decimal_comma(text)
        self.month_first = writes_month_first(text)
        self.last_end: tuple[int, int] | None = None

    def field(self, quote: str | None, reading: str, *, near: tuple[int, int]) -> dict[str, Any]:
        if quote is None:
            return {"value": None, "evidence": None}
        value = self.value(quote.strip(), reading)
        return {"value": value, "evidence": self.evidence(quote, near=near, reading=reading, value=value)}

    def evidence(self, quote: str, *, near: tuple[int, int], reading: str = "text", value: str = "") -> dict[str, Any]:
        quote = quote.strip()
        found = find_quote(self.document, quote, page=near[0], near=near[1])
        if found is None and reading in ("amount", "rate", "date"):
            # Small models write "198.00" for a printed "198,00" and ISO dates for "05.03.2018":
            # the same number or date printed in the document is the evidence.
            found = self._printed_as(reading, value, near=near)
        if found is None and reading == "currency" and value in CURRENCY_CODES:
            # ... and "USD" for a printed "$": a sign that stands for the code is its evidence.
            found = self._printed_currency(value, near=near)
        if found is None:
            self.last_end = None
            # Printed nowhere: an empty span the evidence checks report, never a guessed one.
            return {"page": 1, "start": 0, "end": 0, "quote": quote}
        page, start, end = found
        self.last_end = (page, end)
        return {"page": page, "start": start, "end": end, "quote": self.document.pages[page - 1][start:end]}

    def _printed_currency(self, code: str, *, near: tuple[int, int]) -> tuple[int, int, int] | None:
        """Where the document prints ``code`` or a sign standing for it ("$", "€", "TL"), nearest ``near``."""
        forms = [code, *(sign for sign, codes in CURRENCY_SIGNS.items() if code in codes)]
        # Letters only as a whole word ("TL", not the "tl" of "Title"); a symbol wherever it is.
        pattern = re.compile(
            "|".join(rf"(?<!\w){re.escape(form)}(?!\w)" if form[0].isalpha() else re.escape(form) for form in forms),
            re.IGNORECASE,
        )
        spans = [
            (number, match.start(), match.end())
            for number, text in enumerate(self.document.pages, start=1)
            for match in pattern.finditer(text)
        ]
        if not spans:
            return None
        return min(spans, key=lambda span: (abs(span[0] - near[0]), abs(span[1] - near[1])))

    def _printed_as(self, reading: str, value: str, *, near: tuple[int, int]) -> tuple[int, int, int] | None:
        """Where the document prints ``value`` (an amount or ISO date), nearest ``near``."""
        spans: list[tuple[int, int, int]] = []
        for number, text in enumerate(self.document.pages, start=1):
            if reading == "date":
                spans += [
                    (number, d.start, d.end) for d in read_dates(text, self.month_first) if d.value.isoformat() == value
                ]
                continue
            try:
                wanted = Decimal(value)
            except ArithmeticError:
                return None
            spans += [(number, a.start, a.end) for a in read_amounts(text, self.decimal_comma) if a.value == wanted]
        if not spans:
            return None
        return min(spans, key=lambda span: (abs(span[0] - near[0]), abs(span[1] - near[1])))

    def value(self, quote: str, reading: str) -> str:
        if reading == "amount":
            return self._amount(quote) or quote
        if reading == "rate":
            amount = self._number(quote)
            return format(amount.normalize(), "f") if amount is not None else quote
        if reading == "date":
            dates = read_dates(quote, self.month_first)
            return dates[0].value.isoformat() if dates else quote
        if reading == "currency":
            code = _CODE.search(quote.upper())
            if code and code[1] in CURRENCY_CODES:
                return code[1]
            return currency_of_sign(quote) or quote
        if reading == "identifier":
            return re.sub(r"\s+", "", quote)
        return quote

    def _amount(self, quote: str) -> str | None:
        value = self._number(quote)
        return decimal_text(value) if value is not None else None

    def _number(self, quote: str) -> Decimal | None:
        match = _PRINTED_NUMBER.search(quote)
        if match is None:
            return None
        printed = match.group().strip()
        negative = printed[0] in "-−–"
        digits = printed.lstrip("-−– ").rstrip(".,' \u00a0\u202f")
        value = read_number(digits, decimal_comma=self.decimal_comma)
        if value is None:
            return None
        return -value if negative else value
