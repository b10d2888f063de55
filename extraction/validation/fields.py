"""Per-field trust (VAL-4): what one judgement's checks say about each field of the answer.

A client that posts to its ERP only what it may post unseen needs more than the job's verdict:
it needs to know, field by field, whether the value was found printed where its evidence says
and passed every check that read it. ``validation.fields`` answers that, keyed by the field's
path as the checks name it (``invoice_number``, ``totals.gross``, ``lines[0].net_amount``):

- ``verified``: its quote is printed at its evidence (or a reviewer typed it) and every check
  that read it passed; an e-invoice's value is quoted from its printed XML page, so it is the
  element's own value (``element`` names it);
- ``derived``: printed nowhere, computed from trusted fields by the stated ``rule``
  (extraction.validation.derivation: amount due from gross and prepaid, tax from gross and net);
- ``conflicting``: two readings of the document disagree about it;
- ``unverified``: a check that read it failed, or its evidence was not looked for (the tenant
  switched the evidence check off);
- ``missing``: null where the policy needs a value.

``blocking`` says whether the field's status sends the job to review: a field that is not
``verified`` or ``derived`` is blocking exactly when a blocking check put it in doubt, so a job
goes to review exactly when a blocking field is not trusted (or, as ever, a blocking check
failed). A null field no failed check blames is not listed: nothing was claimed, nothing needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from extraction.validation.derivation import Derivation


class FieldStatus(StrEnum):
    VERIFIED = "verified"
    DERIVED = "derived"
    CONFLICTING = "conflicting"
    UNVERIFIED = "unverified"
    MISSING = "missing"


# What a client may post without a person looking.
TRUSTED = frozenset({FieldStatus.VERIFIED, FieldStatus.DERIVED})


class ReadingSource(StrEnum):
    """Who gave a value: the document's own e-invoice XML, the built-in rule extractor, a
    language model, or a reviewer who typed it in."""

    EINVOICE = "einvoice"
    RULES = "rules"
    MODEL = "model"
    REVIEWER = "reviewer"


# The check that re-finds each quote in the document: a value it located is printed there.
EVIDENCE_LOCATED_BY = "evidence_spans"
_FAILED, _PASSED = "failed", "passed"


@dataclass(frozen=True)
class JudgedCheck:
    """One check of a judgement as far as fields go: which it read, which a failure blames."""

    name: str
    status: str  # "passed", "failed" or "skipped"
    blocking: bool
    # Sets: every field of an answer is looked up in every check's (a judgement per job).
    reads: frozenset[str]
    blames: frozenset[str]


Sources = Sequence[ReadingSource] | Mapping[str, Sequence[str]]


def field_trust(
    claimed: Iterable[tuple[str, bool]],
    judged: Sequence[JudgedCheck],
    *,
    sources: Sources,
    attested: frozenset[str] = frozenset(),
    derived: Mapping[str, Derivation] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each field's trust, in the order of ``claimed`` ((path, whether it holds a value)).

    ``sources`` is the reading every value came from, or per path what an earlier judgement
    recorded (a review decision judges the stored answer again); ``attested`` paths were typed
    by a reviewer; ``derived`` values were computed by a rule (extraction.validation.derivation)
    and are as good as the fields they read."""
    derived = derived or {}
    # One pass over the checks (a judgement per job): who read each field, who failed it.
    reading: dict[str, list[JudgedCheck]] = {}
    failing: dict[str, list[JudgedCheck]] = {}
    located: frozenset[str] = frozenset()
    for check in judged:
        for path in check.reads:
            reading.setdefault(path, []).append(check)
        if check.status == _FAILED:
            for path in check.blames:
                failing.setdefault(path, []).append(check)
        if check.name == EVIDENCE_LOCATED_BY:
            located = check.reads - check.blames
    fields: dict[str, dict[str, Any]] = {}
    for path, has_value in claimed:
        doubted, read = failing.get(path, []), reading.get(path, [])
        if not has_value:
            if doubted:
                fields[path] = _entry(FieldStatus.MISSING, read, doubted, sources=[])
            continue
        if path in derived:
            fields[path] = {}  # judged below, once the fields it reads are
            continue
        if doubted:
            status = FieldStatus.UNVERIFIED
        elif path in attested or path in located:
            status = FieldStatus.VERIFIED
        else:
            status = FieldStatus.UNVERIFIED  # the evidence check is off: no one looked
        given = [ReadingSource.REVIEWER] if path in attested else _sources_of(path, sources)
        fields[path] = _entry(status, read, doubted, sources=given)
    for path, derivation in derived.items():
        if path not in fields:
            continue
        doubted = failing.get(path, [])
        inputs = [fields.get(name) or {} for name in derivation.inputs]
        trusted = all(entry.get("status") in TRUSTED for entry in inputs)
        status = FieldStatus.DERIVED if trusted and not doubted else FieldStatus.UNVERIFIED
        given = list(dict.fromkeys(source for entry in inputs for source in entry.get("sources", [])))
        fields[path] = {**_entry(status, reading.get(path, []), doubted, sources=given), "rule": derivation.rule}
    return fields


def with_second_reading(
    fields: Mapping[str, dict[str, Any]],
    check: str,
    *,
    blocking: bool,
    agreed: Iterable[str],
    differing: Iterable[str],
    source: ReadingSource,
) -> dict[str, dict[str, Any]]:
    """``fields`` after a second reading of the document was compared with the first: a value
    both read alike has both sources; one they read differently is ``conflicting``."""
    updated = {path: dict(entry) for path, entry in fields.items()}
    for path in agreed:
        if path in updated:
            entry = updated[path]
            if source.value not in entry["sources"]:
                entry["sources"] = [*entry["sources"], source.value]
            entry["checks"] = [*entry["checks"], check]
    for path in differing:
        if path in updated:
            entry = updated[path]
            entry.update(
                status=FieldStatus.CONFLICTING.value,
                blocking=entry["blocking"] or blocking,
                checks=[*entry["checks"], check],
                failed=[*entry["failed"], check],
            )
    return updated


def with_relocated(fields: Mapping[str, dict[str, Any]], paths: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``fields`` with the evidence of ``paths`` marked as moved to where its quote is printed."""
    moved = set(paths)
    return {path: {**entry, "relocated": True} if path in moved else dict(entry) for path, entry in fields.items()}


def with_elements(fields: Mapping[str, dict[str, Any]], elements: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """``fields`` with the e-invoice element each value was read from (an XPath), where known."""
    return {
        path: {**entry, "element": elements[path]} if path in elements else dict(entry)
        for path, entry in fields.items()
    }


def untrusted_blocking(fields: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The fields that send the job to review: blocking and neither verified nor derived."""
    return [path for path, entry in fields.items() if entry["blocking"] and entry["status"] not in TRUSTED]


def _sources_of(path: str, sources: Sources) -> list[str]:
    if isinstance(sources, Mapping):
        return list(sources.get(path, ()))
    return [source.value for source in sources]


def _entry(
    status: FieldStatus,
    reading: Sequence[JudgedCheck],
    failing: Sequence[JudgedCheck],
    *,
    sources: Sequence[str],
) -> dict[str, Any]:
    # Trusted: blocking when a blocking check vouched for it (its status decides, should the
    # value change); in doubt: blocking when a blocking check put it there.
    blocking = any(check.blocking for check in (reading if status in TRUSTED else failing))
    return {
        "status": status.value,
        "blocking": blocking,
        "sources": list(sources),
        "checks": [check.name for check in reading],
        "failed": [check.name for check in failing],
        "relocated": False,
        "element": None,
        "rule": None,  # a derived value's rule
    }
