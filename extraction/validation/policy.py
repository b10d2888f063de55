"""The validation policy: whether an ``invoice.v1`` answer may go to the ERP (VAL-1, VAL-2).
A schema-valid answer is checked against its own arithmetic, the tenant's policy and master
data, and the document it quotes. Every check runs, so a reviewer sees every problem at once; a
failed *blocking* check sends the job to REVIEW_REQUIRED, a failed *warning* does not.

Policy ``invoice-checks.3`` — the checks, in order, with their default severity:

================== ========= ===============================================================
check              default   what must hold
================== ========= ===============================================================
field_types        blocking  amounts/quantities/rates are decimal strings, dates real
                             ``YYYY-MM-DD`` dates, the currency a three-letter code
line_amounts       warning   per line: net = quantity × unit price; tax = net × rate. Only a
                             warning: invoice.v1 has no price base quantity (BT-149) or line
                             allowances; ``lines_sum`` binds the line nets to the totals
lines_sum          blocking  Σ line nets − allowances + charges = net total (skipped for
                             invoices without lines, e.g. Factur-X MINIMUM / BASIC WL); the
                             reason says which way: ``line_items_incomplete`` (short, with the
                             missing amount) or ``line_items_exceed``. An invoice.v1 answer
                             read from an e-invoice counts the document-level allowances and
                             charges its XML states, which v1 has no place for
tax_by_rate        blocking  tax total = Σ over rate groups of round(Σ group nets × rate)
                             (EN 16931 BR-CO-17: VAT is computed per rate group, not per line)
totals_sum         blocking  net + tax = gross (an absent tax total reads as 0)
amount_due         blocking  amount due = gross − prepaid (an absent prepaid reads as 0)
currency_allowed   blocking  currency in ``tenant.allowed_currencies``
supplier_master_   blocking  the supplier (by VAT id, else exact name) is in the tenant's master
data                         data with matching name and IBAN; skipped for a tenant without
                             supplier records (``no_supplier_master_data``)
iban_checksum      blocking  ISO 13616: country format and mod-97 (python-stdnum)
vat_id_format      blocking  country format and check digits (python-stdnum), also of a bare
                             Turkish VKN/TCKN on an invoice that shows it is Turkish; a failing
                             id passes only when the tenant's master data lists exactly it
evidence_spans     blocking  every non-null value has evidence whose quote is exactly the
                             stored document text at (page, start, end)
evidence_values    blocking  that quote says the value: a real span quoted for an invented
                             value is caught here
required_fields    blocking  supplier name, invoice number, issue date, currency, net and
                             gross totals, a net amount on every line; tax unless net = gross;
                             amount due when prepaid is shown; no null with evidence (VAL-2)
visible_matches_   blocking  for a PDF that embeds an e-invoice (Factur-X/ZUGFeRD): the gross
embedded                     total, tax total, amount due and IBAN of the answer are printed on
                             the PDF's visible pages too, since the visible copy is what the
                             supplier signed off (``visible_and_embedded_disagree``)
================== ========= ===============================================================

Arithmetic is Decimal, rounded ROUND_HALF_UP to the currency's unit (0.01, or 1 for JPY, HUF,
...) before comparing, with one unit of tolerance per rounded amount; signs are kept, so credit
notes satisfy the same equations. ``tenant.validation_overrides`` sets a check to "blocking",
"warning" or "off"; unknown keys and values are ignored, so a typo never switches a check off.
Results keep the ``POLICY_VERSION`` and severities they were judged by.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, NamedTuple

import stdnum
from stdnum import iban as stdnum_iban
from stdnum.eu import vat as stdnum_eu_vat
from stdnum.exceptions import InvalidChecksum
from stdnum.exceptions import ValidationError as StdnumValidationError

from accounts.models import Tenant
from config import tracing
from config.db import prepared_cursor
from config.sql import load_statements
from extraction.intake.text import DocumentText
from extraction.validation.derivation import Derivation
from extraction.validation.evidence import printed_numbers, quote_supports
from extraction.validation.fields import (
    JudgedCheck,
    ReadingSource,
    Sources,
    field_trust,
    with_elements,
    with_relocated,
    with_second_reading,
)
from extraction.validation.locale import (
    TURKISH_TAX_ID_LABEL,
    TURKISH_TAX_ID_SCHEMES,
    TURKISH_TAX_OFFICE_LABEL,
)
from extraction.validation.policy_cache import policies
from extraction.validation.schema import FieldValue, FieldValueError, InvoiceV1, InvoiceV2
from extraction.validation.suppliers import comparable_name, normalize_iban, normalize_vat_id

# .3: lines_sum names its direction (line_items_incomplete / _exceed) and counts an e-invoice's
# document-level allowances and charges in a v1 answer. .4: possible_duplicate. .5:
# bundle_part_one_invoice.
POLICY_VERSION = "invoice-checks.5"

BLOCKING = "blocking"
WARNING = "warning"
OFF = "off"
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"

DEFAULT_SEVERITIES: dict[str, str] = {
    "field_types": BLOCKING,
    "line_amounts": WARNING,
    "lines_sum": BLOCKING,
    "tax_by_rate": BLOCKING,
    "totals_sum": BLOCKING,
    "amount_due": BLOCKING,
    "currency_allowed": BLOCKING,
    "supplier_master_data": BLOCKING,
    "iban_checksum": BLOCKING,
    "vat_id_format": BLOCKING,
    "evidence_spans": BLOCKING,
    "evidence_values": BLOCKING,
    "required_fields": BLOCKING,
    "visible_matches_embedded": BLOCKING,
    # Judged when the job completes, against the tenant's other jobs (extraction.validation.duplicates).
    "possible_duplicate": BLOCKING,
    # Judged for a bundle's part, on its pages (extraction.validation.bundle_parts).
    "bundle_part_one_invoice": BLOCKING,
}
CHECKS = tuple(DEFAULT_SEVERITIES)

CENT = Decimal("0.01")
HUNDRED = Decimal(100)
# Currencies invoiced in whole units: amounts and VAT are rounded to 1, not 0.01 (JPY, KRW have
# no minor unit; Hungarian VAT law rounds forint amounts to whole forints).
WHOLE_UNIT_CURRENCIES = frozenset({"JPY", "KRW", "HUF", "ISK", "CLP", "VND", "PYG", "UGX", "XAF", "XOF"})

# lines_sum's reasons: the lines add up to less than the net total, or to more.
LINE_ITEMS_INCOMPLETE = "line_items_incomplete"
LINE_ITEMS_EXCEED = "line_items_exceed"

REQUIRED_FIELDS = ("supplier.name", "invoice_number", "issue_date", "currency", "totals.net", "totals.gross")
# Longest quote accepted as evidence for a number, date, code or identifier (and for a name or
# description): a quote of half a page would "contain" almost any value.
MAX_VALUE_QUOTE = 64
MAX_TEXT_QUOTE = 400
# Payment terms and reasons are sentences, sometimes a paragraph (an insurer's terms).
MAX_NOTE_QUOTE = 2000
_NOTE_FIELDS = ("payment_terms", "reason", "exemption_reason")

_AMOUNT_FIELDS = (
    "quantity",
    "unit_price",
    "net_amount",
    "tax_rate",
    "tax_amount",
    # invoice.v2
    "price_base_quantity",
    "amount",
    "base_amount",
    "percentage",
    "rate",
    "taxable_amount",
)
# Codes compared as written (a VAT category "S", a reason code "95", "VATEX-EU-IC").
_CODE_FIELDS = ("tax_category", "category", "reason_code", "exemption_reason_code")
_TOTAL_FIELDS = ("net", "tax", "gross", "prepaid", "amount_due")
# The kinds field_types parses (a text field cannot fail it, so it does not read one).
_TYPED_KINDS = ("amount", "date", "currency")


# --- outcome ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValidationOutcome:
    review_required: bool
    policy_version: str
    checks: list[dict[str, Any]]
    reasons: list[str]  # reason codes of the failed blocking checks, in check order
    severities: dict[str, str] = field(default_factory=dict)  # the effective policy applied
    # The revision of the tenant's policy judged with (None: not read from a tenant).
    tenant_policy_revision: int | None = None
    # Each field's trust (extraction.validation.fields), by its path.
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        judged = {
            "policy_version": self.policy_version,
            "review_required": self.review_required,
            "reasons": list(self.reasons),
            "severities": dict(self.severities),
            "checks": [dict(check) for check in self.checks],
            "fields": {path: dict(entry) for path, entry in self.fields.items()},
        }
        if self.tenant_policy_revision is not None:
            judged["tenant_policy_revision"] = self.tenant_policy_revision
        return judged

    def with_second_reading(
        self, check: dict[str, Any], *, source: ReadingSource, agreed: Iterable[str], differing: Iterable[str]
    ) -> ValidationOutcome:
        """This outcome with one more check judged outside the policy: ``source``'s reading of
        the same document compared with the judged one (``agreed`` and ``differing`` paths). A
        failed blocking one is a review reason like any other; a differing field conflicts."""
        reasons = list(self.reasons)
        if check["status"] == FAILED and check["severity"] == BLOCKING and check["reason"] not in reasons:
            reasons.append(check["reason"])
        return replace(
            self,
            review_required=bool(reasons),
            checks=[*self.checks, check],
            reasons=reasons,
            severities={**self.severities, check["check"]: check["severity"]},
            fields=with_second_reading(
                self.fields,
                check["check"],
                blocking=check["severity"] == BLOCKING,
                agreed=agreed,
                differing=differing,
                source=source,
            ),
        )

    def with_check(self, check: dict[str, Any]) -> ValidationOutcome:
        """This outcome with one more check judged outside the policy, about the job rather
        than a value (a possible duplicate): a failed blocking one is a review reason like any
        other; no field's trust changes."""
        reasons = list(self.reasons)
        if check["status"] == FAILED and check["severity"] == BLOCKING and check["reason"] not in reasons:
            reasons.append(check["reason"])
        return replace(
            self,
            review_required=bool(reasons),
            checks=[*(c for c in self.checks if c["check"] != check["check"]), check],
            reasons=reasons,
            severities={**self.severities, check["check"]: check["severity"]},
        )

    def with_relocated(self, paths: Iterable[str]) -> ValidationOutcome:
        """This outcome with the fields whose evidence had to be moved marked so."""
        return replace(self, fields=with_relocated(self.fields, paths))

    def with_elements(self, elements: Mapping[str, str]) -> ValidationOutcome:
        """This outcome with each e-invoice value's element named."""
        return replace(self, fields=with_elements(self.fields, elements))

    def failed(self, severity: str | None = None) -> list[dict[str, Any]]:
        return [c for c in self.checks if c["status"] == FAILED and severity in (None, c["severity"])]


@dataclass(frozen=True)
class SupplierRecord:
    name: str
    vat_id: str
    iban: str


@dataclass(frozen=True)
class MasterData:
    """What the tenant's supplier master data says about this invoice's supplier."""

    has_records: bool
    supplier: SupplierRecord | None
    matched_by: str = ""  # "vat_id" or "name"


@dataclass(frozen=True)
class AmountDueTerms:
    """What an e-invoice's XML says about its amount due beyond gross − prepaid + rounding
    (extraction.einvoice.model.EInvoice), which no answer schema has a field for."""

    # XRechnung's extension BG-DEX-09: payments to third parties, added to the amount due.
    third_party_paid: Decimal = Decimal(0)
    # False: the profile has no prepaid element (Factur-X MINIMUM), so an amount due below the
    # gross total is a prepayment it cannot state, not an error.
    states_prepaid: bool = True


NO_TERMS = AmountDueTerms()


@dataclass(frozen=True)
class TenantPolicy:
    """One revision of a tenant's validation policy, as far as one invoice needs it."""

    revision: int
    allowed_currencies: list[str]
    overrides: dict[str, Any]
    master: MasterData


@dataclass(frozen=True)
class _Result:
    status: str
    reason: str | None = None
    field: str | None = None
    detail: Any = None
    # The fields the check judged (a skipped check judged none), and of those the ones a failure
    # puts in doubt: every input of a failed sum, only the offending field of a failed lookup.
    # They decide each field's status (extraction.validation.fields), never the job's verdict.
    reads: tuple[str, ...] = ()
    blames: tuple[str, ...] = ()


def _skipped(reason: str, detail: Any = None) -> _Result:
    return _Result(SKIPPED, reason=reason, detail=detail)


def _blamed(reason: str, field: str, detail: Any, *, reads: tuple[str, ...] | None = None) -> _Result:
    """A failure that puts one field in doubt (a lookup, a format), having judged ``reads``."""
    return _Result(FAILED, reason, field, detail, reads=_once([*(reads or ()), field]), blames=(field,))


def _once(paths: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))


# --- entry points ------------------------------------------------------------------------------


def validate_extraction(
    *,
    invoice: InvoiceV1,
    document: DocumentText,
    tenant_id: uuid.UUID,
    attested_fields: frozenset[str] = frozenset(),
    policy_revision: int | None = None,
    sources: Sources = (),
    omitted_from_v1: Mapping[str, str] | None = None,
    derived: Mapping[str, Derivation] | None = None,
    amount_due_terms: AmountDueTerms = NO_TERMS,
) -> ValidationOutcome:
    """Judge an extraction by the policy, with the tenant's currencies, overrides and suppliers
    as they are now (one query), or as this process read them under ``policy_revision`` (no
    query; see :func:`tenant_policy`). The outcome names the revision it was judged with.

    ``attested_fields`` are paths a human reviewer typed in (see :mod:`extraction.review.decisions`):
    they have no evidence in the document, so the evidence checks skip them; every other check
    applies to them in full. ``sources`` is who gave the values (see :func:`field_trust`).

    Traced as a child of the attempt's (or the review decision's) span: the verdict, never a value.
    """
    with tracing.step_span("extraction.validate", attributes={"extraction.tenant_id": str(tenant_id)}) as span:
        policy = tenant_policy(tenant_id, invoice, revision=policy_revision)
        outcome = replace(
            check_invoice(
                invoice=invoice,
                document=document,
                allowed_currencies=policy.allowed_currencies,
                overrides=policy.overrides,
                master=policy.master,
                attested_fields=attested_fields,
                sources=sources,
                omitted_from_v1=omitted_from_v1,
                derived=derived,
                amount_due_terms=amount_due_terms,
            ),
            tenant_policy_revision=policy.revision,
        )
        span.set_attributes(
            {
                "extraction.policy_version": outcome.policy_version,
                "extraction.review_required": outcome.review_required,
                "extraction.review_reasons": outcome.reasons,
            }
        )
    return outcome


SQL = load_statements(Path(__file__).with_suffix(".sql"))


def tenant_policy(tenant_id: uuid.UUID, invoice: InvoiceV1, *, revision: int | None = None) -> TenantPolicy:
    """The tenant's allowed currencies and severity overrides, and its supplier row for the
    invoice's VAT id (one indexed lookup) or, when the invoice shows no VAT id, for its exact
    name: one round trip, as the worker validates every answer. Raises Tenant.DoesNotExist.

    With ``revision`` (the one the claim returned), what this process read under that revision
    for the same supplier key is used again, with no round trip; the completion proves the
    revision was still current. Without, the policy as it is now."""
    vat_id = invoice.supplier.vat_id.value
    name = invoice.supplier.name.value
    if vat_id and vat_id.strip():
        matched_by, statement, wanted = "vat_id", SQL["tenant_policy_by_vat_id"], normalize_vat_id(vat_id)
    elif name and name.strip():
        matched_by, statement, wanted = "name", SQL["tenant_policy_by_name"], " ".join(name.split())
    else:
        matched_by, statement, wanted = "", SQL["tenant_policy_without_supplier"], None
    row = policies.get((tenant_id, revision, matched_by, wanted)) if revision is not None else None
    if row is None:
        # Prepared (one statement per match kind): the worker runs it for every answer it has
        # not read under the current revision.
        with prepared_cursor() as cursor:
            cursor.execute(statement, {"tenant": tenant_id, "wanted": wanted}, prepare=True)
            read = cursor.fetchone()
        if read is None:
            raise Tenant.DoesNotExist(f"tenant {tenant_id} does not exist")
        row = (read[0], *(_json(value) for value in read[1:]))
        # Kept under the revision read, which may be newer than the one asked for. Shared by
        # the slots: what is built from it below never changes it.
        policies.put((tenant_id, row[0], matched_by, wanted), row)
    read_revision, currencies, overrides, has_records, candidates = row
    if matched_by == "name":
        wanted_name = comparable_name(name or "")
        candidates = [c for c in candidates if comparable_name(c[0]) == wanted_name]
    record = SupplierRecord(*candidates[0]) if candidates else None
    master = MasterData(has_records=bool(has_records), supplier=record, matched_by=matched_by if record else "")
    return TenantPolicy(read_revision, currencies or [], overrides or {}, master)


def _json(value: Any) -> Any:
    # Django's psycopg backend loads jsonb as text for its JSONField; a bare cursor gets it so.
    return json.loads(value) if isinstance(value, str) else value


def effective_severities(overrides: Mapping[str, Any]) -> dict[str, str]:
    severities = dict(DEFAULT_SEVERITIES)
    for check, severity in (overrides or {}).items():
        if check in severities and severity in (BLOCKING, WARNING, OFF):
            severities[check] = severity
    return severities


def check_invoice(
    *,
    invoice: InvoiceV1,
    document: DocumentText,
    allowed_currencies: Iterable[str],
    overrides: Mapping[str, Any],
    master: MasterData,
    attested_fields: frozenset[str] = frozenset(),
    sources: Sources = (),
    omitted_from_v1: Mapping[str, str] | None = None,
    derived: Mapping[str, Derivation] | None = None,
    amount_due_terms: AmountDueTerms = NO_TERMS,
) -> ValidationOutcome:
    """The policy as a pure function of its inputs (no database): what validate_extraction
    runs, and what the accuracy harness runs with master data of its own. ``omitted_from_v1``
    is an e-invoice's ``allowance_total`` and ``charge_total`` that an invoice.v1 answer of it
    has no place for (extraction.providers.einvoice); ``derived`` are the values
    extraction.validation.derivation computed (no evidence: the evidence checks skip them);
    ``amount_due_terms`` what an e-invoice's XML adds to its amount due."""
    severities = effective_severities(overrides)
    allowed = frozenset(str(code).strip().upper() for code in allowed_currencies)
    facts = _Facts(
        invoice, document, allowed, master, attested_fields, omitted_from_v1 or {}, derived or {}, amount_due_terms
    )
    checks: list[dict[str, Any]] = []
    judged: list[JudgedCheck] = []
    reasons: list[str] = []
    for name in CHECKS:
        severity = severities[name]
        if severity == OFF:
            result = _skipped("disabled_by_tenant_policy")
            severity = DEFAULT_SEVERITIES[name]
        else:
            result = _CHECK_FUNCTIONS[name](facts)
        checks.append(
            {
                "check": name,
                "status": result.status,
                "severity": severity,
                "reason": result.reason,
                "field": result.field,
                "detail": result.detail,
            }
        )
        judged.append(
            JudgedCheck(name, result.status, severity == BLOCKING, frozenset(result.reads), frozenset(result.blames))
        )
        if result.status == FAILED and severity == BLOCKING and result.reason and result.reason not in reasons:
            reasons.append(result.reason)
    return ValidationOutcome(
        review_required=bool(reasons),
        policy_version=POLICY_VERSION,
        checks=checks,
        reasons=reasons,
        severities=severities,
        fields=field_trust(
            ((path, value.value is not None) for path, value in facts.fields),
            judged,
            sources=sources,
            attested=attested_fields,
            derived=derived,
        ),
    )


# --- the facts every check reads ---------------------------------------------------------------


class _Facts:
    """The invoice's values typed once; a value that does not parse reads as absent here
    (``field_types`` reports it)."""

    def __init__(
        self,
        invoice: InvoiceV1,
        document: DocumentText,
        allowed: frozenset[str],
        master: MasterData,
        attested: frozenset[str],
        omitted_from_v1: Mapping[str, str],
        derived: Mapping[str, Derivation],
        amount_due_terms: AmountDueTerms = NO_TERMS,
    ) -> None:
        self.invoice = invoice
        self.derived = derived  # printed nowhere: the evidence checks skip them
        self.document = document
        self.allowed_currencies = allowed
        self.master = master
        self.attested = attested
        # An e-invoice's document-level charges − allowances that an invoice.v1 answer has no
        # place for (None: nothing omitted, or not a number).
        self.omitted_adjustment = _omitted_adjustment(omitted_from_v1) if not isinstance(invoice, InvoiceV2) else None
        self.amount_due_terms = amount_due_terms
        self.fields = list(invoice.fields())
        self.values = dict(self.fields)
        currency = (invoice.currency.value or "").strip().upper()
        # The rounding unit of the invoice's currency: tolerances are counted in it.
        self.unit = Decimal(1) if currency in WHOLE_UNIT_CURRENCIES else CENT
        self.type_errors: list[dict[str, str]] = []
        self.amounts: dict[str, Decimal | None] = {}
        for path, value in self.fields:
            kind = _kind(path)
            try:
                if kind == "amount":
                    self.amounts[path] = value.as_decimal()
                elif kind == "date":
                    value.as_date()
                elif kind == "currency":
                    value.as_currency()
            except FieldValueError as error:
                self.type_errors.append({"field": path, "value": error.value})
                self.amounts[path] = None

    def total(self, name: str) -> Decimal | None:
        return self.amounts.get(f"totals.{name}")

    def line(self, index: int, name: str) -> Decimal | None:
        return self.amounts.get(f"lines[{index}].{name}")

    @property
    def line_count(self) -> int:
        return len(self.invoice.lines)

    @property
    def is_credit_note(self) -> bool:
        return self.invoice.document_type.value == "credit_note"

    def amount(self, path: str) -> Decimal | None:
        return self.amounts.get(path)

    def adjustments(self, prefix: str = "") -> list[tuple[Decimal | None, Decimal | None]] | None:
        """invoice.v2's allowances (negative) and charges (positive) at ``prefix`` ("" for the
        document's, "lines[2]." for a line's) as (signed amount, VAT rate); None for invoice.v1,
        which carries none."""
        if not isinstance(self.invoice, InvoiceV2):
            return None
        owner: Any = self.invoice if not prefix else self.invoice.lines[int(prefix[6:-2])]
        found: list[tuple[Decimal | None, Decimal | None]] = []
        for kind, sign in (("allowances", -1), ("charges", 1)):
            for index in range(len(getattr(owner, kind))):
                amount = self.amounts.get(f"{prefix}{kind}[{index}].amount")
                found.append(
                    (None if amount is None else sign * amount, self.amounts.get(f"{prefix}{kind}[{index}].tax_rate"))
                )
        return found

    def adjustment_paths(self, prefix: str = "", *, amounts_only: bool = False) -> list[str]:
        """The paths of the allowances' and charges' amounts (and VAT rates) at ``prefix`` that
        :meth:`adjustments` reads: none for invoice.v1."""
        if not isinstance(self.invoice, InvoiceV2):
            return []
        owner: Any = self.invoice if not prefix else self.invoice.lines[int(prefix[6:-2])]
        names = ("amount",) if amounts_only else ("amount", "tax_rate")
        return [
            path
            for kind in ("allowances", "charges")
            for index in range(len(getattr(owner, kind)))
            for name in names
            if self.amounts.get(path := f"{prefix}{kind}[{index}].{name}") is not None
        ]

    def document_adjustment(self) -> Decimal | None:
        """Σ document charges − Σ document allowances, None if one is unreadable; for invoice.v1,
        what its e-invoice states and v1 omitted (0 if nothing was)."""
        adjustments = self.adjustments()
        if adjustments is None:
            return self.omitted_adjustment or Decimal(0)
        if any(amount is None for amount, _ in adjustments):
            return None
        return sum((amount for amount, _ in adjustments if amount is not None), Decimal(0))


def _omitted_adjustment(omitted: Mapping[str, str]) -> Decimal | None:
    try:
        adjustment = Decimal(omitted.get("charge_total") or 0) - Decimal(omitted.get("allowance_total") or 0)
    except ArithmeticError:
        return None
    return adjustment or None


def _line_paths(f: _Facts, name: str) -> list[str]:
    return [f"lines[{index}].{name}" for index in range(f.line_count)]


def _present(f: _Facts, *paths: str) -> tuple[str, ...]:
    """Those of ``paths`` that hold a value (an absent tax total reads as 0: nothing was read)."""
    return tuple(path for path in paths if path in f.values and f.values[path].value is not None)


def _kind(path: str) -> str:
    leaf = path.rsplit(".", 1)[-1]
    if path.startswith("totals.") or leaf in _AMOUNT_FIELDS:
        return "amount"
    if leaf in ("issue_date", "due_date"):
        return "date"
    if leaf == "currency":
        return "currency"
    if leaf in ("iban", "vat_id") or leaf in _CODE_FIELDS:
        return "identifier"
    if leaf == "document_type":
        return "document_type"
    return "text"


def round_money(amount: Decimal, unit: Decimal = CENT) -> Decimal:
    """Commercial rounding: half a unit rounds away from zero (2.505 → 2.51, -2.505 → -2.51)."""
    return amount.quantize(unit, rounding=ROUND_HALF_UP)


def _money(amount: Decimal) -> str:
    return str(abs(amount) if amount.is_zero() else amount)  # never "-0.00"


# --- field types ---------------------------------------------------------------------------------


def _check_field_types(f: _Facts) -> _Result:
    reads = tuple(path for path, value in f.fields if value.value is not None and _kind(path) in _TYPED_KINDS)
    if not f.type_errors:
        return _Result(PASSED, reads=reads)
    blames = tuple(error["field"] for error in f.type_errors)
    return _Result(FAILED, "field_value_unparseable", blames[0], {"fields": f.type_errors}, reads=reads, blames=blames)


# --- arithmetic ------------------------------------------------------------------------------------


def _check_line_amounts(f: _Facts) -> _Result:
    problems: list[dict[str, str]] = []
    checked = 0
    reads: list[str] = []
    blames: list[str] = []
    for index in range(f.line_count):
        quantity, price, net = f.line(index, "quantity"), f.line(index, "unit_price"), f.line(index, "net_amount")
        base = f.line(index, "price_base_quantity") or Decimal(1)  # BT-149, invoice.v2
        line_adjustments = f.adjustments(f"lines[{index}].") or []
        adjustment = sum((amount for amount, _ in line_adjustments if amount is not None), Decimal(0))
        if quantity is not None and price is not None and net is not None and base != 0:
            checked += 1
            inputs = [
                f"lines[{index}].{name}"
                for name in ("quantity", "unit_price", "net_amount", "price_base_quantity")
                if f.amount(f"lines[{index}].{name}") is not None
            ] + f.adjustment_paths(f"lines[{index}].")
            reads += inputs
            # EN 16931 BR-LIN-04 (line net = quantity × price / base quantity − allowances + charges).
            expected = round_money(quantity * price / base + adjustment, f.unit)
            if abs(expected - net) > f.unit:
                blames += inputs
                problems.append(
                    {
                        "field": f"lines[{index}].net_amount",
                        "expected": _money(expected),
                        "found": _money(net),
                        "rule": "quantity × unit_price" + (" − allowances + charges" if line_adjustments else ""),
                    }
                )
        rate, tax = f.line(index, "tax_rate"), f.line(index, "tax_amount")
        if net is not None and rate is not None and tax is not None:
            checked += 1
            inputs = [f"lines[{index}].{name}" for name in ("net_amount", "tax_rate", "tax_amount")]
            reads += inputs
            expected = round_money(net * rate / HUNDRED, f.unit)
            if abs(expected - tax) > f.unit:
                blames += inputs
                problems.append(
                    {
                        "field": f"lines[{index}].tax_amount",
                        "expected": _money(expected),
                        "found": _money(tax),
                        "rule": "net_amount × tax_rate",
                    }
                )
    if problems:
        return _Result(
            FAILED,
            "line_amount_mismatch",
            problems[0]["field"],
            {"lines": problems, "tolerance": _money(f.unit)},
            reads=_once(reads),
            blames=_once(blames),
        )
    if not checked:
        return _skipped("no_line_to_check")
    return _Result(PASSED, reads=_once(reads))


def _line_nets(f: _Facts) -> list[Decimal] | None:
    nets = [f.line(index, "net_amount") for index in range(f.line_count)]
    if not nets or any(net is None for net in nets):
        return None
    return nets  # type: ignore[return-value]


def _check_lines_sum(f: _Facts) -> _Result:
    if f.line_count == 0:
        return _skipped("no_lines")
    nets, net_total, adjustment = _line_nets(f), f.total("net"), f.document_adjustment()
    if nets is None or net_total is None or adjustment is None:
        return _skipped("amounts_missing")  # required_fields names what is missing
    found = sum(nets, Decimal(0))
    tolerance = f.unit * len(nets)
    detail = {"sum_of_lines": _money(found), "net_total": _money(net_total)}
    if isinstance(f.invoice, InvoiceV2):
        # EN 16931 BR-CO-10 and BR-CO-13: net = Σ line nets − allowances + charges.
        detail["charges_minus_allowances"] = _money(adjustment)
        tolerance += f.unit * (len(f.invoice.allowances) + len(f.invoice.charges))
    elif f.omitted_adjustment is not None:
        # The XML's own totals of what v1 cannot hold (the result's einvoice.omitted_from_v1).
        detail["charges_minus_allowances_omitted_from_v1"] = _money(adjustment)
        tolerance += f.unit * 2
    reads = (*_line_paths(f, "net_amount"), "totals.net", *f.adjustment_paths(amounts_only=True))
    gap = net_total - (found + adjustment)
    if abs(gap) > tolerance:
        # Which way the lines miss says what went wrong: short of the total, a line was dropped
        # (or read from the wrong page); past it, one was invented or read twice.
        if gap > 0:
            reason, amount = LINE_ITEMS_INCOMPLETE, {"missing_amount": _money(gap)}
        else:
            reason, amount = LINE_ITEMS_EXCEED, {"excess_amount": _money(-gap)}
        return _Result(
            FAILED,
            reason,
            "totals.net",
            {**detail, **amount, "tolerance": _money(tolerance)},
            reads=reads,
            blames=reads,
        )
    return _Result(PASSED, detail=detail, reads=reads)


def _tax_total(f: _Facts) -> Decimal | None:
    """The tax total, with an absent one read as 0 (category O / exempt invoices print none;
    totals_sum then demands net = gross, so an omitted non-zero tax cannot hide)."""
    if f.invoice.totals.tax.value is None:
        return Decimal(0)
    return f.total("tax")


def _check_tax_by_rate(f: _Facts) -> _Result:
    if f.line_count == 0:
        return _skipped("no_lines")
    nets = _line_nets(f)
    rates = [f.line(index, "tax_rate") for index in range(f.line_count)]
    net_total, tax_total = f.total("net"), _tax_total(f)
    if nets is None or net_total is None or tax_total is None:
        return _skipped("amounts_missing")
    if any(rate is None for rate in rates):
        return _skipped("line_tax_rates_missing")
    adjustments = f.adjustments() or []
    adjustment = f.document_adjustment()
    if adjustment is None or any(rate is None for _, rate in adjustments) or f.omitted_adjustment is not None:
        # v1's omitted allowances and charges come as totals, without the VAT rate of each.
        return _skipped("allowance_or_charge_without_rate")
    if abs(sum(nets, Decimal(0)) + adjustment - net_total) > f.unit * (len(nets) + len(adjustments)):
        # Lines that do not explain the net total (in invoice.v1, document allowances/charges it
        # does not carry) cannot explain its tax either; lines_sum reports the gap.
        return _skipped("lines_do_not_explain_net_total")
    groups: dict[Decimal, Decimal] = {}
    for net, rate in [*zip(nets, rates, strict=True), *adjustments]:
        groups[rate] = groups.get(rate, Decimal(0)) + net  # type: ignore[index,arg-type,operator]  # 19 == 19.00: one group
    # format(…, "f"): "10", never "1E+1".
    by_rate = {
        format(rate.normalize(), "f"): round_money(base * rate / HUNDRED, f.unit)
        for rate, base in sorted(groups.items())
    }
    expected = sum(by_rate.values(), Decimal(0))
    tolerance = f.unit * len(groups)
    detail = {
        "expected_tax": _money(expected),
        "tax_total": _money(tax_total),
        "tax_by_rate": {rate: _money(tax) for rate, tax in by_rate.items()},
        "tolerance": _money(tolerance),
    }
    reads = (
        *_line_paths(f, "net_amount"),
        *_line_paths(f, "tax_rate"),
        "totals.net",
        *_present(f, "totals.tax"),
        *f.adjustment_paths(),
    )
    if abs(expected - tax_total) > tolerance:
        return _Result(FAILED, "tax_by_rate_mismatch", "totals.tax", detail, reads=reads, blames=reads)
    return _Result(PASSED, detail=detail, reads=reads)


def _check_totals_sum(f: _Facts) -> _Result:
    net, tax, gross = f.total("net"), _tax_total(f), f.total("gross")
    if net is None or tax is None or gross is None:
        return _skipped("amounts_missing")
    reads = ("totals.net", *_present(f, "totals.tax"), "totals.gross")
    if abs(net + tax - gross) > f.unit:
        return _Result(
            FAILED,
            "totals_sum_mismatch",
            "totals.gross",
            {
                "net": _money(net),
                "tax": _money(tax),
                "gross": _money(gross),
                "net_plus_tax": _money(net + tax),
                "tolerance": _money(f.unit),
            },
            reads=reads,
            blames=reads,
        )
    return _Result(PASSED, reads=reads)


def _check_amount_due(f: _Facts) -> _Result:
    gross, due = f.total("gross"), f.total("amount_due")
    prepaid_stated = f.invoice.totals.prepaid.value is not None
    prepaid = f.total("prepaid") if prepaid_stated else Decimal(0)
    # EN 16931 BR-CO-16: amount due = gross − prepaid + rounding; only invoice.v2 carries rounding.
    # XRechnung's third-party payments are added to it (AmountDueTerms).
    rounding = f.total("rounding") or Decimal(0)
    terms = f.amount_due_terms
    if f.invoice.totals.amount_due.value is None and not prepaid_stated:
        return _skipped("amount_due_not_shown", {"payable": "the gross total"})
    if gross is None or due is None or prepaid is None:
        return _skipped("amounts_missing")
    expected = gross - prepaid + rounding + terms.third_party_paid
    reads = ("totals.gross", *_present(f, "totals.prepaid", "totals.rounding"), "totals.amount_due")
    if not prepaid_stated and not terms.states_prepaid and Decimal(0) <= expected - due:
        # A profile with no prepaid element: what due falls short of gross was paid before.
        return _Result(PASSED, detail={"prepaid_the_profile_cannot_state": _money(expected - due)}, reads=reads)
    if abs(expected - due) > f.unit:
        detail = {
            "gross": _money(gross),
            "prepaid": _money(prepaid),
            "amount_due": _money(due),
            "gross_minus_prepaid": _money(gross - prepaid),
            "tolerance": _money(f.unit),
        }
        if rounding:
            detail["rounding"] = _money(rounding)
        if terms.third_party_paid:
            detail["third_party_paid"] = _money(terms.third_party_paid)
        return _Result(FAILED, "amount_due_mismatch", "totals.amount_due", detail, reads=reads, blames=reads)
    return _Result(PASSED, reads=reads)


# --- policy and master data ----------------------------------------------------------------------


def _check_currency_allowed(f: _Facts) -> _Result:
    value = f.invoice.currency.value
    if value is None:
        return _skipped("currency_missing")
    code = value.strip()
    if code not in f.allowed_currencies:
        return _blamed("currency_not_allowed", "currency", {"currency": code, "allowed": sorted(f.allowed_currencies)})
    return _Result(PASSED, reads=("currency",))


def _check_supplier_master_data(f: _Facts) -> _Result:
    if not f.master.has_records:
        return _skipped("no_supplier_master_data")
    vat_id = f.invoice.supplier.vat_id.value
    name = f.invoice.supplier.name.value
    record = f.master.supplier
    reads = _present(f, "supplier.name", "supplier.vat_id")
    if record is None:
        shown = {"vat_id": normalize_vat_id(vat_id) if vat_id else None, "name": name}
        return _blamed("supplier_unknown", "supplier.vat_id" if vat_id else "supplier.name", shown, reads=reads)
    detail = {"matched_by": f.master.matched_by, "supplier": {"name": record.name, "vat_id": record.vat_id}}
    if name is None or comparable_name(name) != comparable_name(record.name):
        return _blamed(
            "supplier_name_mismatch",
            "supplier.name",
            {**detail, "extracted": name, "expected": record.name},
            reads=reads,
        )
    extracted_iban = f.invoice.supplier.iban.value
    if record.iban and extracted_iban is not None:
        reads = (*reads, "supplier.iban")
        if normalize_iban(extracted_iban) != record.iban:
            # A changed bank account is the classic invoice fraud: never accepted unseen.
            return _blamed(
                "supplier_iban_mismatch",
                "supplier.iban",
                {**detail, "extracted": normalize_iban(extracted_iban), "expected": record.iban},
                reads=reads,
            )
    if not record.iban and extracted_iban is not None:
        detail["iban"] = "master data has no IBAN for this supplier: not compared"
    return _Result(PASSED, detail=detail, reads=reads)


def _check_iban_checksum(f: _Facts) -> _Result:
    value = f.invoice.supplier.iban.value
    if value is None:
        return _skipped("iban_absent")
    account = normalize_iban(value)
    try:
        stdnum_iban.validate(account)
    except StdnumValidationError as error:
        problem = "checksum" if isinstance(error, InvalidChecksum) else "format"
        return _blamed("iban_invalid", "supplier.iban", {"iban": account, "problem": problem})
    return _Result(PASSED, reads=("supplier.iban",))


def _vat_module(country: str) -> Any:
    code = country.lower()
    if code in stdnum_eu_vat.MEMBER_STATES or code == "el":
        return stdnum_eu_vat
    return stdnum.get_cc_module(code, "vat")


class _VatScheme(NamedTuple):
    module: Any  # a python-stdnum module: validate() raises for an id it rejects
    number: str  # the id as that module checks it


def _vat_scheme(f: _Facts, vat_id: str) -> _VatScheme | None:
    """Which python-stdnum check applies to the id: a Turkish VKN (10 digits) or TCKN (11), with or
    without "TR" before it; else the VAT id of the country its prefix names. None: none known."""
    turkish = re.fullmatch(r"(TR)?(\d{10,11})", vat_id)
    if turkish and (turkish[1] or _shows_turkish_tax_id(f)):
        return _VatScheme(TURKISH_TAX_ID_SCHEMES[len(turkish[2])], turkish[2])
    module = _vat_module(vat_id[:2]) if re.match(r"[A-Z]{2}", vat_id) else None
    return _VatScheme(module, vat_id) if module is not None else None


# How far left of a tax id, on its line, its label may stand ("Vergi Dairesi / No: Büyük Mükellefler / 1234567890").
_TAX_ID_LABEL_REACH = 40


def _shows_turkish_tax_id(f: _Facts) -> bool:
    """Whether a bare 10- or 11-digit id is a VKN or TCKN. Other countries' national numbers look
    the same once normalized (a German Steuernummer "21/815/08150" is "2181508150"); checked as
    VKNs they would fail and send valid invoices to review. So the invoice itself must show that
    it is Turkish: a VKN/TCKN or tax-office label just left of the id on its line, the supplier's
    TR IBAN, or the currency TRY. Any one suffices: a Turkish exporter invoicing in euros still
    prints the label."""
    if (f.invoice.currency.value or "").strip().upper() == "TRY":
        return True
    if normalize_iban(f.invoice.supplier.iban.value or "").startswith("TR"):
        return True
    evidence = f.invoice.supplier.vat_id.evidence
    if evidence is None:
        return False
    before = f.document.span(evidence.page, max(0, evidence.start - _TAX_ID_LABEL_REACH), evidence.start) or ""
    before = before.rsplit("\n", 1)[-1]  # a label on the line above belongs to another field
    return bool(TURKISH_TAX_ID_LABEL.search(before) or TURKISH_TAX_OFFICE_LABEL.search(before))


def _check_vat_id_format(f: _Facts) -> _Result:
    value = f.invoice.supplier.vat_id.value
    if value is None:
        return _skipped("vat_id_absent")
    vat_id = normalize_vat_id(value)
    scheme = _vat_scheme(f, vat_id)
    if scheme is None:
        # No country prefix (a bare national number) or a country python-stdnum does not
        # know: nothing to check the format against; master data is the authority then.
        return _skipped("vat_id_format_unknown", {"vat_id": vat_id})
    try:
        scheme.module.validate(scheme.number)
    except StdnumValidationError as error:
        problem = "checksum" if isinstance(error, InvalidChecksum) else "format"
        if f.master.supplier is not None and f.master.supplier.vat_id == vat_id:
            # The tenant's own master data lists exactly this id for this supplier (test and
            # legacy ids exist): the tenant vouched for it; format rules add nothing then.
            return _Result(
                PASSED,
                detail={"vat_id": vat_id, "problem": problem, "vouched_by": "master data"},
                reads=("supplier.vat_id",),
            )
        return _blamed("vat_id_invalid", "supplier.vat_id", {"vat_id": vat_id, "problem": problem})
    return _Result(PASSED, reads=("supplier.vat_id",))


# --- evidence ------------------------------------------------------------------------------------


def _evidenced(f: _Facts) -> Iterable[tuple[str, FieldValue, str]]:
    """Fields that claim a value a reviewer did not attest and no rule derived: (path, field,
    the claimed value)."""
    for path, value in f.fields:
        if value.value is not None and path not in f.attested and path not in f.derived:
            yield path, value, value.value


def _check_evidence_spans(f: _Facts) -> _Result:
    problems: list[dict[str, Any]] = []
    checked = 0
    reads: list[str] = []
    for path, value, _claimed in _evidenced(f):
        checked += 1
        reads.append(path)
        evidence = value.evidence
        if evidence is None:
            problems.append({"field": path, "reason": "evidence_missing"})
            continue
        actual = f.document.span(evidence.page, evidence.start, evidence.end)
        if actual != evidence.quote:
            problems.append(
                {
                    "field": path,
                    "reason": "evidence_span_mismatch",
                    "page": evidence.page,
                    "start": evidence.start,
                    "end": evidence.end,
                    "quote": evidence.quote[:200],
                    "document_text": None if actual is None else actual[:200],
                }
            )
    detail = {"fields_checked": checked, "attested_by_reviewer": sorted(f.attested)}
    if problems:
        return _Result(
            FAILED,
            problems[0]["reason"],
            problems[0]["field"],
            {**detail, "problems": problems},
            reads=tuple(reads),
            blames=tuple(problem["field"] for problem in problems),
        )
    return _Result(PASSED, detail=detail, reads=tuple(reads))


def _check_evidence_values(f: _Facts) -> _Result:
    problems: list[dict[str, Any]] = []
    checked = 0
    reads: list[str] = []
    for path, value, claimed in _evidenced(f):
        evidence = value.evidence
        if evidence is None or f.document.span(evidence.page, evidence.start, evidence.end) != evidence.quote:
            continue  # evidence_spans reports it; a quote not in the document says nothing
        kind = _kind(path)
        if kind == "document_type":
            continue  # "Rechnung", "Avoir", "Gutschrift (389)": the word is the evidence, not the value
        checked += 1
        reads.append(path)
        if path.rsplit(".", 1)[-1] in _NOTE_FIELDS:
            longest = MAX_NOTE_QUOTE
        else:
            longest = MAX_TEXT_QUOTE if kind == "text" else MAX_VALUE_QUOTE
        if len(evidence.quote) > longest:
            problems.append(
                {
                    "field": path,
                    "value": value.value,
                    "quote": evidence.quote[:200],
                    "why": f"quote longer than {longest} characters",
                }
            )
        # invoice.v1 follows EN 16931: a credit note's amounts are positive even where the
        # document prints them with a minus sign, and so is a prepaid amount (BT-113), which
        # invoices print as "-50,00" because it is subtracted. Nowhere else may the sign change.
        elif not quote_supports(
            kind, claimed, evidence.quote, magnitude_only=f.is_credit_note or path == "totals.prepaid"
        ):
            problems.append({"field": path, "value": value.value, "quote": evidence.quote[:200]})
    if problems:
        return _Result(
            FAILED,
            "evidence_value_mismatch",
            problems[0]["field"],
            {"fields_checked": checked, "problems": problems},
            reads=tuple(reads),
            blames=tuple(problem["field"] for problem in problems),
        )
    return _Result(PASSED, detail={"fields_checked": checked}, reads=tuple(reads))


# --- required fields (VAL-2) ---------------------------------------------------------------------


def _check_required_fields(f: _Facts) -> _Result:
    values = f.values
    missing = [path for path in REQUIRED_FIELDS if not (values[path].value or "").strip()]
    for index in range(f.line_count):
        if values[f"lines[{index}].net_amount"].value is None:
            missing.append(f"lines[{index}].net_amount")
    net, gross = f.total("net"), f.total("gross")
    if f.invoice.totals.tax.value is None and net is not None and gross is not None and net != gross:
        missing.append("totals.tax")
    if f.invoice.totals.prepaid.value is not None and f.invoice.totals.amount_due.value is None:
        missing.append("totals.amount_due")
    # A value the model withheld while pointing at where it is printed: uncertain, not absent.
    withheld = [path for path, value in f.fields if value.value is None and value.evidence is not None]
    # Every field the policy needs, whether it is there or not: a required field that is
    # present passed this check.
    reads = _once([*REQUIRED_FIELDS, *_line_paths(f, "net_amount"), *missing, *withheld])
    blames = _once([*withheld, *missing])
    if withheld:
        return _Result(
            FAILED,
            "field_value_withheld",
            withheld[0],
            {"withheld": withheld, "missing": missing},
            reads=reads,
            blames=blames,
        )
    if missing:
        return _Result(
            FAILED,
            "required_field_missing",
            missing[0],
            {"missing": missing, "withheld": withheld},
            reads=reads,
            blames=blames,
        )
    return _Result(PASSED, reads=reads)


# The money a payment is made of: a disagreement here is a different invoice, not a typo.
_COMPARED_WITH_VISIBLE = ("totals.gross", "totals.tax", "totals.amount_due", "supplier.iban")


def _check_visible_matches_embedded(f: _Facts) -> _Result:
    document = f.document
    if not document.embeds_einvoice:
        return _skipped("no_embedded_einvoice")
    visible = document.for_providers().pages
    if not any(page.strip() for page in visible):
        return _skipped("no_visible_text")
    amounts = {abs(number) for page in visible for line in page.splitlines() for number in printed_numbers(line)}
    accounts = {normalize_iban(line) for page in visible for line in page.splitlines()}
    missing: list[dict[str, str]] = []
    compared = tuple(path for path, value in f.fields if path in _COMPARED_WITH_VISIBLE and value.value is not None)
    for path, value in f.fields:
        if path not in compared or value.value is None:
            continue
        if path == "supplier.iban":
            iban = normalize_iban(value.value)
            printed = any(iban in account for account in accounts)
        else:
            amount = f.amounts.get(path)
            printed = amount is None or abs(amount) in amounts  # an unreadable amount is field_types' to report
        if not printed:
            missing.append({"field": path, "value": value.value})
    if missing:
        return _Result(
            FAILED,
            "visible_and_embedded_disagree",
            missing[0]["field"],
            {"not_printed": missing},
            reads=compared,
            blames=tuple(item["field"] for item in missing),
        )
    return _Result(PASSED, detail={"fields_compared": list(compared)}, reads=compared)


def _check_possible_duplicate(_facts: _Facts) -> _Result:
    # An answer alone cannot say whether the tenant's other jobs hold the same invoice: the job's
    # completion judges that in the database (extraction.validation.duplicates), in this place.
    return _skipped("judged_when_the_job_completes")


def _check_bundle_part_one_invoice(_facts: _Facts) -> _Result:
    # An answer does not say whether its document is a bundle's part: the attempt judges that
    # for a part's job, on its pages (extraction.validation.bundle_parts), in this place.
    return _skipped("judged_for_a_bundles_part")


_CHECK_FUNCTIONS: dict[str, Callable[[_Facts], _Result]] = {
    "field_types": _check_field_types,
    "line_amounts": _check_line_amounts,
    "lines_sum": _check_lines_sum,
    "tax_by_rate": _check_tax_by_rate,
    "totals_sum": _check_totals_sum,
    "amount_due": _check_amount_due,
    "currency_allowed": _check_currency_allowed,
    "supplier_master_data": _check_supplier_master_data,
    "iban_checksum": _check_iban_checksum,
    "vat_id_format": _check_vat_id_format,
    "evidence_spans": _check_evidence_spans,
    "evidence_values": _check_evidence_values,
    "required_fields": _check_required_fields,
    "visible_matches_embedded": _check_visible_matches_embedded,
    "possible_duplicate": _check_possible_duplicate,
    "bundle_part_one_invoice": _check_bundle_part_one_invoice,
}
assert tuple(_CHECK_FUNCTIONS) == CHECKS
