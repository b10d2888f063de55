"""The API's error answers in the published OpenAPI document.

Every 4xx/5xx body is RFC 9457 problem details (config/problems.py). An operation documents
each status it can answer, with the problem types that status carries there:

* the statuses its mechanics imply are added here, by :func:`problem_responses_hook`, from the
  operation itself: content negotiation (406, every DRF view), credentials (401, and 403 for a
  session without a tenant or a failed CSRF check), an id in the path (404), a request body
  (400, 413, 415);
* the statuses its own code raises are declared on the view with :func:`problems`, next to
  the raise sites.

Both land as ``application/problem+json`` with the ``Problem`` component narrowed to the types
listed; 429 and 503 also document ``Retry-After``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from drf_spectacular.utils import OpenApiResponse

from config.problems import PROBLEM_CONTENT_TYPE, TYPE_BASE

PROBLEM_REF = "#/components/schemas/Problem"
# A view's declaration travels to the hook inside the raw response schema under this key;
# the hook replaces the whole schema, so the key never reaches the published document.
_DECLARED = "x-problem-types"
_RETRY_AFTER_STATUSES = ("429", "503")

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details. Clients switch on `type`; the other members explain it.",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string", "format": "uri-reference", "description": "Stable, e.g. `/problems/not-found`."},
        "title": {"type": "string"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599, "description": "The HTTP status."},
        "detail": {"type": "string", "description": "This occurrence, in words."},
        "instance": {"type": "string", "format": "uri-reference", "description": "The request path."},
        "errors": {
            "type": "object",
            "description": "validation-error: the messages per field (nested for nested objects and list items).",
            "additionalProperties": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "object"}]},
        },
        "job_id": {
            "type": "string",
            "format": "uuid",
            "description": "idempotency-key-conflict: the job the key was first used for.",
        },
        "limit": {"type": "string", "description": "tenant-limit-exceeded: which limit."},
        "current": {"type": "integer", "description": "tenant-limit-exceeded: the tenant's use of that limit."},
        "maximum": {"type": "integer", "description": "tenant-limit-exceeded: the limit's value."},
        "limit_bytes": {"type": "integer", "description": "payload-too-large: the largest body read."},
    },
}

RETRY_AFTER_HEADER: dict[str, Any] = {
    "description": "Seconds to wait before trying again.",
    "required": True,
    "schema": {"type": "integer", "minimum": 0},
}

# What the shared mechanics answer, by status: problem type → when.
_NEGOTIATION = {"406": {"not-acceptable": "The Accept header admits no media type the operation answers in."}}
_CREDENTIALS: dict[str, dict[str, str]] = {
    "401": {
        "not-authenticated": "No credentials were sent.",
        "authentication-failed": "The bearer token is malformed, unknown or revoked.",
    },
    "403": {
        "permission-denied": "The session's user belongs to no tenant, or the session's CSRF check failed.",
    },
}
_PATH_ID = {"404": {"not-found": "No such object of this tenant; another tenant's id answers exactly the same."}}
_BODY: dict[str, dict[str, str]] = {
    "400": {
        "malformed-request-body": "The body cannot be parsed as its Content-Type.",
        "validation-error": "A field is missing, invalid or unknown; `errors` names each.",
    },
    "413": {"payload-too-large": "The body is larger than `limit_bytes`."},
    "415": {"unsupported-media-type": "The Content-Type is not one this operation reads."},
}
_MULTIPART = {"400": {"bad-request": "The multipart body has more parts than the server reads."}}


def problems(declared: Mapping[int, Mapping[str, str]]) -> dict[tuple[int, str], OpenApiResponse]:
    """``@extend_schema(responses={…, **problems({409: {"idempotency-key-conflict": "When."}})})``:
    the problem types a view raises itself, by status."""
    return {
        (status, PROBLEM_CONTENT_TYPE): OpenApiResponse(response={_DECLARED: dict(types)})
        for status, types in declared.items()
    }


def document_problem_types(operation: dict[str, Any], status: str, types: Mapping[str, str]) -> None:
    """Add ``types`` (problem type → when) to the operation's ``status`` answer."""
    response = operation.setdefault("responses", {}).setdefault(status, {})
    known: dict[str, list[str]] = response.setdefault(_DECLARED, {})
    for slug, when in types.items():
        if when not in known.setdefault(slug, []):
            known[slug].append(when)


def _render(label: str, status: str, response: dict[str, Any]) -> None:
    known: dict[str, list[str]] = response.pop(_DECLARED)
    if not known:
        # An error answer declared some other way would be published as a problem of no type.
        raise ImproperlyConfigured(f"{label} documents {status} without a problem type: declare it with problems().")
    slugs = sorted(known)
    response["description"] = "\n".join(f"- `{TYPE_BASE}{slug}`: {' Or: '.join(known[slug])}" for slug in slugs)
    narrowed = {"type": {"enum": [TYPE_BASE + slug for slug in slugs]}, "status": {"enum": [int(status)]}}
    response["content"] = {
        PROBLEM_CONTENT_TYPE: {"schema": {"allOf": [{"$ref": PROBLEM_REF}, {"properties": narrowed}]}}
    }
    if status in _RETRY_AFTER_STATUSES:
        response.setdefault("headers", {})["Retry-After"] = RETRY_AFTER_HEADER


def _declared_on_view(response: dict[str, Any]) -> dict[str, str]:
    schema = response.get("content", {}).get(PROBLEM_CONTENT_TYPE, {}).get("schema", {})
    return schema.get(_DECLARED, {})


def _error_statuses(responses: dict[str, Any]) -> list[str]:
    return [status for status in responses if status.isdigit() and int(status) >= 400]


def _implied(operation: dict[str, Any]) -> list[dict[str, dict[str, str]]]:
    implied = [_NEGOTIATION]
    if operation.get("security"):
        implied.append(_CREDENTIALS)
    if any(parameter.get("in") == "path" for parameter in operation.get("parameters", [])):
        implied.append(_PATH_ID)
    body = operation.get("requestBody", {}).get("content", {})
    if body:
        implied.append(_BODY)
    if "multipart/form-data" in body:
        implied.append(_MULTIPART)
    return implied


def problem_responses_hook(result: dict[str, Any], **_hook_arguments: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"], after
    any hook that calls :func:`document_problem_types`): the Problem component and every
    operation's error answers, rendered as described above."""
    result.setdefault("components", {}).setdefault("schemas", {})["Problem"] = copy.deepcopy(PROBLEM_SCHEMA)
    for path, methods in result.get("paths", {}).items():
        for method, operation in methods.items():
            responses = operation.setdefault("responses", {})
            for status in _error_statuses(responses):
                on_view = _declared_on_view(responses[status])
                by_hooks = responses[status].get(_DECLARED, {})
                responses[status] = {_DECLARED: {slug: list(whens) for slug, whens in by_hooks.items()}}
                document_problem_types(operation, status, on_view)
            for statuses in _implied(operation):
                for status, types in statuses.items():
                    document_problem_types(operation, status, types)
            for status in _error_statuses(responses):
                _render(f"{method.upper()} {path}", status, responses[status])
            operation["responses"] = dict(sorted(responses.items()))
    return result
