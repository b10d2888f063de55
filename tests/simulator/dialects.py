"""How the simulated server wants its schema: the structured-output dialects real servers speak.

Each refusal is shaped like the real server's: OpenAI answers a request it cannot take with a
400 naming the schema problem; llama-cpp-python's server validates ``response_format.type``
against ``text | json_object`` and reports the validation error as a 500.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

DIALECTS = ("openai_strict", "json_schema", "json_object_schema")


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    type: str


def refusal(dialect: str, response_format: Any) -> Refusal | None:
    """Why a server speaking ``dialect`` refuses ``response_format``; None if it takes it."""
    if not isinstance(response_format, Mapping):
        return None  # plain text: every server takes it (the answer may then not be JSON)
    kind = response_format.get("type")
    if dialect == "json_object_schema":
        if kind not in ("text", "json_object"):
            return Refusal(
                500,
                f"[{{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                f"'msg': \"Input should be 'text' or 'json_object'\", 'input': {kind!r}}}]",
                "internal_server_error",
            )
        return None
    if dialect == "json_schema":
        return None if kind in ("text", "json_object", "json_schema") else _unknown_type(kind)
    # openai_strict
    if kind == "json_object" and "schema" in response_format:
        return Refusal(400, "Unrecognized request argument supplied: response_format.schema", "invalid_request_error")
    if kind != "json_schema":
        return None if kind in ("text", "json_object") else _unknown_type(kind)
    json_schema = response_format.get("json_schema") or {}
    if not json_schema.get("strict"):
        return None
    name = json_schema.get("name")
    for problem in strict_problems(json_schema.get("schema")):
        return Refusal(400, f"Invalid schema for response_format '{name}': {problem}", "invalid_request_error")
    return None


def strict_problems(schema: Any, context: str = "()") -> Iterator[str]:
    """What OpenAI's strict mode says about ``schema``, in its words, first problem first."""
    if not isinstance(schema, Mapping):
        return
    for keyword in ("minLength", "maxLength", "minimum", "maximum", "pattern", "format", "minItems", "maxItems"):
        if keyword in schema:
            yield f"In context={context}, '{keyword}' is not permitted."
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        if schema.get("additionalProperties") is not False:
            yield f"In context={context}, 'additionalProperties' is required to be supplied and to be false."
        missing = [key for key in properties if key not in (schema.get("required") or ())]
        if missing:
            yield (
                f"In context={context}, 'required' is required to be supplied and to be an array including "
                f"every key in properties. Missing '{missing[0]}'."
            )
        for key, subschema in properties.items():
            yield from strict_problems(subschema, f"{context[:-1]}'properties', '{key}')")
    for keyword in ("$defs", "definitions"):
        for key, subschema in (schema.get(keyword) or {}).items():
            yield from strict_problems(subschema, f"{context[:-1]}'{keyword}', '{key}')")
    if "items" in schema:
        yield from strict_problems(schema["items"], f"{context[:-1]}'items')")
    for index, option in enumerate(schema.get("anyOf") or ()):
        yield from strict_problems(option, f"{context[:-1]}'anyOf', '{index}')")


def _unknown_type(kind: Any) -> Refusal:
    return Refusal(
        400,
        f"Invalid value: {kind!r}. Supported values are: 'json_object', 'json_schema', and 'text'.",
        "invalid_request_error",
    )
