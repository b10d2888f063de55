"""Values an invoice does not print but states all the same: computed from other fields by a
stated rule (VAL-4's ``derived``).

An invoice that shows a prepayment but no amount due still says what is due: the gross total
less what was prepaid (EN 16931 BR-CO-16). One that shows net and gross but no tax total still
says the tax: the difference (BR-CO-15). Without them, ``required_fields`` sends such an invoice
to review for a value nobody needs to read. A derived value has no evidence (it is printed
nowhere); it is as good as the values it is computed from, so its field is ``derived`` only when
those are trusted, and its rule is named in the result.

Only a null field is derived, never one a reading gave: a printed value is checked against the
rule by the arithmetic checks instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from extraction.validation.schema import InvoiceV1, InvoiceV2


@dataclass(frozen=True)
class Derivation:
    """One derived value: the field, the rule as the result states it, and the fields it reads."""

    path: str
    rule: str
    inputs: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "inputs": list(self.inputs)}


def derive_missing(invoice: InvoiceV1) -> tuple[InvoiceV1, dict[str, Derivation]]:
    """``invoice`` with the null totals that its other totals state filled in, and how."""
    totals = invoice.totals
    gross, net, prepaid = _amount(totals.gross.value), _amount(totals.net.value), _amount(totals.prepaid.value)
    rounding = _amount(invoice.totals.rounding.value) if isinstance(invoice, InvoiceV2) else None
    derived: dict[str, tuple[Decimal, Derivation]] = {}
    if (
        totals.amount_due.value is None
        and totals.amount_due.evidence is None
        and gross is not None
        and prepaid is not None
    ):
        inputs = ("totals.gross", "totals.prepaid", *(("totals.rounding",) if rounding is not None else ()))
        rule = "amount_due = gross − prepaid" + (" + rounding" if rounding is not None else "")
        derived["totals.amount_due"] = (
            gross - prepaid + (rounding or Decimal(0)),
            Derivation("totals.amount_due", rule, inputs),
        )
    # A tax the reading withheld while pointing at where it is printed is uncertain, not absent
    # (VAL-2: required_fields sends it to review); only a tax printed nowhere is derived.
    if (
        totals.tax.value is None
        and totals.tax.evidence is None
        and gross is not None
        and net is not None
        and gross != net
    ):
        derived["totals.tax"] = (
            gross - net,
            Derivation("totals.tax", "tax = gross − net", ("totals.net", "totals.gross")),
        )
    if not derived:
        return invoice, {}
    data = invoice.to_json_dict()
    for path, (value, _) in derived.items():
        data["totals"][path.removeprefix("totals.")] = {"value": str(value), "evidence": None}
    filled = type(invoice).model_validate(data, by_alias=True)
    return filled, {path: derivation for path, (_, derivation) in derived.items()}


def _amount(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        amount = Decimal(value.strip())
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None
