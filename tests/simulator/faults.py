"""What the "model" answers when a fault strikes: injections obeyed, IBANs invented, JSON cut off."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

from extraction.intake.text import DocumentText

_INJECTION = re.compile(
    r"ignore\s+(?:all\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier)\s+(?:instructions|rules|prompts?)",
    re.IGNORECASE,
)
_URL = re.compile(r"https?://[^\s\"'<>]+")
_SET_DIRECTIVE = re.compile(
    r"\bset\s+(?:the\s+)?(?P<field>[a-z][a-z_ ]*?)\s+to\s+(?P<value>\"[^\"]*\"|'[^']*'|\S+)", re.IGNORECASE
)


def injected_instructions(document: DocumentText) -> dict[str, Any] | None:
    """What an obedient model would do with an injection in ``document``, or None if it has none.

    The text after "ignore previous instructions" is read for a URL to send the result to
    (becomes ``callback_url``) and for "set <field> to <value>" directives.
    """
    text = document.full_text
    match = _INJECTION.search(text)
    if match is None:
        return None
    tail = text[match.end() :]
    orders: dict[str, Any] = {"set": {}}
    url = _URL.search(tail)
    if url:
        orders["callback_url"] = url.group(0).rstrip(".,;)")
    for directive in _SET_DIRECTIVE.finditer(tail):
        field = directive["field"].strip().lower().replace(" ", "_")
        value = directive["value"]
        value = value[1:-1] if value[:1] in "\"'" else value.rstrip(".,;")
        orders["set"][field] = value
    return orders


def obey_injection(answer: dict[str, Any], orders: Mapping[str, Any]) -> dict[str, Any]:
    obeyed = json.loads(json.dumps(answer))
    if "callback_url" in orders:
        obeyed["callback_url"] = orders["callback_url"]
    for field, value in orders["set"].items():
        # "set the supplier iban to ..." names the field "iban" in the answer's terms.
        if not _replace_field(obeyed, field, value) and not _replace_field(obeyed, field.split("_")[-1], value):
            obeyed[field] = value
    return obeyed


def _replace_field(node: Any, field: str, value: Any) -> bool:
    """Set every ``field`` in the nested answer (its ``value`` if it is an evidenced field)."""
    found = False
    if isinstance(node, dict):
        for key, current in node.items():
            if key.lower() == field:
                found = True
                if isinstance(current, dict) and "value" in current:
                    current["value"] = _like(current["value"], value)
                else:
                    node[key] = _like(current, value)
            else:
                found = _replace_field(current, field, value) or found
    elif isinstance(node, list):
        for item in node:
            found = _replace_field(item, field, value) or found
    return found


def _like(current: Any, value: Any) -> Any:
    """``value`` as a number when the field held one, so the answer stays schema-shaped."""
    if isinstance(current, (int, float)) and not isinstance(current, bool):
        try:
            return float(value) if isinstance(current, float) else int(value)
        except ValueError:
            return value
    return value


def invent_iban(rng: random.Random) -> str:
    """A German IBAN with valid check digits (ISO 13616 mod 97) that belongs to nobody we know."""
    bban = "".join(str(rng.randrange(10)) for _ in range(18))
    check = 98 - int(bban + "131400") % 97  # "DE00" as digits: D=13, E=14
    return f"DE{check:02d}{bban}"


def hallucinate(answer: dict[str, Any], document: DocumentText, rng: random.Random) -> dict[str, Any]:
    """The answer with a schema-perfect invented IBAN in place of the real one (VAL-1).

    Its evidence still resolves in the document, to text of the right length that is not the
    IBAN: a check that only asks "does the span exist and match its quote" passes; one that asks
    "does the quote say this value" does not.
    """
    invented = json.loads(json.dumps(answer))
    iban_field = invented["supplier"]["iban"]
    real = iban_field.get("evidence")
    iban_field["value"] = invent_iban(rng)
    iban_field["evidence"] = _evidence_elsewhere(document, len(real["quote"]) if real else 22, avoid=real)
    return invented


def _evidence_elsewhere(document: DocumentText, length: int, avoid: Mapping[str, Any] | None) -> dict[str, Any] | None:
    for page, text in enumerate(document.pages, start=1):
        for start in range(0, max(1, len(text) - length + 1), max(1, length)):
            end = min(start + length, len(text))
            overlaps = avoid is not None and avoid["page"] == page and start < avoid["end"] and avoid["start"] < end
            if end > start and not overlaps:
                return {"page": page, "start": start, "end": end, "quote": text[start:end]}
    return None


def malformed(content: str) -> str:
    """A cut-off answer: starts like our JSON, does not parse."""
    return content[: max(1, len(content) // 2)]
