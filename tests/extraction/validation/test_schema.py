"""invoice.v1: syntax and shape checks on a model's answer, typed access for the validator."""

from __future__ import annotations

import copy
import datetime
import json
from decimal import Decimal
from typing import Any

import pytest

from extraction.validation.schema import (
    AllowanceCharge,
    Buyer,
    FieldValueError,
    InvoiceV1,
    InvoiceV2,
    Line,
    LineV2,
    SchemaError,
    SchemaValidationError,
    Supplier,
    TaxSubtotal,
    Totals,
    TotalsV2,
    invoice_v1_json_schema,
    invoice_v2_json_schema,
    parse_invoice_v1,
)


def _field(value: str | None, page: int = 1, start: int = 0) -> dict[str, Any]:
    if value is None:
        return {"value": None, "evidence": None}
    return {"value": value, "evidence": {"page": page, "start": start, "end": start + len(value), "quote": value}}


def _invoice() -> dict[str, Any]:
    return {
        "schema": "invoice.v1",
        "document_type": _field("invoice"),
        "supplier": {"name": _field("Lieferant GmbH"), "vat_id": _field("DE123456789"), "iban": _field(None)},
        "invoice_number": _field("471102"),
        "issue_date": _field("2018-03-05"),
        "due_date": _field(None),
        "currency": _field("EUR"),
        "lines": [
            {
                "description": _field("Trennblätter A4"),
                "quantity": _field("20"),
                "unit_price": _field("9.9000"),
                "net_amount": _field("0.10"),
                "tax_rate": _field("19"),
                "tax_amount": _field(None),
            },
            {
                "description": _field("Joghurt Banane"),
                "quantity": _field("50"),
                "unit_price": _field("5.5000"),
                "net_amount": _field("0.20"),
                "tax_rate": _field("7"),
                "tax_amount": _field(None),
            },
        ],
        "totals": {
            "net": _field("0.30"),
            "tax": _field("56.87"),
            "gross": _field("529.87"),
            "prepaid": _field(None),
            "amount_due": _field("-529.87"),
        },
    }


def test_amounts_are_exact_decimals_not_floats():
    invoice = parse_invoice_v1(json.dumps(_invoice()))

    line_sum = sum((line.net_amount.as_decimal() for line in invoice.lines), Decimal(0))
    assert line_sum == invoice.totals.net.as_decimal() == Decimal("0.30")  # 0.1 + 0.2 as floats is not 0.3
    assert invoice.totals.amount_due.as_decimal() == Decimal("-529.87")
    assert invoice.issue_date.as_date() == datetime.date(2018, 3, 5)
    assert invoice.due_date.as_date() is None
    assert invoice.currency.as_currency() == "EUR"
    assert invoice.to_json_dict() == _invoice()


def test_json_number_where_a_decimal_string_belongs_is_a_shape_error():
    data = _invoice()
    data["totals"]["gross"]["value"] = 529.87

    with pytest.raises(SchemaValidationError, match=r"totals\.gross\.value"):
        parse_invoice_v1(json.dumps(data))


@pytest.mark.parametrize("text", ["", "{", "{'schema': 'invoice.v1'}", "```json\n{}\n```", "[1, 2"])
def test_text_that_is_not_json_is_a_schema_error(text):
    with pytest.raises(SchemaError) as raised:
        parse_invoice_v1(text)

    assert type(raised.value) is SchemaError
    assert raised.value.message.startswith("output is not valid JSON")


def _without_currency(data: dict[str, Any]) -> None:
    del data["currency"]


def _with_extra_key(data: dict[str, Any]) -> None:
    data["send_payment_to"] = "DE00"


def _with_unknown_document_type(data: dict[str, Any]) -> None:
    data["document_type"]["value"] = "receipt"


def _with_page_zero(data: dict[str, Any]) -> None:
    data["invoice_number"]["evidence"]["page"] = 0


def _with_reversed_span(data: dict[str, Any]) -> None:
    data["invoice_number"]["evidence"].update(start=9, end=3)


def _with_wrong_schema_id(data: dict[str, Any]) -> None:
    data["schema"] = "invoice.v2"


def _with_lines_as_object(data: dict[str, Any]) -> None:
    data["lines"] = {"0": data["lines"][0]}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (_without_currency, "currency"),
        (_with_extra_key, "send_payment_to"),
        (_with_unknown_document_type, "document_type.value"),
        (_with_page_zero, "invoice_number.evidence.page"),
        (_with_reversed_span, "invoice_number.evidence"),
        (_with_wrong_schema_id, "schema"),
        (_with_lines_as_object, "lines"),
    ],
)
def test_wrong_shape_is_a_validation_error_naming_the_field(change, where):
    data = copy.deepcopy(_invoice())
    change(data)

    with pytest.raises(SchemaValidationError) as raised:
        parse_invoice_v1(json.dumps(data))

    assert where in raised.value.message
    assert len(raised.value.message) < 1000


def test_json_that_is_not_an_object_is_a_validation_error():
    with pytest.raises(SchemaValidationError, match="list"):
        parse_invoice_v1("[]")


@pytest.mark.parametrize(
    ("path", "value", "read"),
    [
        ("totals.gross", "1.234,50", "as_decimal"),
        ("totals.gross", "12,50", "as_decimal"),
        ("totals.gross", "1e3", "as_decimal"),
        ("issue_date", "05.03.2018", "as_date"),
        ("issue_date", "2018-02-30", "as_date"),
        ("currency", "€", "as_currency"),
    ],
)
def test_unusable_value_raises_a_clear_error_with_its_path(path, value, read):
    data = _invoice()
    section, _, name = path.rpartition(".")
    (data[section] if section else data)[name]["value"] = value
    invoice = parse_invoice_v1(json.dumps(data))
    field = dict(invoice.fields())[path]

    with pytest.raises(FieldValueError) as raised:
        getattr(field, read)()

    assert str(raised.value).startswith(f"{path}: {value!r} is not")


def test_fields_lists_every_value_with_its_path():
    invoice = parse_invoice_v1(json.dumps(_invoice()))

    paths = [path for path, _ in invoice.fields()]

    assert paths[:4] == ["document_type", "supplier.name", "supplier.vat_id", "supplier.iban"]
    assert "lines[1].net_amount" in paths
    assert paths[-1] == "totals.amount_due"
    assert len(paths) == 1 + 3 + 4 + 2 * 6 + 5


def _objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    if schema.get("type") == "object" or "properties" in schema:
        found.append(schema)
    for value in schema.values():
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, dict):
                found.extend(_objects(child))
    return found


def test_json_schema_is_strict_for_structured_outputs():
    schema = invoice_v1_json_schema()
    objects = _objects(schema)

    assert len(objects) > 10
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    field = schema["properties"]["totals"]["properties"]["gross"]
    assert field["properties"]["value"]["type"] == ["string", "null"]
    assert {"type": "null"} in field["properties"]["evidence"]["anyOf"]
    assert json.loads(json.dumps(schema)) == schema


def test_json_schema_names_the_same_properties_as_the_models():
    schema = invoice_v1_json_schema()["properties"]

    top_level = {field.alias or name for name, field in InvoiceV1.model_fields.items()}
    assert set(schema) == top_level
    assert set(schema["supplier"]["properties"]) == set(Supplier.model_fields)
    assert set(schema["totals"]["properties"]) == set(Totals.model_fields)
    assert set(schema["lines"]["items"]["properties"]) == set(Line.model_fields)


def test_the_v2_json_schema_is_strict_and_names_the_same_properties_as_the_v2_models():
    schema = invoice_v2_json_schema()
    for obj in _objects(schema):
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    properties = schema["properties"]

    assert set(properties) == {field.alias or name for name, field in InvoiceV2.model_fields.items()}
    assert set(properties["buyer"]["properties"]) == set(Buyer.model_fields)
    assert set(properties["totals"]["properties"]) == set(TotalsV2.model_fields)
    assert set(properties["lines"]["items"]["properties"]) == set(LineV2.model_fields)
    assert set(properties["tax_breakdown"]["items"]["properties"]) == set(TaxSubtotal.model_fields)
    assert set(schema["$defs"]["adjustment"]["properties"]) == set(AllowanceCharge.model_fields)
    assert properties["schema"] == {"type": "string", "enum": ["invoice.v2"]}
    assert invoice_v1_json_schema()["properties"]["schema"] == {"type": "string", "enum": ["invoice.v1"]}
