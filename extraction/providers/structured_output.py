"""How a request asks for ``invoice.v1``: the structured-output dialect each server speaks.

``openai_strict``       OpenAI (and Azure OpenAI): ``json_schema`` with ``strict: true``; the schema
                        in the subset strict mode accepts (:func:`strict_json_schema`).
``json_schema``         vLLM, Ollama, LiteLLM, llama.cpp's ``llama-server``: ``json_schema``, no
                        strict flag; the server compiles the schema into a grammar.
``json_object_schema``  llama-cpp-python's server: ``json_object`` with the schema beside it (it
                        answers ``json_schema`` with HTTP 500).

A pool names its dialect (``settings.PROVIDER_POOLS[...]["structured_output"]``); an unknown
name is a configuration error when the pool is built, not at the first job.
"""

from __future__ import annotations

import copy
from typing import Any

DIALECTS = ("openai_strict", "json_schema", "json_object_schema")

# Keywords strict mode refuses, or that differ between providers; the validator checks what they
# would have expressed, so dropping them loses no guarantee.
_UNSUPPORTED_IN_STRICT = frozenset(
    {
        "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "contains",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minProperties", "maxProperties", "patternProperties", "propertyNames",
        "unevaluatedProperties", "dependentRequired", "dependentSchemas",
        "if", "then", "else", "not", "default", "examples", "format", "pattern",
    }
)  # fmt: skip


class UnknownDialect(ValueError):
    pass


def check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise UnknownDialect(f"unknown structured_output dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
    return dialect


def response_format(dialect: str, *, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` request member for ``dialect``."""
    check_dialect(dialect)
    if dialect == "openai_strict":
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": strict_json_schema(schema)},
        }
    if dialect == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    return {"type": "json_object", "schema": schema}


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in the form OpenAI's strict mode accepts: every object closed
    (``additionalProperties: false``) with every property required, unsupported keywords gone.

    A property that was optional must already admit null (strict mode has no optional keys);
    making it required without that would change what a valid answer is, so it is an error.
    """
    return _strict(copy.deepcopy(schema), path="#")


def _strict(node: Any, *, path: str) -> Any:
    if isinstance(node, list):
        return [_strict(item, path=f"{path}/{index}") for index, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    for keyword in _UNSUPPORTED_IN_STRICT & node.keys():
        del node[keyword]
    properties = node.get("properties")
    if isinstance(properties, dict):
        required = set(node.get("required", ()))
        for key, subschema in properties.items():
            if key not in required and not _admits_null(subschema):
                raise ValueError(f"{path}/properties/{key}: optional but not nullable; strict mode requires every key")
        node["required"] = list(properties)
        node["additionalProperties"] = False
    for keyword, value in list(node.items()):
        if keyword in ("properties", "$defs", "definitions") and isinstance(value, dict):
            node[keyword] = {key: _strict(sub, path=f"{path}/{keyword}/{key}") for key, sub in value.items()}
        elif keyword in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
            node[keyword] = _strict(value, path=f"{path}/{keyword}")
    return node


def _admits_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in schema.get("enum", ()) or ("const" in schema and schema["const"] is None):
        return True
    return any(_admits_null(option) for keyword in ("anyOf", "oneOf") for option in schema.get(keyword, ()))
