"""The ``invoice.v1`` extraction schema: its shape, its JSON schema, and typed access to values.

Every value is a string (or null) with its evidence: decimal strings keep money exact through
JSON, and :meth:`FieldValue.as_decimal` never goes through float. :func:`parse_invoice_v1` checks
syntax and shape (VAL-1); whether a value parses is asked of the typed accessors, so the
validator can name *which* field is unusable instead of rejecting the whole answer.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

SCHEMA_ID = "invoice.v1"
JSON_SCHEMA_NAME = "invoice_v1"
DOCUMENT_TYPES = ("invoice", "credit_note")

_DECIMAL = re.compile(r"-?\d+(?:\.\d+)?")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_CURRENCY_CODE = re.compile(r"[A-Z]{3}")
# A stored message stays readable: the first few problems are enough to act on.
_MAX_REPORTED_ERRORS = 8


class InvoiceOutputError(ValueError):
    """An extraction output we cannot accept; ``message`` is short enough to store on the attempt."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SchemaError(InvoiceOutputError):
    """The output is not JSON at all (syntax)."""


class SchemaValidationError(InvoiceOutputError):
    """The output is JSON but not an ``invoice.v1`` object (shape)."""


class FieldValueError(ValueError):
    """A value that cannot be read as the type its field needs (``"12,50"`` as an amount)."""

    def __init__(self, path: str, value: str, expected: str) -> None:
        super().__init__(f"{path}: {value!r} is not {expected}")
        self.path = path
        self.value = value


class _Shape(BaseModel):
    # strict: a JSON number where a decimal string belongs is a shape error, never coerced.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Evidence(_Shape):
    page: int = Field(ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    quote: str
    # Where the quote is printed: one [x0, y0, x1, y1] per printed line, fractions of the page's
    # width and height, origin top left (extraction.validation.evidence.with_boxes). The service
    # sets it on a stored result; no model is asked for it (invoice_v1_json_schema has none).
    boxes: list[list[float]] | None = None

    @model_validator(mode="after")
    def _span_is_ordered(self) -> Evidence:
        if self.end < self.start:
            raise ValueError("evidence end is before its start")
        return self

    @model_serializer(mode="wrap")
    def _boxes_only_where_placed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # An answer's evidence as a model gave it stays four keys: boxes belong to results.
        data: dict[str, Any] = handler(self)
        if self.boxes is None:
            data.pop("boxes", None)
        return data


class FieldValue(_Shape):
    """One extracted value and where it was read. Both null means "not in the document"."""

    value: str | None
    evidence: Evidence | None
    # Where this field sits in the invoice ("totals.gross"), for error messages; set on parse.
    _path: str = PrivateAttr(default="")

    @property
    def path(self) -> str:
        return self._path

    def as_decimal(self) -> Decimal | None:
        """The value as an exact Decimal, None if absent; FieldValueError if not a decimal string."""
        if self.value is None:
            return None
        text = self.value.strip()
        if not _DECIMAL.fullmatch(text):
            raise FieldValueError(self._path, self.value, "a decimal number like 1234.50")
        return Decimal(text)

    def as_date(self) -> datetime.date | None:
        """The value as a date, None if absent; FieldValueError if not a real YYYY-MM-DD date."""
        if self.value is None:
            return None
        text = self.value.strip()
        try:
            if not _ISO_DATE.fullmatch(text):
                raise ValueError
            return datetime.date.fromisoformat(text)
        except ValueError:
            raise FieldValueError(self._path, self.value, "a date as YYYY-MM-DD") from None

    def as_currency(self) -> str | None:
        """The value as an ISO 4217-shaped code; whether the code is allowed is policy, not shape."""
        if self.value is None:
            return None
        text = self.value.strip()
        if not _CURRENCY_CODE.fullmatch(text):
            raise FieldValueError(self._path, self.value, "a three-letter ISO 4217 currency code")
        return text


class DocumentTypeValue(FieldValue):
    value: Literal["invoice", "credit_note"] | None


class Supplier(_Shape):
    name: FieldValue
    vat_id: FieldValue
    iban: FieldValue


class Line(_Shape):
    description: FieldValue
    quantity: FieldValue
    unit_price: FieldValue
    net_amount: FieldValue
    tax_rate: FieldValue
    tax_amount: FieldValue


class Totals(_Shape):
    net: FieldValue
    tax: FieldValue
    gross: FieldValue
    prepaid: FieldValue
    amount_due: FieldValue


class InvoiceV1(_Shape):
    # "schema" would shadow a BaseModel attribute, hence the alias (the only accepted input name).
    schema_id: Literal["invoice.v1"] = Field(alias="schema")
    document_type: DocumentTypeValue
    supplier: Supplier
    invoice_number: FieldValue
    issue_date: FieldValue
    due_date: FieldValue
    currency: FieldValue
    lines: list[Line]
    totals: Totals

    @model_validator(mode="after")
    def _name_fields(self) -> InvoiceV1:
        for path, field in self.fields():
            field._path = path
        return self

    def fields(self) -> Iterator[tuple[str, FieldValue]]:
        """Every extracted field with its path ("lines[2].net_amount"), in document order."""
        yield "document_type", self.document_type
        for name in Supplier.model_fields:
            yield f"supplier.{name}", getattr(self.supplier, name)
        for name in ("invoice_number", "issue_date", "due_date", "currency"):
            yield name, getattr(self, name)
        for index, line in enumerate(self.lines):
            for name in Line.model_fields:
                yield f"lines[{index}].{name}", getattr(line, name)
        for name in Totals.model_fields:
            yield f"totals.{name}", getattr(self.totals, name)

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


# --- invoice.v2: EN 16931's allowances, charges, VAT breakdown and references ------------------


class AllowanceCharge(_Shape):
    """A document-level allowance (BG-20) or charge (BG-21), or a line's (BG-27, BG-28)."""

    amount: FieldValue
    base_amount: FieldValue
    percentage: FieldValue
    reason: FieldValue
    reason_code: FieldValue
    tax_category: FieldValue
    tax_rate: FieldValue


class LineV2(Line):
    tax_category: FieldValue
    price_base_quantity: FieldValue  # BT-149: the unit price is per this many units
    allowances: list[AllowanceCharge]
    charges: list[AllowanceCharge]


class TaxSubtotal(_Shape):
    """BG-23: one VAT category and rate, with its exemption reason where it is exempt."""

    category: FieldValue
    rate: FieldValue
    taxable_amount: FieldValue
    tax_amount: FieldValue
    exemption_reason: FieldValue
    exemption_reason_code: FieldValue


class Buyer(_Shape):
    name: FieldValue
    vat_id: FieldValue


class TotalsV2(Totals):
    line_total: FieldValue  # BT-106
    allowance_total: FieldValue  # BT-107
    charge_total: FieldValue  # BT-108
    rounding: FieldValue  # BT-114


class InvoiceV2(InvoiceV1):
    """invoice.v1 and what EN 16931 adds for arithmetic that holds on real invoices: document
    and line allowances and charges, the VAT breakdown, rounding, the buyer and references."""

    schema_id: Literal["invoice.v2"] = Field(alias="schema")  # type: ignore[assignment]
    buyer: Buyer
    buyer_reference: FieldValue  # BT-10
    order_reference: FieldValue  # BT-13
    payment_terms: FieldValue  # BT-20
    lines: list[LineV2]  # type: ignore[assignment]
    allowances: list[AllowanceCharge]
    charges: list[AllowanceCharge]
    tax_breakdown: list[TaxSubtotal]
    totals: TotalsV2

    def fields(self) -> Iterator[tuple[str, FieldValue]]:
        yield "document_type", self.document_type
        for name in Supplier.model_fields:
            yield f"supplier.{name}", getattr(self.supplier, name)
        for name in Buyer.model_fields:
            yield f"buyer.{name}", getattr(self.buyer, name)
        for name in ("invoice_number", "issue_date", "due_date", "currency", "buyer_reference", "order_reference"):
            yield name, getattr(self, name)
        for index, line in enumerate(self.lines):
            prefix = f"lines[{index}]"
            for name in LineV2.model_fields:
                if name not in ("allowances", "charges"):
                    yield f"{prefix}.{name}", getattr(line, name)
            yield from _adjustments(f"{prefix}.allowances", line.allowances)
            yield from _adjustments(f"{prefix}.charges", line.charges)
        yield from _adjustments("allowances", self.allowances)
        yield from _adjustments("charges", self.charges)
        for index, group in enumerate(self.tax_breakdown):
            for name in TaxSubtotal.model_fields:
                yield f"tax_breakdown[{index}].{name}", getattr(group, name)
        for name in TotalsV2.model_fields:
            yield f"totals.{name}", getattr(self.totals, name)
        yield "payment_terms", self.payment_terms


def _adjustments(prefix: str, entries: list[AllowanceCharge]) -> Iterator[tuple[str, FieldValue]]:
    for index, entry in enumerate(entries):
        for name in AllowanceCharge.model_fields:
            yield f"{prefix}[{index}].{name}", getattr(entry, name)


SCHEMA_MODELS: dict[str, type[InvoiceV1]] = {"invoice.v1": InvoiceV1, "invoice.v2": InvoiceV2}
SCHEMA_IDS = tuple(SCHEMA_MODELS)
_EMPTY: dict[str, None] = {"value": None, "evidence": None}


def upgraded_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """An invoice.v1 answer as invoice.v2: every field v2 adds is null or an empty list. For a
    provider that answers v1's fields only (the rules, a model asked for v1)."""
    lines = [
        {**line, "tax_category": dict(_EMPTY), "price_base_quantity": dict(_EMPTY), "allowances": [], "charges": []}
        for line in data.get("lines", [])
    ]
    totals = {
        **data.get("totals", {}),
        **{name: dict(_EMPTY) for name in ("line_total", "allowance_total", "charge_total", "rounding")},
    }
    return {
        **data,
        "schema": "invoice.v2",
        "buyer": {"name": dict(_EMPTY), "vat_id": dict(_EMPTY)},
        "buyer_reference": dict(_EMPTY),
        "order_reference": dict(_EMPTY),
        "payment_terms": dict(_EMPTY),
        "lines": lines,
        "allowances": [],
        "charges": [],
        "tax_breakdown": [],
        "totals": totals,
    }


def parse_invoice_v1(text: str) -> InvoiceV1:
    """Parse a model's answer. Raises SchemaError (not JSON) or SchemaValidationError (wrong shape)."""
    return parse_invoice(text, schema="invoice.v1")


def parse_invoice(text: str, *, schema: str) -> InvoiceV1:
    """Parse an answer for a job of ``schema``. A v2 job takes a v1 answer, upgraded (see
    :func:`upgraded_to_v2`); a v1 job takes only v1. Raises SchemaError (not JSON) or
    SchemaValidationError (wrong shape)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise SchemaError(f"output is not valid JSON: {error.msg} at {where}") from None
    except (TypeError, RecursionError) as error:
        raise SchemaError(f"output is not valid JSON: {type(error).__name__}") from None
    if not isinstance(data, dict):
        raise SchemaValidationError(f"output is a JSON {type(data).__name__}, not an object")
    if schema == "invoice.v2" and data.get("schema") == "invoice.v1":
        data = upgraded_to_v2(data)
    try:
        return SCHEMA_MODELS[schema].model_validate(data, by_alias=True)
    except ValidationError as error:
        raise SchemaValidationError(_describe(error, schema)) from None


def _describe(error: ValidationError, schema: str) -> str:
    problems = error.errors(include_url=False, include_input=False)
    described = [f"{_location(problem['loc'])}: {problem['msg']}" for problem in problems[:_MAX_REPORTED_ERRORS]]
    if len(problems) > _MAX_REPORTED_ERRORS:
        described.append(f"... and {len(problems) - _MAX_REPORTED_ERRORS} more")
    return f"output does not match {schema}: " + "; ".join(described)


def _location(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(root)"


# --- JSON schema for structured outputs -------------------------------------------------------
# Written out rather than generated from the models: strict structured outputs (OpenAI and
# compatible servers) want every property required, additionalProperties false and nullable
# types as ["string", "null"], which pydantic's generator does not produce. A test keeps the
# property names in step with the models above.


def _object(properties: dict[str, Any], description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def _field(description: str, *, enum: tuple[str, ...] | None = None) -> dict[str, Any]:
    value: dict[str, Any] = {"type": ["string", "null"], "description": description}
    if enum is not None:
        value["enum"] = [*enum, None]
    return _object(
        {"value": value, "evidence": {"anyOf": [{"$ref": "#/$defs/evidence"}, {"type": "null"}]}},
        "A value and the exact text it was read from; both null if the document does not show it.",
    )


_AMOUNT = 'Decimal string with a dot, no thousands separator, e.g. "1234.50" or "-7.67"; null if absent.'
_DATE = "Date as YYYY-MM-DD; null if absent."


@functools.cache  # built once per process: every model call sends it; callers must not mutate it
def invoice_v1_json_schema() -> dict[str, Any]:
    """The invoice.v1 JSON schema in the strict form structured outputs accept."""
    evidence = _object(
        {
            "page": {"type": "integer", "description": "1-based page number."},
            "start": {"type": "integer", "description": "Offset of the first character in that page's text."},
            "end": {"type": "integer", "description": "Offset just after the last character (exclusive)."},
            "quote": {"type": "string", "description": "Exactly the page text between start and end."},
        },
        "Where the value is printed.",
    )
    line = _object(
        {
            "description": _field("Item description as printed."),
            "quantity": _field(_AMOUNT),
            "unit_price": _field("Net unit price. " + _AMOUNT),
            "net_amount": _field("Line net amount. " + _AMOUNT),
            "tax_rate": _field('VAT rate in percent, e.g. "19" or "5.5"; null if absent.'),
            "tax_amount": _field("Line tax amount. " + _AMOUNT),
        }
    )
    return {
        "type": "object",
        "$defs": {"evidence": evidence},
        "properties": {
            "schema": {"type": "string", "enum": [SCHEMA_ID]},
            "document_type": _field('"invoice" or "credit_note".', enum=DOCUMENT_TYPES),
            "supplier": _object(
                {
                    "name": _field("Seller (supplier) name as printed."),
                    "vat_id": _field("Seller VAT identification number as printed."),
                    "iban": _field("Seller IBAN, without spaces."),
                }
            ),
            "invoice_number": _field("Invoice number as printed."),
            "issue_date": _field("Invoice date. " + _DATE),
            "due_date": _field("Payment due date. " + _DATE),
            "currency": _field('Invoice currency as an ISO 4217 code, e.g. "EUR".'),
            "lines": {"type": "array", "items": line},
            "totals": _object(
                {
                    "net": _field("Total without VAT. " + _AMOUNT),
                    "tax": _field("Total VAT. " + _AMOUNT),
                    "gross": _field("Total with VAT. " + _AMOUNT),
                    "prepaid": _field("Amount already paid. " + _AMOUNT),
                    "amount_due": _field("Amount due for payment. " + _AMOUNT),
                }
            ),
        },
        "required": [
            "schema",
            "document_type",
            "supplier",
            "invoice_number",
            "issue_date",
            "due_date",
            "currency",
            "lines",
            "totals",
        ],
        "additionalProperties": False,
    }


@functools.cache  # built once per process; callers must not mutate it
def invoice_v2_json_schema() -> dict[str, Any]:
    """The invoice.v2 JSON schema, in the same strict form as :func:`invoice_v1_json_schema`."""
    v1 = invoice_v1_json_schema()
    adjustment = _object(
        {
            "amount": _field("Amount of the allowance or charge. " + _AMOUNT),
            "base_amount": _field("The amount it is a percentage of. " + _AMOUNT),
            "percentage": _field('Percentage, e.g. "2.5"; null if absent.'),
            "reason": _field("Reason as printed."),
            "reason_code": _field("UNTDID 5189 (allowance) or 7161 (charge) reason code."),
            "tax_category": _field('VAT category code (UNCL 5305), e.g. "S".'),
            "tax_rate": _field('VAT rate in percent, e.g. "19".'),
        },
        "An allowance (EN 16931 BG-20/BG-27) or a charge (BG-21/BG-28).",
    )
    line_properties = dict(v1["properties"]["lines"]["items"]["properties"])
    line_properties.update(
        {
            "tax_category": _field('VAT category code (UNCL 5305), e.g. "S".'),
            "price_base_quantity": _field("The quantity the unit price is for (BT-149). " + _AMOUNT),
            "allowances": {"type": "array", "items": {"$ref": "#/$defs/adjustment"}},
            "charges": {"type": "array", "items": {"$ref": "#/$defs/adjustment"}},
        }
    )
    totals = dict(v1["properties"]["totals"]["properties"])
    totals.update(
        {
            "line_total": _field("Sum of line net amounts (BT-106). " + _AMOUNT),
            "allowance_total": _field("Sum of document allowances (BT-107). " + _AMOUNT),
            "charge_total": _field("Sum of document charges (BT-108). " + _AMOUNT),
            "rounding": _field("Rounding amount (BT-114). " + _AMOUNT),
        }
    )
    properties = dict(v1["properties"])
    properties.update(
        {
            "schema": {"type": "string", "enum": ["invoice.v2"]},
            "buyer": _object({"name": _field("Buyer name as printed."), "vat_id": _field("Buyer VAT id.")}),
            "buyer_reference": _field("Buyer reference (BT-10), e.g. a Leitweg-ID."),
            "order_reference": _field("Purchase order reference (BT-13)."),
            "payment_terms": _field("Payment terms as printed (BT-20)."),
            "lines": {"type": "array", "items": _object(line_properties)},
            "allowances": {"type": "array", "items": {"$ref": "#/$defs/adjustment"}},
            "charges": {"type": "array", "items": {"$ref": "#/$defs/adjustment"}},
            "tax_breakdown": {
                "type": "array",
                "items": _object(
                    {
                        "category": _field('VAT category code (UNCL 5305), e.g. "S", "E", "AE".'),
                        "rate": _field('VAT rate in percent, e.g. "19".'),
                        "taxable_amount": _field("Taxable amount of the category (BT-116). " + _AMOUNT),
                        "tax_amount": _field("VAT of the category (BT-117). " + _AMOUNT),
                        "exemption_reason": _field("Exemption reason as printed (BT-120)."),
                        "exemption_reason_code": _field('Exemption reason code (BT-121), e.g. "VATEX-EU-IC".'),
                    },
                    "One VAT category and rate (EN 16931 BG-23).",
                ),
            },
            "totals": _object(totals),
        }
    )
    return {
        "type": "object",
        "$defs": {**v1["$defs"], "adjustment": adjustment},
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
