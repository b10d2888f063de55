"""Two readings of one document made one answer (VAL-4): the rules' and a model's.

The rule extractor reads a document in milliseconds and is exact where it finds something; a
small model reads more and invents more. So the rules read first: when their reading alone
passes the tenant's policy (:func:`rules_settle`), it is the answer and no model is asked (no
tokens, no wait). Only a document the rules could not settle is read by the model too, and the
two readings make one answer. A value both read alike is stronger than either reading alone
(two independent readers rarely invent the same wrong value); where they differ, the value
whose evidence re-resolves and passes every check that reads it is kept, and if that does not
decide, the field conflicts and the job goes to a person.

Field by field (the paths of :meth:`InvoiceV1.fields`):

- both read it alike: the model's node (value and evidence) is kept, sources rules + model;
- only the rules read it: the rules' node;
- only the model read it: the model's node, unless its quote is printed nowhere in the
  document (``evidence_spans`` failed it): such a value is left out of the answer and recorded
  in the check's ``left_out`` (a value nobody can point at is not posted; if the field is
  needed, it is ``missing`` and the job goes to review as it would have);
- they differ: each reading is first judged on its own by the tenant's policy; the value that
  is ``verified`` in its own judgement while the other is not wins (``resolved``); otherwise the
  field is ``conflicting`` (``readings_agree`` fails, blocking) and the rules' value is the one
  kept for the reviewer to confirm or correct.

Line items are compared position by position when both readings found as many lines. When the
counts differ, positions mean nothing: the block of lines whose every value its own judgement
verified is taken whole, and its lines are that reading's; if both or neither are, the rules'.

Where nothing settles a disagreement, the rules win because they were the more precise reader
on every field: on 60 corpus documents (eval/accuracy.py --provider local --sample 60) their
precision was 100 % on 10 of 13 header fields and totals (supplier name 96 %, VAT id 98 %, due
date 74 %) and 88–100 % on line fields; a 1.5B local model's 64–100 % and 66–86 %.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

from extraction.validation.evidence import node_at
from extraction.validation.fields import EVIDENCE_LOCATED_BY, TRUSTED, FieldStatus, ReadingSource, Sources
from extraction.validation.policy import BLOCKING, FAILED, PASSED, ValidationOutcome
from extraction.validation.schema import InvoiceV1
from extraction.validation.suppliers import comparable_name

CHECK = "readings_agree"
REASON = "rules_and_model_disagree"


class ReadingMode(StrEnum):
    """Who reads a document for a model policy (``MODEL_POLICIES[name]["reading"]``)."""

    MODEL = "model"  # the policy's provider alone
    RULES_AND_MODEL = "rules_and_model"  # the rules beside it, read together


# The tenant's policy on an answer, its values from these sources (as the completion judges it).
Judge = Callable[[InvoiceV1, Sources], ValidationOutcome]


@dataclass(frozen=True)
class ReadTogether:
    """The answer the two readings make, who gave each value, and the ``readings_agree`` check."""

    invoice: InvoiceV1
    sources: dict[str, list[str]]
    check: dict[str, Any]
    conflicting: tuple[str, ...]
    taken_from_rules: tuple[str, ...]  # the paths whose value and evidence are the rules'


def rules_settle(outcome: ValidationOutcome) -> bool:
    """Whether the rules' reading, judged alone, is the answer: the policy accepts it, so a model
    would be asked only to confirm what needs no confirming."""
    return not outcome.review_required


def read_together(rules: InvoiceV1, model: InvoiceV1, judge: Judge) -> ReadTogether:
    """One answer from ``rules`` and ``model`` (the same schema), judging each on its own with
    ``judge`` (see the module's docstring). The model's reading changes the rules' values (a gap
    it fills, a disagreement its value wins, a block of lines) only when the answer it makes then
    passes the policy; otherwise the document goes to a person anyway, the rules' values stand,
    and what the model read instead is listed for the reviewer (``proposed``, ``differing``)."""
    rules_trust = judge(rules, (ReadingSource.RULES,)).fields
    model_trust = judge(model, (ReadingSource.MODEL,)).fields
    merged = _merged(rules, model, rules_trust, model_trust, model_may_change=True)
    if not judged_together(judge(merged.invoice, merged.sources), merged).review_required:
        return merged
    return _merged(rules, model, rules_trust, model_trust, model_may_change=False)


def _merged(
    rules: InvoiceV1,
    model: InvoiceV1,
    rules_trust: dict[str, Any],
    model_trust: dict[str, Any],
    *,
    model_may_change: bool,
) -> ReadTogether:
    rules_values, model_values = dict(rules.fields()), dict(model.fields())
    data, rules_data = model.to_json_dict(), rules.to_json_dict()
    lines_from = _line_block(rules, model, rules_trust, model_trust)
    proposed: list[dict[str, Any]] = []
    if lines_from is ReadingSource.MODEL and not model_may_change:
        proposed += [
            {"field": path, "model": field.value}
            for path, field in model.fields()
            if _is_line(path) and field.value is not None
        ]
        lines_from = ReadingSource.RULES
    if lines_from is ReadingSource.RULES:
        data["lines"] = rules_data["lines"]
    sources: dict[str, list[str]] = {}
    taken: list[str] = []
    compared: list[str] = []
    resolved: list[dict[str, Any]] = []
    differing: list[dict[str, Any]] = []
    left_out: list[dict[str, Any]] = []

    def take_rules(path: str) -> bool:
        try:
            node_at(data, path).update(node_at(rules_data, path))
        except (KeyError, IndexError):
            return False  # a list item (an allowance) only the rules have: the model's shape stays
        sources[path] = [ReadingSource.RULES.value]
        taken.append(path)
        return True

    for path in dict.fromkeys([*model_values, *rules_values]):
        if lines_from is not None and _is_line(path):
            block = rules_values if lines_from is ReadingSource.RULES else model_values
            if _value(block, path) is not None:
                sources[path] = [lines_from.value]
                if lines_from is ReadingSource.RULES:
                    taken.append(path)
            continue
        rule_value, model_value = _value(rules_values, path), _value(model_values, path)
        if rule_value is None and model_value is None:
            continue
        if model_value is None:
            take_rules(path)
        elif rule_value is None:
            if _printed_nowhere(model_trust, path):
                node_at(data, path).update(value=None, evidence=None)
                left_out.append({"field": path, "model": model_value})
            elif model_may_change:
                sources[path] = [ReadingSource.MODEL.value]
            else:
                node_at(data, path).update(value=None, evidence=None)
                proposed.append({"field": path, "model": model_value})
        elif same_value(path, rule_value, model_value):
            compared.append(path)
            sources[path] = [ReadingSource.RULES.value, ReadingSource.MODEL.value]
        else:
            compared.append(path)
            rules_ok, model_ok = _trusted(rules_trust, path), _trusted(model_trust, path)
            reading = {"field": path, "rules": rule_value, "model": model_value}
            if rules_ok and not model_ok and take_rules(path):
                resolved.append({**reading, "kept": ReadingSource.RULES.value})
            elif model_ok and not rules_ok and model_may_change:
                sources[path] = [ReadingSource.MODEL.value]
                resolved.append({**reading, "kept": ReadingSource.MODEL.value})
            else:
                # Nothing settles it: the reviewer sees the rules' value, the more precise reader's.
                if not take_rules(path):
                    sources[path] = [ReadingSource.MODEL.value]
                differing.append(reading)
    check = {
        "check": CHECK,
        "status": FAILED if differing else PASSED,
        "severity": BLOCKING,
        "reason": REASON if differing else None,
        "field": differing[0]["field"] if differing else None,
        "detail": {
            "compared": compared,
            "resolved": resolved,
            "differing": differing,
            "left_out": left_out,
            "proposed": proposed,
            "lines_from": lines_from.value if lines_from is not None else "both",
        },
    }
    return ReadTogether(
        invoice=type(model).model_validate(data, by_alias=True),
        sources=sources,
        check=check,
        conflicting=tuple(item["field"] for item in differing),
        taken_from_rules=tuple(taken),
    )


def judged_together(outcome: ValidationOutcome, together: ReadTogether) -> ValidationOutcome:
    """The combined answer's judgement with ``readings_agree``: a field the readings left in
    conflict is ``conflicting`` and blocks."""
    agreed = [path for path in together.check["detail"]["compared"] if path not in together.conflicting]
    return outcome.with_second_reading(
        together.check, source=ReadingSource.RULES, agreed=agreed, differing=together.conflicting
    )


def same_value(path: str, first: str, second: str) -> bool:
    """Whether two readings of a field say the same: amounts as numbers ("19" and "19.00"),
    identifiers without spaces and case, names without case and runs of blanks."""
    leaf = path.rsplit(".", 1)[-1]
    if path.startswith("totals.") or leaf in _NUMERIC:
        try:
            return Decimal(first.strip()) == Decimal(second.strip())
        except InvalidOperation:
            pass
    if leaf in ("iban", "vat_id", "invoice_number"):
        return re.sub(r"\s", "", first).upper() == re.sub(r"\s", "", second).upper()
    if leaf == "name":
        # As the master-data check compares names: punctuation and case do not identify a party.
        return comparable_name(first) == comparable_name(second)
    return " ".join(first.split()).casefold() == " ".join(second.split()).casefold()


_NUMERIC = frozenset(
    {
        "quantity",
        "unit_price",
        "net_amount",
        "tax_rate",
        "tax_amount",
        "amount",
        "base_amount",
        "percentage",
        "rate",
        "taxable_amount",
        "price_base_quantity",
    }
)


def _line_block(
    rules: InvoiceV1, model: InvoiceV1, rules_trust: dict[str, Any], model_trust: dict[str, Any]
) -> ReadingSource | None:
    """Whose lines to take whole when the readings found different numbers of lines (None: the
    same number, compared position by position)."""
    if len(rules.lines) == len(model.lines):
        return None
    if not rules.lines or not model.lines:
        return ReadingSource.RULES if rules.lines else ReadingSource.MODEL
    rules_clean = _all_trusted(rules_trust, "lines[")
    model_clean = _all_trusted(model_trust, "lines[")
    return ReadingSource.MODEL if model_clean and not rules_clean else ReadingSource.RULES


def _all_trusted(trust: dict[str, Any], prefix: str) -> bool:
    return all(entry["status"] in TRUSTED for path, entry in trust.items() if path.startswith(prefix))


def _printed_nowhere(trust: dict[str, Any], path: str) -> bool:
    return path in trust and EVIDENCE_LOCATED_BY in trust[path]["failed"]


def _trusted(trust: dict[str, Any], path: str) -> bool:
    return path in trust and trust[path]["status"] == FieldStatus.VERIFIED


def _is_line(path: str) -> bool:
    return path.startswith("lines[")


def _value(values: dict[str, Any], path: str) -> str | None:
    field = values.get(path)
    return None if field is None else field.value
