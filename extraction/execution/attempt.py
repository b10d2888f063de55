"""One claimed attempt, from the document to a persisted outcome, as a chain of named steps.

    read the document → split a bundle into its parts' jobs (extraction.execution.splitting), or
        read a part's own pages → e-invoice shortcut → (rules_and_model: the rules first) → reserve
        capacity → call the model → check ownership → parse and relocate evidence → judge and
        complete

Each step returns the next step's input, or the :class:`AttemptResult` that ends the attempt
(already written under the fence). No step holds a database connection across the model call
(``db_step``); the call itself runs with the pool's permit held and is released with what it
used.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import logging
import random
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction

from accounts.models import EInvoiceIntake, Tenant
from config import tracing
from config.instruments import PROVIDER_RATE_LIMITED, REVIEW_REASONS
from extraction.capacity import limiter
from extraction.capacity.tokens import reservation
from extraction.execution import completions, lifecycle, retry, splitting
from extraction.execution.faults import fault_point
from extraction.execution.lifecycle import AttemptReport, Claim, Completion
from extraction.execution.outcomes import AttemptResult, CompletionVerdict
from extraction.execution.runtime import (
    Interrupted,
    WorkerRuntime,
    call_in_slot,
    call_provider,
    db_step,
    read_after_model_call,
)
from extraction.intake.text import DocumentText
from extraction.models import AttemptOutcome, Document, ExtractedText
from extraction.providers import PoolBinding, boundaries, provider_for_policy
from extraction.providers.base import BoundaryReader, ErrorKind, ProviderError, ProviderRequest, ProviderResponse
from extraction.providers.boundaries import BoundaryRequest
from extraction.providers.builtin import PROVIDER_NAME as BUILTIN_PROVIDER
from extraction.providers.builtin import extract_invoice
from extraction.providers.einvoice import PROVIDER_NAME as EINVOICE_PROVIDER
from extraction.providers.einvoice import EInvoiceAnswer, answer_from_einvoice
from extraction.validation.bundle_parts import with_part_check
from extraction.validation.cross_check import judged_with_model
from extraction.validation.derivation import derive_missing
from extraction.validation.duplicates import with_duplicate_check
from extraction.validation.evidence import relocate_evidence, with_boxes
from extraction.validation.fields import ReadingSource, Sources
from extraction.validation.policy import NO_TERMS, AmountDueTerms, ValidationOutcome, validate_extraction
from extraction.validation.readings import ReadingMode, judged_together, read_together, rules_settle
from extraction.validation.schema import InvoiceV1, SchemaError, SchemaValidationError, parse_invoice

logger = logging.getLogger("extraction.worker")

# The rules and the models answer invoice.v1's fields; a v2 job gets them upgraded, with what
# only v2 carries (allowances, VAT breakdown, ...) null.
MODEL_ANSWER_SCHEMA = "invoice.v1"
# Verdicts one answer gets when the tenant's policy changes under each (an import running while
# the job completes); past that, the lease runs out and the reaper retries the job.
POLICY_REJUDGE_LIMIT = 5


@dataclass(frozen=True)
class EInvoiceRead:
    """A document's e-invoice, read from its XML, for a tenant that reads them."""

    answer: EInvoiceAnswer
    # structured_first: the XML's answer is the result and no model is called; otherwise
    # ("both") the model reads the document too and must agree.
    structured_first: bool


@dataclass(frozen=True)
class ModelCall:
    """A model call the pool admitted: ``permit`` is held until the call ends."""

    binding: PoolBinding
    read: DocumentText  # what the model reads
    permit: limiter.Permit
    request: ProviderRequest


@dataclass(frozen=True)
class Answer:
    """The model's answer: schema-valid, its evidence re-found in what the model read."""

    invoice: InvoiceV1
    extra: dict[str, Any]  # kept beside the verdict: how the evidence was found
    report: Callable[[str], AttemptReport]  # the ledger entry, given the attempt's outcome
    source: ReadingSource  # the rules or a model
    relocated: tuple[str, ...]  # the fields whose evidence was moved to where it is printed


def execute_attempt(claim: Claim, rt: WorkerRuntime) -> AttemptResult:
    """Run one claimed attempt to a persisted outcome (the steps are the module's docstring)."""
    rt.track(claim)
    try:
        whole = _read_document(claim)
        if isinstance(whole, AttemptResult):
            return whole
        bundle = splitting.first_reading(claim, whole)
        if bundle is not None:
            reader = splitting.second_reader(claim, bundle)
            if reader is not None:
                read_twice = _read_boundaries(claim, rt, whole, reader)
                if isinstance(read_twice, AttemptResult):
                    return read_twice
                bundle = read_twice
            if bundle.splits:
                with db_step():
                    return splitting.split_into_parts(claim, whole, bundle)
            if bundle.second_reading is not None:
                _EARLIER_CALL.set(bundle.second_reading.report)
        document = splitting.read_as_part(claim, whole)
        einvoice = _einvoice_of(claim, document)
        if einvoice is not None and einvoice.structured_first:
            return _complete_from_einvoice(claim, rt, document, einvoice.answer)
        rules = _read_by_rules_first(claim, rt, document) if einvoice is None and _reads_with_rules(claim) else None
        if isinstance(rules, AttemptResult):
            return rules  # the rules settled it: no model asked
        call = _reserve_capacity(claim, document)
        if isinstance(call, AttemptResult):
            return call
        # rules_and_model: a model that will not be asked again leaves the rules' reading.
        fallback = None if rules is None else functools.partial(_complete_rules_alone, claim, rules, document)
        response = _call_model(claim, call, rt, fallback)
        if isinstance(response, AttemptResult):
            return response
        if rt.lost(claim):
            return _discard_answer(claim, call, response)
        answer = _parse_and_relocate(claim, call, response, fallback)
        if isinstance(answer, AttemptResult):
            return answer
        if einvoice is not None:
            # "both": the XML's answer is the result, the model's its cross-check.
            xml_answer = parse_invoice(json.dumps(einvoice.answer.output), schema=claim.schema)
            return _judge_and_complete(
                claim,
                xml_answer,
                document,
                extra={**answer.extra, "einvoice": einvoice.answer.provenance()},
                report=answer.report,
                sources=(ReadingSource.EINVOICE,),
                elements=einvoice.answer.elements,
                omitted_from_v1=einvoice.answer.omitted_from_v1,
                amount_due_terms=einvoice.answer.amount_due_terms,
                compared=lambda verdict: judged_with_model(verdict, xml_answer, answer.invoice),
            )
        if answer.source is ReadingSource.MODEL and rules is not None:
            return _complete_read_together(claim, answer, rules, document)
        return _complete_alone(claim, answer, document)
    finally:
        _EARLIER_CALL.set(None)
        rt.untrack(claim)


# --- the steps ---------------------------------------------------------------------------------


def _read_document(claim: Claim) -> DocumentText | AttemptResult:
    """The document's text (extracted once and kept); an unreadable document fails the job."""
    from extraction.intake.text import UnreadableDocument  # heavy imports (OCR, PDF)

    try:
        return load_document_text(claim.document_id, ocr_language=claim.options.get("language", "eng"))
    except UnreadableDocument as exc:
        with db_step():
            return lifecycle.retry_or_fail(
                claim,
                report=_report(AttemptOutcome.UNREADABLE_DOCUMENT, detail=str(exc)),
                retry=False,
                delay_seconds=0,
                error_class="unreadable_document",
            )


def _einvoice_of(claim: Claim, document: DocumentText) -> EInvoiceRead | None:
    """A document that is or embeds an e-invoice, for a tenant that does not send every
    document to the model: its XML's answer."""
    if document.einvoice_page is None:
        return None
    intake = _einvoice_intake(claim.tenant_id)
    if intake == EInvoiceIntake.MODEL_ONLY:
        return None
    answer = _einvoice_answer(claim.document_id, document, schema=claim.schema)
    if answer is None:
        return None
    return EInvoiceRead(answer, structured_first=intake == EInvoiceIntake.STRUCTURED_FIRST)


def _reserve_capacity(claim: Claim, document: DocumentText) -> ModelCall | AttemptResult:
    """The pool's permit for one call (a request slot, a token reservation, an in-flight slot);
    denied → the job is handed back with no attempt spent (BP-3, RTY-2)."""
    binding = provider_for_policy(claim.model_policy)
    read = document.for_providers()
    tokens = reservation(
        read.full_text,
        model=binding.model,
        max_output_tokens=binding.max_output_tokens,
        tokenizer_url=binding.local_server,
    )
    granted = _acquire_permit(claim, binding, tokens)
    if isinstance(granted, AttemptResult):
        return granted
    request = ProviderRequest(
        job_id=str(claim.job_id),
        attempt=claim.attempt,
        document=read,
        schema=MODEL_ANSWER_SCHEMA,
        model=binding.model,
        max_output_tokens=binding.max_output_tokens,
        timeout_seconds=_call_timeout(claim),
    )
    return ModelCall(binding, read, granted, request)


def _call_timeout(claim: Claim) -> float:
    """A call's bound: the attempt timeout, or what is left before the deadline and the commit."""
    remaining = (claim.deadline_at.timestamp() - time.time()) - settings.COMMIT_MARGIN_SECONDS
    return max(1.0, min(settings.ATTEMPT_TIMEOUT_SECONDS, remaining))


def _acquire_permit(claim: Claim, binding: PoolBinding, tokens: int) -> limiter.Permit | AttemptResult:
    """The pool's permit for ``tokens``, or DEFERRED with the job handed back to wait for it."""
    # The permit names its attempt, so the self-audit can give back one whose attempt is over.
    holder = limiter.permit_holder(claim.job_id, claim.fence)
    granted = limiter.acquire(limiter.pool_limits(binding.pool), tokens=tokens, holder=holder)
    if isinstance(granted, limiter.Denial):
        # No connection or delivery is held while waiting.
        wait = granted.retry_after_seconds + random.uniform(0, settings.CAPACITY_IN_FLIGHT_RETRY_SECONDS)
        with db_step():
            lifecycle.hand_back(
                claim,
                available_in_seconds=wait,
                outcome=AttemptOutcome.CAPACITY_DEFERRED,
                detail=f"pool {binding.pool}: {granted.reason}",
            )
        logger.info(
            "waiting for capacity",
            extra={
                **claim.log_extra(),
                "pool": binding.pool,
                "waits_for": granted.reason,
                "retry_in_seconds": round(wait, 3),
            },
        )
        return AttemptResult.DEFERRED
    return granted


def _read_boundaries(
    claim: Claim, rt: WorkerRuntime, document: DocumentText, binding: PoolBinding
) -> splitting.BundleDecision | AttemptResult:
    """The second reader's call (extraction.execution.splitting): the bundle's pages shown to
    the pool's model under a permit like any model call; the split its answer decides. A
    failed call or an unusable answer leaves the detector's decision: the bundle is split as
    without a second reader, never failed for it."""
    pages = document.for_providers().pages
    tokens = reservation(
        boundaries.INSTRUCTIONS + boundaries.shown_pages(pages),
        model=binding.model,
        max_output_tokens=boundaries.MAX_OUTPUT_TOKENS,
        tokenizer_url=binding.local_server,
    )
    permit = _acquire_permit(claim, binding, tokens)
    if isinstance(permit, AttemptResult):
        return permit
    reader = cast(BoundaryReader, binding.provider)
    request = BoundaryRequest(
        job_id=str(claim.job_id),
        attempt=claim.attempt,
        pages=pages,
        model=binding.model,
        timeout_seconds=_call_timeout(claim),
    )
    try:
        response = call_in_slot(functools.partial(reader.read_boundaries, request), rt)
    except Interrupted as exc:
        limiter.release(permit, actual_tokens=None)  # sent and unanswered: it may be billed
        return hand_back_interrupted(claim, reader.name, detail=str(exc))
    except ProviderError as exc:
        limiter.release(permit, actual_tokens=_billed_tokens(exc))
        _note_rate_limit(binding, permit, exc)
        report = _report(AttemptOutcome.SPLIT, error=exc, provider=reader.name, detail=f"second reader: {exc}")
        return splitting.read_twice(document, splitting.SecondReading(None, report, f"{exc.kind.value}: {exc}"[:500]))
    except BaseException:
        limiter.release(permit, actual_tokens=None)  # unknown: keep the reservation
        raise
    limiter.release(permit, actual_tokens=_used_tokens(response))
    report = _report(AttemptOutcome.SPLIT, response, provider=reader.name)
    try:
        first_pages = boundaries.parse_answer(response.output_text, page_count=len(pages))
    except boundaries.BoundaryAnswerError as exc:
        return splitting.read_twice(document, splitting.SecondReading(None, report, str(exc)[:500]))
    return splitting.read_twice(document, splitting.SecondReading(first_pages, report))


def _note_rate_limit(binding: PoolBinding, permit: limiter.Permit, error: ProviderError) -> None:
    """A 429 cools the pool down for every worker (an unlimited pool cools nobody down)."""
    if error.kind != ErrorKind.RATE_LIMITED:
        return
    PROVIDER_RATE_LIMITED.labels(pool=binding.pool).inc()
    if permit.counted:
        limiter.start_cooldown(
            binding.pool, seconds=error.retry_after_seconds or settings.CAPACITY_DEFAULT_COOLDOWN_SECONDS
        )


# What ends an attempt whose model failed for good, instead of failing the job (rules_and_model).
Fallback = Callable[[AttemptReport], AttemptResult]


def _call_model(
    claim: Claim, call: ModelCall, rt: WorkerRuntime, fallback: Fallback | None = None
) -> ProviderResponse | AttemptResult:
    """The provider call, bounded by the attempt timeout and the deadline, with no database
    connection held; the permit goes back with what the call used (or may have cost)."""
    provider, pool = call.binding.provider, call.binding.pool
    try:
        response = call_provider(provider, call.request, rt)
    except Interrupted as exc:
        limiter.release(call.permit, actual_tokens=None)  # sent and unanswered: it may be billed
        return hand_back_interrupted(claim, provider.name, detail=str(exc))
    except ProviderError as exc:
        limiter.release(call.permit, actual_tokens=_billed_tokens(exc))
        _note_rate_limit(call.binding, call.permit, exc)
        if call.binding.local_server and _server_not_serving(exc):
            return _wait_for_local_server(claim, exc, pool)
        return _after_provider_error(claim, exc, provider.name, fallback=fallback)
    except BaseException:
        limiter.release(call.permit, actual_tokens=None)  # unknown: keep the reservation
        raise
    limiter.release(call.permit, actual_tokens=_used_tokens(response))
    fault_point("after_provider_response")
    return response


def _discard_answer(claim: Claim, call: ModelCall, response: ProviderResponse) -> AttemptResult:
    """The heartbeat lost the lease during the call: someone else owns the job now. The
    guarded completion would refuse anyway; the paid call is recorded as such (EXE-6: fencing
    cannot undo it)."""
    report = _report(
        AttemptOutcome.STALE_COMPLETION,
        response,
        provider=call.binding.provider.name,
        detail="lease lost during the model call",
    )
    with db_step():
        lifecycle.record_discarded_attempt(claim, report)
    return AttemptResult.STALE


def _parse_and_relocate(
    claim: Claim, call: ModelCall, response: ProviderResponse, fallback: Fallback | None = None
) -> Answer | AttemptResult:
    """The answer against the job's schema (invalid → retried, then terminal). The model's
    quotes are evidence, its character offsets are not (small models miscount): they are
    re-found in what the model read."""
    provider = call.binding.provider.name
    try:
        invoice = parse_invoice(response.output_text, schema=claim.schema)
    except (SchemaError, SchemaValidationError) as exc:
        error = ProviderError(
            ErrorKind.INVALID_OUTPUT,
            f"{type(exc).__name__}: {exc}"[:1000],
            http_status=response.http_status,
            provider_request_id=response.provider_request_id,
        )
        return _after_provider_error(claim, error, provider, response=response, fallback=fallback)
    invoice, relocations = relocate_evidence(invoice, call.read)
    extra = {"evidence_relocated": [relocation.as_dict() for relocation in relocations]} if relocations else {}
    return Answer(
        invoice,
        extra,
        report=lambda outcome: _report(outcome, response, provider=provider),
        source=ReadingSource.RULES if provider == BUILTIN_PROVIDER else ReadingSource.MODEL,
        relocated=tuple(relocation.field for relocation in relocations),
    )


def _complete_alone(claim: Claim, answer: Answer, document: DocumentText) -> AttemptResult:
    """The provider's answer judged on its own (the rules' or a model's)."""
    return _judge_and_complete(
        claim,
        answer.invoice,
        document,
        extra=answer.extra,
        report=answer.report,
        sources=(answer.source,),
        relocated=answer.relocated,
    )


def _reads_with_rules(claim: Claim) -> bool:
    # extraction.E001 (extraction/apps.py) names a mistyped mode at start; here it raises.
    mode = ReadingMode(settings.MODEL_POLICIES[claim.model_policy].get("reading", ReadingMode.MODEL))
    return mode is ReadingMode.RULES_AND_MODEL


def _read_by_rules_first(claim: Claim, rt: WorkerRuntime, document: DocumentText) -> InvoiceV1 | AttemptResult | None:
    """``rules_and_model``: the rules read what the model would (milliseconds, no call). A
    reading the tenant's policy accepts alone is the answer, completed here with no capacity
    taken and no tokens spent (extraction.validation.readings.rules_settle); otherwise it is
    returned to be read together with the model's. None: the rules failed, the model reads alone."""
    started = time.monotonic()
    read = document.for_providers()
    try:
        rules, relocations = relocate_evidence(
            parse_invoice(json.dumps(extract_invoice(read)), schema=claim.schema), read
        )
    except Exception:  # noqa: BLE001 - a rules bug costs a model call, not the job
        logger.exception("the rules could not read the document: the model reads it alone", extra=claim.log_extra())
        return None
    judged, derived = derive_missing(rules)
    verdict = read_after_model_call(
        functools.partial(
            validate_extraction,
            invoice=judged,
            document=document,
            tenant_id=claim.tenant_id,
            policy_revision=claim.policy_revision,
            sources=(ReadingSource.RULES,),
            derived=derived,
        )
    )
    if not rules_settle(verdict):
        return rules
    if rt.lost(claim):
        return AttemptResult.STALE  # nothing was spent; the new owner reads the same
    latency_ms = round((time.monotonic() - started) * 1000)
    return _judge_and_complete(
        claim,
        rules,
        document,
        extra={
            # Why the ledger shows no model call for a rules_and_model policy.
            "reading": {"mode": ReadingMode.RULES_AND_MODEL.value, "model_asked": False},
            **({"evidence_relocated": [relocation.as_dict() for relocation in relocations]} if relocations else {}),
        },
        report=lambda outcome: _traced(
            AttemptReport(
                outcome=outcome,
                provider=BUILTIN_PROVIDER,
                model=BUILTIN_PROVIDER,
                input_tokens=0,
                output_tokens=0,
                latency_ms=latency_ms,
            )
        ),
        sources=(ReadingSource.RULES,),
        relocated=tuple(relocation.field for relocation in relocations),
    )


def _complete_rules_alone(
    claim: Claim, rules: InvoiceV1, document: DocumentText, failure: AttemptReport
) -> AttemptResult:
    """``rules_and_model`` whose model failed for good (its retries spent, or an error not worth
    one): the rules' reading, which could not settle the document alone, is judged alone and so
    goes to a person, rather than the job failing with a reading in hand. The attempt's ledger
    entry keeps the model's failure."""
    return _judge_and_complete(
        claim,
        rules,
        document,
        extra={"reading": {"mode": ReadingMode.RULES_AND_MODEL.value, "model_asked": True, "model_answered": False}},
        report=lambda outcome: _traced(dataclasses.replace(failure, outcome=outcome)),
        sources=(ReadingSource.RULES,),
    )


def _complete_read_together(claim: Claim, answer: Answer, rules: InvoiceV1, document: DocumentText) -> AttemptResult:
    """``rules_and_model`` for a document the rules could not settle alone: the two readings
    make one answer (extraction.validation.readings), and that answer is judged."""

    def judge(invoice: InvoiceV1, sources: Sources) -> ValidationOutcome:
        judged, derived = derive_missing(invoice)  # as the completion judges it
        return read_after_model_call(
            functools.partial(
                validate_extraction,
                invoice=judged,
                document=document,
                tenant_id=claim.tenant_id,
                policy_revision=claim.policy_revision,
                sources=sources,
                derived=derived,
            )
        )

    together = read_together(rules, answer.invoice, judge)
    return _judge_and_complete(
        claim,
        together.invoice,
        document,
        extra={**answer.extra, "reading": {"mode": ReadingMode.RULES_AND_MODEL.value, "model_asked": True}},
        report=answer.report,
        sources=together.sources,
        relocated=tuple(path for path in answer.relocated if path not in together.taken_from_rules),
        compared=lambda verdict: judged_together(verdict, together),
    )


def _judge_and_complete(
    claim: Claim,
    invoice: InvoiceV1,
    document: DocumentText,
    *,
    extra: dict[str, Any],
    report: Callable[[str], AttemptReport],
    sources: Sources,
    relocated: tuple[str, ...] = (),
    elements: Mapping[str, str] | None = None,
    omitted_from_v1: Mapping[str, str] | None = None,
    amount_due_terms: AmountDueTerms = NO_TERMS,
    compared: Callable[[ValidationOutcome], ValidationOutcome] | None = None,
) -> AttemptResult:
    """Judge ``invoice`` by the tenant's policy and complete the job under fence and lease:
    SUCCEEDED or REVIEW_REQUIRED. ``extra`` is kept beside the verdict (how evidence was found);
    ``sources`` gave the values (extraction.validation.fields), ``relocated`` had their evidence
    moved, ``elements`` are an e-invoice's XML elements, ``omitted_from_v1`` what of its totals a
    v1 answer cannot hold (counted in its arithmetic) and ``amount_due_terms`` what its XML adds
    to the amount due; ``compared`` adds the check of a second
    reading of the document (the model's of an e-invoice, the rules' beside the model's)."""
    # VAL-1/2: a schema-valid answer can still be invented; the versioned policy decides
    # between SUCCEEDED and REVIEW_REQUIRED, and the verdict is stored with the result.
    # The policy is this process's copy of the revision the claim returned, when it has one
    # (extraction.validation.policy_cache), else one read; the validation holds no lock. The
    # completion wins only if that revision is still the tenant's: if the policy changed
    # meanwhile, the answer is judged again by the policy as it is now (no model call).
    revision = claim.policy_revision
    # What the invoice states without printing it (an amount due from gross and prepaid): filled
    # in by rule, judged as derived, never asked of the model.
    invoice, derived = derive_missing(invoice)
    for _ in range(POLICY_REJUDGE_LIMIT):
        verdict = read_after_model_call(
            functools.partial(
                validate_extraction,
                invoice=invoice,
                document=document,
                tenant_id=claim.tenant_id,
                policy_revision=revision,
                sources=sources,
                omitted_from_v1=omitted_from_v1,
                derived=derived,
                amount_due_terms=amount_due_terms,
            )
        ).with_relocated(relocated)
        if elements is not None:
            verdict = verdict.with_elements(elements)
        if compared is not None:
            # Under a changed policy the readings were weighed with the old one's judgements;
            # only the combined answer is judged again (the weighing is the rare case's detail).
            verdict = compared(verdict)
        if claim.pages is not None:
            # A bundle's part: its pages hold one invoice, or a reviewer looks (ACC-7).
            verdict = with_part_check(verdict, document=document, pages=claim.pages)
        # The invoice's fingerprints claimed for this job (VAL-5); the claim is idempotent, so
        # the rare second run after a dead connection claims the same keys again.
        verdict = read_after_model_call(
            functools.partial(
                with_duplicate_check, verdict, tenant_id=claim.tenant_id, job_id=claim.job_id, invoice=invoice
            )
        )
        validation = {**verdict.as_dict(), **extra}
        # Written with the completions of the process's other slots (execution.completions);
        # this row's verdict is back before anything below runs.
        completed = completions.batcher().submit(
            Completion(
                claim,
                review_required=verdict.review_required,
                output=with_boxes(invoice.model_dump(mode="json", by_alias=True), document),
                validation=validation,
                policy_version=verdict.policy_version,
                report=report(AttemptOutcome.REVIEW_REQUIRED if verdict.review_required else AttemptOutcome.SUCCEEDED),
                policy_revision=verdict.tenant_policy_revision,
            )
        )
        if completed is not CompletionVerdict.POLICY_CHANGED:
            break
        logger.info(
            "tenant policy changed while judging: judging again",
            extra={**claim.log_extra(), "policy_revision": verdict.tenant_policy_revision},
        )
        revision = None  # read the policy as it is now
    else:
        # The policy changed under every verdict: the lease runs out and the reaper retries.
        logger.error("tenant policy kept changing: completion given up", extra=claim.log_extra())
        return AttemptResult.STALE
    won = completed is CompletionVerdict.WON
    if won:
        for reason in verdict.reasons:  # the verdict has committed
            REVIEW_REASONS.labels(reason=reason).inc()
    logger.info(
        "attempt completed" if won else "stale completion discarded",
        extra={**claim.log_extra(), "review_required": verdict.review_required, "reasons": verdict.reasons},
    )
    return AttemptResult.COMPLETED if won else AttemptResult.STALE


def _einvoice_intake(tenant_id: uuid.UUID) -> str | None:
    with db_step():
        return Tenant.objects.filter(pk=tenant_id).values_list("einvoice_intake", flat=True).first()


def _einvoice_answer(document_id: uuid.UUID, document: DocumentText, *, schema: str) -> EInvoiceAnswer | None:
    from extraction.intake.text import einvoice_xml_of  # heavy imports (OCR, PDF)

    with db_step():
        stored = Document.objects.get(pk=document_id)
    with default_storage.open(stored.storage_name, "rb") as handle:
        xml = einvoice_xml_of(handle.read(), stored.content_type)
    return answer_from_einvoice(xml, document, schema=schema) if xml is not None else None


def _complete_from_einvoice(
    claim: Claim, rt: WorkerRuntime, document: DocumentText, answer: EInvoiceAnswer
) -> AttemptResult:
    """The e-invoice's own data as the result: no capacity taken, no model called, no tokens."""
    if rt.lost(claim):
        return AttemptResult.STALE  # nothing was spent; the new owner reads the same XML
    invoice = parse_invoice(json.dumps(answer.output), schema=claim.schema)
    return _judge_and_complete(
        claim,
        invoice,
        document,
        extra={"einvoice": answer.provenance()},
        sources=(ReadingSource.EINVOICE,),
        elements=answer.elements,
        omitted_from_v1=answer.omitted_from_v1,
        amount_due_terms=answer.amount_due_terms,
        report=lambda outcome: _traced(
            AttemptReport(
                outcome=outcome,
                provider=EINVOICE_PROVIDER,
                model=answer.profile[:128],
                input_tokens=0,
                output_tokens=0,
                latency_ms=answer.latency_ms,
            )
        ),
    )


# --- handing back and failing ---------------------------------------------------------------------


def hand_back_interrupted(claim: Claim, provider: str, *, detail: str) -> AttemptResult:
    """The shutdown abandoned the model call: the job goes back to READY at once under a new
    fence, the attempt recorded as interrupted and not counted against the job's budget (an
    eviction is not the job's failure)."""
    with db_step():
        handed_back = lifecycle.hand_back_interrupted(
            claim, report=_report(AttemptOutcome.INTERRUPTED, provider=provider, detail=detail)
        )
    logger.warning(
        "model call abandoned at shutdown: job handed back" if handed_back else "model call abandoned at shutdown",
        extra=claim.log_extra(),
    )
    return AttemptResult.INTERRUPTED if handed_back else AttemptResult.STALE


def _server_not_serving(error: ProviderError) -> bool:
    """A local server that refused the connection or answered 503 (still loading its model)
    did no work: the call never ran."""
    return not error.request_sent or error.http_status == 503


def _wait_for_local_server(claim: Claim, error: ProviderError, pool: str) -> AttemptResult:
    """Our own model server is restarting: the pool has no capacity until it is back. The job is
    handed back unspent and the pool cools down, rather than spending the attempts a restart
    takes (a crash mid-call was already counted when the call broke)."""
    wait = settings.CAPACITY_UNAVAILABLE_RETRY_SECONDS
    limiter.start_cooldown(pool, seconds=wait)
    with db_step():
        lifecycle.hand_back(
            claim,
            available_in_seconds=wait + random.uniform(0, settings.CAPACITY_IN_FLIGHT_RETRY_SECONDS),
            outcome=AttemptOutcome.CAPACITY_DEFERRED,
            detail=f"pool {pool}: local model server not serving: {error}",
        )
    logger.info("waiting for the local model server", extra={**claim.log_extra(), "pool": pool, "error": str(error)})
    return AttemptResult.DEFERRED


def _billed_tokens(error: ProviderError) -> int | None:
    """What a failed call may have cost: nothing if it never left or was refused (429, 5xx,
    4xx); unknown (None: keep the whole reservation, BP-3) if it timed out after being sent."""
    if error.kind == ErrorKind.TIMEOUT and error.request_sent:
        return None
    return 0


def _used_tokens(response: ProviderResponse) -> int | None:
    if response.input_tokens is None and response.output_tokens is None:
        return None
    return (response.input_tokens or 0) + (response.output_tokens or 0)


def _after_provider_error(
    claim: Claim,
    error: ProviderError,
    provider: str,
    response: ProviderResponse | None = None,
    *,
    fallback: Fallback | None = None,
) -> AttemptResult:
    decision = retry.decide(
        error.kind, attempt=claim.attempt, max_attempts=claim.max_attempts, retry_after=error.retry_after_seconds
    )
    outcome = retry.OUTCOME_OF_ERROR[error.kind]
    if error.kind == ErrorKind.TIMEOUT and error.request_sent:
        outcome = AttemptOutcome.UNCERTAIN  # sent, unanswered: it may have run and been billed
    detail = str(error)
    if decision.exhausted:
        detail = f"retries exhausted after {claim.attempt} attempts; last: {detail}"
    report = _report(outcome, response, error if response is None else None, provider=provider, detail=detail)
    if fallback is not None and not decision.retry:
        logger.info("the model gave no answer: the rules' reading is judged alone", extra=claim.log_extra())
        return fallback(report)
    with db_step():
        # The job's error class is the last failure's class; the detail says why it stopped.
        result = lifecycle.retry_or_fail(
            claim,
            report=report,
            retry=decision.retry,
            delay_seconds=decision.delay_seconds,
            error_class=outcome,
        )
    logger.info(
        "attempt failed",
        extra={**claim.log_extra(), "outcome": outcome, "decision": result, "http_status": error.http_status},
    )
    return result


def _report(
    outcome: str,
    response: ProviderResponse | None = None,
    error: ProviderError | None = None,
    provider: str = "",
    detail: str = "",
) -> AttemptReport:
    """The attempt's ledger entry from what the provider answered (or raised), also set on
    the attempt's span."""
    if response is not None:
        report = AttemptReport(
            outcome=outcome,
            provider=provider,
            model=response.model,
            provider_request_id=response.provider_request_id,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            latency_ms=response.latency_ms,
            http_status=response.http_status,
            error_detail=detail,
        )
    elif error is not None:
        report = AttemptReport(
            outcome=outcome,
            provider=provider,
            provider_request_id=error.provider_request_id,
            http_status=error.http_status,
            retry_after_seconds=error.retry_after_seconds,
            error_detail=detail or str(error),
        )
    else:
        report = AttemptReport(outcome=outcome, provider=provider, error_detail=detail)
    earlier = _EARLIER_CALL.get()
    if earlier is not None:
        # The second reader read this attempt's bundle and left it whole: one attempt, one
        # ledger row, its tokens counted there.
        report = dataclasses.replace(
            report,
            input_tokens=_sum(report.input_tokens, earlier.input_tokens),
            output_tokens=_sum(report.output_tokens, earlier.output_tokens),
        )
    return _traced(report)


def _sum(*counts: int | None) -> int | None:
    known = [count for count in counts if count is not None]
    return sum(known) if known else None


# The second reader's call when its answer left the document whole (execute_attempt sets it and
# clears it when the attempt ends): what _report adds to the attempt's ledger entry.
_EARLIER_CALL: contextvars.ContextVar[AttemptReport | None] = contextvars.ContextVar("earlier_call", default=None)


def _traced(report: AttemptReport) -> AttemptReport:
    """``report``, also set on the attempt's span: what the ledger row says, but never the
    error detail (it can quote the model's answer) or anything of the document."""
    attributes: dict[str, str | int] = {"extraction.outcome": report.outcome, "gen_ai.provider.name": report.provider}
    if report.model:
        attributes["gen_ai.response.model"] = report.model
    if report.input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = report.input_tokens
    if report.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = report.output_tokens
    if report.http_status is not None:
        attributes["http.response.status_code"] = report.http_status
    tracing.annotate(attributes)
    return report


# --- the document's text ---------------------------------------------------------------------------


# Document text never changes once extracted (ACC-4: a document version is immutable), so a
# process keeps the most recent ones instead of reading them again for every attempt.
_text_cache: OrderedDict[uuid.UUID, DocumentText] = OrderedDict()
_text_cache_lock = threading.Lock()
TEXT_CACHE_SIZE = 256


def load_document_text(document_id: uuid.UUID, *, ocr_language: str) -> DocumentText:
    """The document's text, extracted on first use and kept, so every attempt and every
    evidence check reads the same page strings. Raises UnreadableDocument."""
    with _text_cache_lock:
        cached = _text_cache.get(document_id)
        if cached is not None:
            _text_cache.move_to_end(document_id)
            return cached
    text = _load_or_extract_text(document_id, ocr_language=ocr_language)
    with _text_cache_lock:
        _text_cache[document_id] = text
        while len(_text_cache) > TEXT_CACHE_SIZE:
            _text_cache.popitem(last=False)
    return text


def _load_or_extract_text(document_id: uuid.UUID, *, ocr_language: str) -> DocumentText:
    from extraction.intake.geometry import geometry_from_json, geometry_to_json
    from extraction.intake.text import (  # heavy imports (OCR, PDF)
        embedded_invoice_xml,
        extract_document_text,
        with_embedded_einvoice,
    )

    with db_step():
        row = ExtractedText.objects.filter(document_id=document_id).first()
        if row is None:
            document = Document.objects.get(pk=document_id)
    if row is None:
        with default_storage.open(document.storage_name, "rb") as handle:
            data = handle.read()
        text = extract_document_text(data, document.content_type, ocr_language=ocr_language)
        xml = embedded_invoice_xml(data) if document.content_type == "application/pdf" else None
        if xml is not None:
            text = with_embedded_einvoice(text, xml[1])
        with db_step(), transaction.atomic():
            ExtractedText.objects.bulk_create(
                [
                    ExtractedText(
                        document_id=document_id,
                        pages=list(text.pages),
                        source=text.source,
                        embedded_xml_name=xml[0] if xml else "",
                        einvoice_page=text.einvoice_page,
                        geometry=geometry_to_json(text.geometry),
                    )
                ],
                ignore_conflicts=True,  # a concurrent attempt extracted it too; the first row stays
            )
            row = ExtractedText.objects.get(document_id=document_id)
    return DocumentText(
        pages=tuple(row.pages),
        source=row.source,
        einvoice_page=row.einvoice_page,
        geometry=geometry_from_json(row.geometry),
    )
