"""The structured-output dialects: what ``response_format`` each one sends, and the strict form
of a schema that OpenAI's strict mode accepts (checked against the simulator's rendering of
OpenAI's own refusals)."""

from __future__ import annotations

import copy
import re

import pytest

from extraction.providers.openai_compat import OpenAIProvider
from extraction.providers.structured_output import (
    DIALECTS,
    UnknownDialect,
    check_dialect,
    response_format,
    strict_json_schema,
)
from extraction.validation.schema import JSON_SCHEMA_NAME, invoice_v1_json_schema
from tests.simulator.dialects import strict_problems

# Never called: the provider checks its configuration before it opens a connection.
UNUSED_URL = "http://127.0.0.1:9/v1"

# Written the way a schema generator writes one: optional keys, open objects, validation keywords.
RAW_SCHEMA = {
    "type": "object",
    "description": "A small order.",
    "$defs": {
        "money": {
            "type": "object",
            "properties": {
                "amount": {"type": "string", "minLength": 1},
                "currency": {"type": ["string", "null"], "format": "iso-4217"},
            },
            "required": ["amount"],
        },
    },
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 80},
        "note": {"type": ["string", "null"], "description": "optional and nullable"},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string", "format": "postal-code"}},
            "required": ["city", "zip"],
        },
        "count": {"type": "integer", "minimum": 0, "maximum": 100},
        "total": {"anyOf": [{"$ref": "#/$defs/money"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "minItems": 1},
    },
    "required": ["name", "address", "count", "tags"],
}

STRICT_SCHEMA = {
    "type": "object",
    "description": "A small order.",
    "$defs": {
        "money": {
            "type": "object",
            "properties": {
                "amount": {"type": "string"},
                "currency": {"type": ["string", "null"]},
            },
            "required": ["amount", "currency"],
            "additionalProperties": False,
        },
    },
    "properties": {
        "name": {"type": "string"},
        "note": {"type": ["string", "null"], "description": "optional and nullable"},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["city", "zip"],
            "additionalProperties": False,
        },
        "count": {"type": "integer"},
        "total": {"anyOf": [{"$ref": "#/$defs/money"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "note", "address", "count", "total", "tags"],
    "additionalProperties": False,
}


# --- response_format per dialect -----------------------------------------------------------------


def test_openai_strict_sends_json_schema_with_strict_true_and_the_strict_schema():
    assert response_format("openai_strict", name=JSON_SCHEMA_NAME, schema=invoice_v1_json_schema()) == {
        "type": "json_schema",
        "json_schema": {"name": JSON_SCHEMA_NAME, "strict": True, "schema": invoice_v1_json_schema()},
    }


def test_json_schema_sends_json_schema_without_a_strict_flag():
    assert response_format("json_schema", name=JSON_SCHEMA_NAME, schema=invoice_v1_json_schema()) == {
        "type": "json_schema",
        "json_schema": {"name": JSON_SCHEMA_NAME, "schema": invoice_v1_json_schema()},
    }


def test_json_object_schema_sends_json_object_with_the_schema_beside_it():
    assert response_format("json_object_schema", name=JSON_SCHEMA_NAME, schema=invoice_v1_json_schema()) == {
        "type": "json_object",
        "schema": invoice_v1_json_schema(),
    }


def test_openai_strict_sends_the_strict_form_of_a_schema_that_is_not_strict_yet():
    assert response_format("openai_strict", name="order", schema=RAW_SCHEMA) == {
        "type": "json_schema",
        "json_schema": {"name": "order", "strict": True, "schema": STRICT_SCHEMA},
    }


def test_the_other_dialects_send_the_schema_as_given():
    assert response_format("json_schema", name="order", schema=RAW_SCHEMA)["json_schema"]["schema"] == RAW_SCHEMA
    assert response_format("json_object_schema", name="order", schema=RAW_SCHEMA)["schema"] == RAW_SCHEMA


# --- strict_json_schema --------------------------------------------------------------------------------


def test_strict_form_closes_every_object_requires_every_key_and_drops_unsupported_keywords():
    assert strict_json_schema(RAW_SCHEMA) == STRICT_SCHEMA


def test_strict_form_leaves_its_input_unchanged():
    before = copy.deepcopy(RAW_SCHEMA)

    strict_json_schema(RAW_SCHEMA)

    assert RAW_SCHEMA == before


def test_optional_key_that_does_not_admit_null_is_an_error_naming_its_path():
    schema = copy.deepcopy(RAW_SCHEMA)
    schema["properties"]["address"]["required"] = ["city"]  # zip optional, but a plain string

    with pytest.raises(ValueError, match=re.escape("#/properties/address/properties/zip: optional but not nullable")):
        strict_json_schema(schema)


def test_optional_key_in_defs_that_does_not_admit_null_is_an_error_naming_its_path():
    schema = copy.deepcopy(RAW_SCHEMA)
    schema["$defs"]["money"]["required"] = []  # amount optional, but a plain string

    with pytest.raises(ValueError, match=re.escape("#/$defs/money/properties/amount: optional but not nullable")):
        strict_json_schema(schema)


def test_the_canonical_invoice_schema_is_already_strict():
    assert strict_json_schema(invoice_v1_json_schema()) == invoice_v1_json_schema()


@pytest.mark.parametrize("schema", [RAW_SCHEMA, invoice_v1_json_schema()], ids=["order", "invoice_v1"])
def test_openai_strict_mode_finds_nothing_to_refuse_in_the_strict_form(schema):
    assert list(strict_problems(strict_json_schema(schema))) == []


def test_openai_strict_mode_refuses_the_raw_schema():
    assert list(strict_problems(RAW_SCHEMA)) != []


def test_openai_strict_mode_refuses_a_nested_object_left_open():
    schema = copy.deepcopy(STRICT_SCHEMA)
    del schema["properties"]["address"]["additionalProperties"]

    assert list(strict_problems(schema)) == [
        "In context=('properties', 'address'), 'additionalProperties' is required to be supplied and to be false."
    ]


# --- configuration errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_known_dialect_is_accepted(dialect):
    assert check_dialect(dialect) == dialect


def test_an_unknown_dialect_is_refused():
    with pytest.raises(UnknownDialect, match="'grammar'"):
        check_dialect("grammar")


def test_an_unknown_dialect_is_refused_by_response_format():
    with pytest.raises(UnknownDialect):
        response_format("grammar", name=JSON_SCHEMA_NAME, schema=invoice_v1_json_schema())


def test_a_provider_with_an_unknown_dialect_is_a_configuration_error():
    with pytest.raises(ValueError, match="unknown structured_output dialect 'nope'"):
        OpenAIProvider(base_url=UNUSED_URL, api_key="x", structured_output="nope")


@pytest.mark.parametrize("reserved", ["model", "messages", "response_format", "max_completion_tokens"])
def test_sampling_may_not_set_what_the_provider_sends_itself(reserved):
    with pytest.raises(ValueError, match=re.escape(f"sampling parameters may not set ['{reserved}']")):
        OpenAIProvider(base_url=UNUSED_URL, api_key="x", sampling={reserved: "x"})


def test_sampling_may_not_set_the_token_limit_parameter_in_use():
    with pytest.raises(ValueError, match=re.escape("sampling parameters may not set ['max_tokens']")):
        OpenAIProvider(base_url=UNUSED_URL, api_key="x", token_limit_parameter="max_tokens", sampling={"max_tokens": 5})


def test_a_provider_keeps_its_dialect_and_a_copy_of_its_sampling():
    sampling = {"temperature": 0, "repeat_penalty": 1.0}
    provider = OpenAIProvider(base_url=UNUSED_URL, api_key="x", structured_output="json_schema", sampling=sampling)
    sampling["temperature"] = 1

    assert provider.structured_output == "json_schema"
    assert provider.sampling == {"temperature": 0, "repeat_penalty": 1.0}
