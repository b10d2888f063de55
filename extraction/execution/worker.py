"""The LLM worker: claim a job from PostgreSQL, call the model with no DB connection held,
complete under the fence. Model calls are I/O, so one process carries hundreds on threads;
DB steps borrow a pooled connection between calls, and one heartbeat thread extends every
in-flight lease with a single UPDATE."""

from __future__ import annotations

import contextvars
import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection, transaction
from opentelemetry.trace import Span

from accounts.models import EInvoiceIntake, Tenant
from config import probes, tracing
from config.instruments import PROVIDER_RATE_LIMITED
from config.outages import Outage
from extraction.capacity import limiter
from extraction.capacity.tokens import reservation
from extraction.execution import lifecycle, retry
from extraction.execution.faults import fault_point
from extraction.execution.lifecycle import AttemptReport, Claim
from extraction.intake.text import DocumentText
from extraction.models import AttemptOutcome, Document, ExtractionJob
from extraction.models import DocumentText as DocumentTextRow
from extraction.providers import provider_for_policy
from extraction.providers.base import ErrorKind, ProviderError, ProviderRequest, ProviderResponse
from extraction.providers.einvoice import PROVIDER_NAME as EINVOICE_PROVIDER
from extraction.providers.einvoice import EInvoiceAnswer, answer_from_einvoice
from extraction.validation.cross_check import model_agreement
from extraction.validation.evidence import relocate_evidence
from extraction.validation.policy import validate_extraction
from extraction.validation.schema import InvoiceV1

logger = logging.getLogger("extraction.worker")
# The database as the worker's slots and heartbeat see it: one warning per outage.
DATABASE = Outage(logger, "PostgreSQL (llm worker)")

MODEL_ANSWER_SCHEMA = "invoice.v1"


@contextmanager
def db_step() -> Iterator[None]:
    """A unit of DB work that gives its connection back at the end (to the pool when one
    is configured), so no connection is held across a model call."""
    try:
        yield
    finally:
        connection.close()


class WorkerRuntime:
    """Per-process state: identity, the in-flight registry, the heartbeat, the stop flags."""

    def __init__(self, worker_id: str | None = None) -> None:
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        # Set by SIGTERM: slots claim nothing more.
        self.stopping = threading.Event()
        # Set when the shutdown grace is nearly spent: model calls still running are abandoned
        # and their jobs handed back (begin_shutdown).
        self.abandoning = threading.Event()
        # The events slots wait on for their model calls' answers; abandon() sets them all.
        self._waiting: set[threading.Event] = set()
        self._lock = threading.Lock()
        self._in_flight: dict[uuid.UUID, Claim] = {}
        self._lost: set[uuid.UUID] = set()
        self._heartbeat: threading.Thread | None = None
        # Jobs a slot took by claiming again (with no wake-up spent on them) and ran to
        # completion: their own wake-ups, still queued, have nothing left to do (run_slot).
        self._ran_unwoken: OrderedDict[uuid.UUID, None] = OrderedDict()

    # -- in-flight registry -----------------------------------------------------------------
    def track(self, claim: Claim) -> None:
        with self._lock:
            self._in_flight[claim.job_id] = claim
        self._ensure_heartbeat()

    def untrack(self, claim: Claim) -> None:
        with self._lock:
            self._in_flight.pop(claim.job_id, None)
            self._lost.discard(claim.job_id)

    def lost(self, claim: Claim) -> bool:
        with self._lock:
            return claim.job_id in self._lost

    def in_flight(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def ran_unwoken(self, job_id: uuid.UUID) -> None:
        with self._lock:
            self._ran_unwoken[job_id] = None
            while len(self._ran_unwoken) > RAN_UNWOKEN_KEPT:
                self._ran_unwoken.popitem(last=False)

    def take_spent_wake_up(self, job_id: uuid.UUID | None) -> bool:
        """True (once) if a slot of this process already ran ``job_id`` without its wake-up."""
        if job_id is None:
            return False
        with self._lock:
            return self._ran_unwoken.pop(job_id, False) is None

    # -- shutdown ------------------------------------------------------------------------------
    def begin_shutdown(self, grace_seconds: float) -> float:
        """SIGTERM: stop claiming now; let model calls run until the grace is nearly spent, then
        abandon the ones still running so their jobs are handed back before the process must be
        gone. Returns the seconds calls are given.

        A call is given the whole grace rather than judged hopeless at once: it is paid for
        either way, and most answer well inside their timeout. What is left at the end is
        handed back under a new fence (``_hand_back_interrupted``), so the job is claimable at
        once instead of after its lease, and a late answer in this process is refused."""
        self.stopping.set()
        drain = max(0.0, grace_seconds - hand_back_margin(grace_seconds))
        if not self.abandoning.is_set():
            timer = threading.Timer(drain, self.abandon)
            timer.daemon = True
            timer.start()
        logger.info(
            "shutting down: no more claims; model calls have %.1f s to answer",
            drain,
            extra={"in_flight": self.in_flight()},
        )
        return drain

    def abandon(self) -> None:
        """Wake every slot waiting for a model call: those calls are given up."""
        with self._lock:
            self.abandoning.set()
            waiting = list(self._waiting)
        for answered_or_abandoned in waiting:
            answered_or_abandoned.set()

    @contextmanager
    def waiting_for_call(self, woken: threading.Event) -> Iterator[None]:
        """Register ``woken`` to be set by :meth:`abandon`; Interrupted if that already happened."""
        with self._lock:
            if self.abandoning.is_set():
                raise Interrupted("the worker is shutting down")
            self._waiting.add(woken)
        try:
            yield
        finally:
            with self._lock:
                self._waiting.discard(woken)

    # -- heartbeat (EXE-2) ---------------------------------------------------------------------
    def _ensure_heartbeat(self) -> None:
        with self._lock:
            if self._heartbeat is None or not self._heartbeat.is_alive():
                self._heartbeat = threading.Thread(target=self._beat_forever, name="lease-heartbeat", daemon=True)
                self._heartbeat.start()

    def beat_once(self) -> set[uuid.UUID]:
        with self._lock:
            claims = list(self._in_flight.values())
        with db_step():
            lost = lifecycle.extend_leases(claims)
        with self._lock:
            # A job this process handed back (or retried) and another worker took since has a
            # newer fence, but it is no longer ours to stop: only the ones still in our hands.
            lost = {job_id for job_id in lost if job_id in self._in_flight}
            self._lost |= lost
        if lost:
            for job_id in lost:
                logger.warning(
                    "lease lost: the attempt's result will be discarded",
                    extra={"job_id": str(job_id), "worker_id": self.worker_id},
                )
        return lost

    def _beat_forever(self) -> None:
        while True:
            # A lease heartbeat that stops turning loses every lease of the process: liveness
            # fails after it has missed a few (a failed beat still turns: the lease has margin).
            probes.beat("lease-heartbeat", bound_seconds=4 * settings.HEARTBEAT_SECONDS + 30)
            time.sleep(settings.HEARTBEAT_SECONDS)
            try:
                self.beat_once()
            except Exception as exc:  # noqa: BLE001 - a failed beat is retried; the lease has margin
                DATABASE.failed(exc, consequence="leases are extended at the next heartbeat")
            else:
                DATABASE.succeeded()


def hand_back_margin(grace_seconds: float) -> float:
    """How long before the grace ends the running calls are abandoned: time to hand their jobs
    back (a statement each) and for Celery to ack and stop, on a loaded host."""
    return max(1.5, min(5.0, grace_seconds / 4))


class Interrupted(Exception):
    """The worker's shutdown abandoned this attempt's model call."""


def call_provider(provider: Any, request: ProviderRequest, rt: WorkerRuntime) -> ProviderResponse:
    """``provider.extract(request)``, abandoned (``Interrupted``) if the shutdown grace runs out
    first.

    The call runs on a daemon thread of its own so that this slot can give up waiting: an HTTP
    read cannot be interrupted from outside, and Celery's warm shutdown waits for every slot.
    An abandoned call's thread dies with the process; its answer, if one comes, is dropped. An
    answer that arrives together with the shutdown is kept."""
    outcome: dict[str, Any] = {}
    woken = threading.Event()
    # The call's own spans (the HTTP client's) stay children of the attempt's span.
    context = contextvars.copy_context()

    def _call() -> None:
        try:
            outcome["response"] = context.run(provider.extract, request)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting slot as it is
            outcome["error"] = exc
        finally:
            woken.set()

    with rt.waiting_for_call(woken):
        threading.Thread(target=_call, name="provider-call", daemon=True).start()
        woken.wait()
    if "error" in outcome:
        raise outcome["error"]
    if "response" in outcome:
        return outcome["response"]
    raise Interrupted("the worker's shutdown grace ran out during the model call")


# Enough for the wake-ups a busy worker has queued (prefetch: one per thread); a job
# forgotten here only costs its wake-up one empty claim.
RAN_UNWOKEN_KEPT = 10_000

_runtime: WorkerRuntime | None = None
_runtime_lock = threading.Lock()


def runtime() -> WorkerRuntime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = WorkerRuntime()
        return _runtime


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
    from extraction.intake.text import (  # heavy imports (OCR, PDF)
        embedded_invoice_xml,
        extract_document_text,
        with_embedded_einvoice,
    )

    with db_step():
        row = DocumentTextRow.objects.filter(document_id=document_id).first()
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
            DocumentTextRow.objects.bulk_create(
                [
                    DocumentTextRow(
                        document_id=document_id,
                        pages=list(text.pages),
                        source=text.source,
                        embedded_xml_name=xml[0] if xml else "",
                        einvoice_page=text.einvoice_page,
                    )
                ],
                ignore_conflicts=True,  # a concurrent attempt extracted it too; the first row stays
            )
            row = DocumentTextRow.objects.get(document_id=document_id)
    return DocumentText(pages=tuple(row.pages), source=row.source, einvoice_page=row.einvoice_page)


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
    return _traced(report)


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


def _attempt_span(claim: Claim) -> AbstractContextManager[Span]:
    """The attempt's span in the job's trace, read from the job row (a slot claims from the
    table: its wake-up's trace is not the job's, and is linked instead)."""
    trace_context = None
    if tracing.enabled():
        with db_step():
            job = ExtractionJob.objects.filter(pk=claim.job_id)
            trace_context = job.values_list("trace_context", flat=True).first()
    return tracing.step_span(
        "extraction.attempt",
        trace_context=trace_context,
        attributes={
            "extraction.job_id": str(claim.job_id),
            "extraction.attempt": claim.attempt,
            "extraction.fence": claim.fence,
            "extraction.model_policy": claim.model_policy,
        },
    )


def execute_attempt(claim: Claim, rt: WorkerRuntime) -> str:
    """Run one claimed attempt to a persisted outcome; returns what happened.

    1. Load the document text (extracted once and kept); unreadable → terminal.
    1b. A document that is or embeds an e-invoice, for a tenant reading them (structured_first):
        its XML's answer, validated and completed now, with no capacity, model or tokens.
    2. Take pool capacity; denied → hand the job back with no attempt spent.
    3. Call the provider with no DB connection held, bounded by the attempt timeout and the deadline.
    4. If the heartbeat lost the lease meanwhile, write nothing but the ledger row.
    5. Parse the output against the schema; invalid → retry, then terminal.
    6. Validate with the tenant's policy; complete under fence + live lease: SUCCEEDED or REVIEW_REQUIRED.
    """
    from extraction.intake.text import UnreadableDocument
    from extraction.validation.schema import SchemaError, SchemaValidationError, parse_invoice

    log = claim.log_extra()
    rt.track(claim)
    try:
        try:
            document = load_document_text(claim.document_id, ocr_language=claim.options.get("language", "eng"))
        except UnreadableDocument as exc:
            with db_step():
                return lifecycle.retry_or_fail(
                    claim,
                    report=_report(AttemptOutcome.UNREADABLE_DOCUMENT, detail=str(exc)),
                    retry=False,
                    delay_seconds=0,
                    error_class="unreadable_document",
                )

        einvoice: EInvoiceAnswer | None = None
        if document.einvoice_page is not None:
            intake = _einvoice_intake(claim.tenant_id)
            if intake != EInvoiceIntake.MODEL_ONLY:
                einvoice = _einvoice_answer(claim.document_id, document, schema=claim.schema)
            if einvoice is not None and intake == EInvoiceIntake.STRUCTURED_FIRST:
                return _complete_from_einvoice(claim, rt, document, einvoice)

        binding = provider_for_policy(claim.model_policy)
        provider = binding.provider
        read = document.for_providers()
        limits = limiter.pool_limits(binding.pool)
        tokens = reservation(
            read.full_text,
            model=binding.model,
            max_output_tokens=binding.max_output_tokens,
            tokenizer_url=binding.local_server,
        )
        # The permit names its attempt, so the self-audit can give back one whose attempt is over.
        granted = limiter.acquire(limits, tokens=tokens, holder=limiter.permit_holder(claim.job_id, claim.fence))
        if isinstance(granted, limiter.Denial):
            # BP-3/RTY-2: no attempt burnt, no connection or delivery held while waiting.
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
                extra={**log, "pool": binding.pool, "waits_for": granted.reason, "retry_in_seconds": round(wait, 3)},
            )
            return "deferred"
        remaining = (claim.deadline_at.timestamp() - time.time()) - settings.COMMIT_MARGIN_SECONDS
        request = ProviderRequest(
            job_id=str(claim.job_id),
            attempt=claim.attempt,
            document=read,
            # The rules and the models answer invoice.v1's fields; a v2 job gets them upgraded,
            # with what only v2 carries (allowances, VAT breakdown, ...) null.
            schema=MODEL_ANSWER_SCHEMA,
            model=binding.model,
            max_output_tokens=binding.max_output_tokens,
            timeout_seconds=max(1.0, min(settings.ATTEMPT_TIMEOUT_SECONDS, remaining)),
        )
        try:
            response = call_provider(provider, request, rt)
        except Interrupted as exc:
            limiter.release(granted, actual_tokens=None)  # sent and unanswered: it may be billed
            return _hand_back_interrupted(claim, provider.name, detail=str(exc))
        except ProviderError as exc:
            limiter.release(granted, actual_tokens=_billed_tokens(exc))
            if exc.kind == ErrorKind.RATE_LIMITED:
                PROVIDER_RATE_LIMITED.labels(pool=binding.pool).inc()
            if exc.kind == ErrorKind.RATE_LIMITED and granted.counted:  # an unlimited pool cools nobody down
                limiter.start_cooldown(
                    binding.pool, seconds=exc.retry_after_seconds or settings.CAPACITY_DEFAULT_COOLDOWN_SECONDS
                )
            if binding.local_server and _server_not_serving(exc):
                return _wait_for_local_server(claim, exc, binding.pool)
            return _after_provider_error(claim, exc, provider.name)
        except BaseException:
            limiter.release(granted, actual_tokens=None)  # unknown: keep the reservation
            raise
        limiter.release(granted, actual_tokens=_used_tokens(response))
        fault_point("after_provider_response")

        if rt.lost(claim):
            # Someone else owns the job now; the guarded completion would refuse anyway, and
            # the paid call is recorded as such (EXE-6: fencing cannot undo it).
            with db_step():
                lifecycle.record_discarded_attempt(
                    claim,
                    _report(
                        AttemptOutcome.STALE_COMPLETION,
                        response,
                        provider=provider.name,
                        detail="lease lost during the model call",
                    ),
                )
            return "stale"

        try:
            invoice = parse_invoice(response.output_text, schema=claim.schema)
        except (SchemaError, SchemaValidationError) as exc:
            error = ProviderError(
                ErrorKind.INVALID_OUTPUT,
                f"{type(exc).__name__}: {exc}"[:1000],
                http_status=response.http_status,
                provider_request_id=response.provider_request_id,
            )
            return _after_provider_error(claim, error, provider.name, response=response)

        # The model's quotes are evidence, its character offsets are not (small models miscount);
        # they are re-found in what the model read.
        invoice, relocations = relocate_evidence(invoice, read)
        extra = {"evidence_relocated": [relocation.as_dict() for relocation in relocations]} if relocations else {}
        if einvoice is not None:
            # einvoice_intake "both": the XML's answer is the result, the model's its cross-check.
            return _validate_and_complete(
                claim,
                parse_invoice(json.dumps(einvoice.output), schema=claim.schema),
                document,
                extra={**extra, "einvoice": einvoice.provenance()},
                report=lambda outcome: _report(outcome, response, provider=provider.name),
                cross_checked_by=invoice,
            )
        return _validate_and_complete(
            claim,
            invoice,
            document,
            extra=extra,
            report=lambda outcome: _report(outcome, response, provider=provider.name),
        )
    finally:
        rt.untrack(claim)


def _validate_and_complete(
    claim: Claim,
    invoice: InvoiceV1,
    document: DocumentText,
    *,
    extra: dict[str, Any],
    report: Callable[[str], AttemptReport],
    cross_checked_by: InvoiceV1 | None = None,
) -> str:
    """Judge ``invoice`` by the tenant's policy and complete the job under fence and lease:
    SUCCEEDED or REVIEW_REQUIRED. ``extra`` is kept beside the verdict (how evidence was found);
    ``cross_checked_by`` is a model's answer that must agree with ``invoice`` (model_agrees)."""
    with db_step():
        # VAL-1/2: a schema-valid answer can still be invented; the versioned policy decides
        # between SUCCEEDED and REVIEW_REQUIRED, and the verdict is stored with the result.
        # The policy's read and the completion are one statement each; the validation runs
        # between them, holding no lock.
        verdict = validate_extraction(invoice=invoice, document=document, tenant_id=claim.tenant_id)
        if cross_checked_by is not None:
            verdict = verdict.with_check(model_agreement(invoice, cross_checked_by))
        validation = {**verdict.as_dict(), **extra}
        completed = lifecycle.complete_job(
            claim,
            review_required=verdict.review_required,
            output=invoice.model_dump(mode="json", by_alias=True),
            validation=validation,
            policy_version=verdict.policy_version,
            report=report(AttemptOutcome.REVIEW_REQUIRED if verdict.review_required else AttemptOutcome.SUCCEEDED),
        )
    logger.info(
        "attempt completed" if completed else "stale completion discarded",
        extra={**claim.log_extra(), "review_required": verdict.review_required, "reasons": verdict.reasons},
    )
    return "completed" if completed else "stale"


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


def _complete_from_einvoice(claim: Claim, rt: WorkerRuntime, document: DocumentText, answer: EInvoiceAnswer) -> str:
    """The e-invoice's own data as the result: no capacity taken, no model called, no tokens."""
    from extraction.validation.schema import parse_invoice

    if rt.lost(claim):
        return "stale"  # nothing was spent; the new owner reads the same XML
    invoice = parse_invoice(json.dumps(answer.output), schema=claim.schema)
    return _validate_and_complete(
        claim,
        invoice,
        document,
        extra={"einvoice": answer.provenance()},
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


def _hand_back_interrupted(claim: Claim, provider: str, *, detail: str) -> str:
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
    return "interrupted" if handed_back else "stale"


def _server_not_serving(error: ProviderError) -> bool:
    """A local server that refused the connection or answered 503 (still loading its model)
    did no work: the call never ran."""
    return not error.request_sent or error.http_status == 503


def _wait_for_local_server(claim: Claim, error: ProviderError, pool: str) -> str:
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
    return "deferred"


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
    claim: Claim, error: ProviderError, provider: str, response: ProviderResponse | None = None
) -> str:
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


def run_slot(
    rt: WorkerRuntime | None = None,
    *,
    max_seconds: float | None = None,
    max_jobs: int | None = None,
    woken_for: str | None = None,
) -> int:
    """One worker slot; returns the attempts run (0: no work found). Claiming again at once
    serves jobs with no wake-up of their own (retries due, recovered jobs, a backlog from a
    broker outage) as slots free up.

    1. Return 0 if ``woken_for`` names a job a slot here already completed by claiming again.
    2. Until stopping or a bound: no pool with headroom → stop; claim a job, none → stop.
    3. Run its attempt (a crash is logged; the lease expires and the reaper retries).
    4. Remember a job completed by claiming again, so its queued wake-up stops at step 1.
    5. Stop after a deferral or when the claim saw no other eligible job.
    """
    rt = rt or runtime()
    if woken_for is not None and rt.take_spent_wake_up(_job_id(woken_for)):
        return 0
    max_seconds = settings.WORKER_SLOT_SECONDS if max_seconds is None else max_seconds
    started = time.monotonic()
    ran = 0
    limiter.forget_answered_headroom()  # a release of this thread's last wake-up is old news
    while not rt.stopping.is_set() and time.monotonic() - started < max_seconds:
        if max_jobs is not None and ran >= max_jobs:
            break
        policies = policies_with_capacity()
        if not policies:
            break  # every pool is saturated or cooling down: the scheduler wakes us when due
        with db_step():
            claim = lifecycle.claim_next_job(worker_id=rt.worker_id, policies=policies)
        if claim is None:
            break
        claimed_again = ran > 0
        ran += 1
        try:
            with _attempt_span(claim) as span:
                outcome = execute_attempt(claim, rt)
                span.set_attribute("extraction.attempt.result", outcome)
        except Exception as exc:  # noqa: BLE001 - a bug in one attempt must not kill the slot
            DATABASE.failed(
                exc,
                consequence="an attempt could not be recorded; its lease expires and the reaper retries",
                extra=claim.log_extra(),
            )
            continue
        if claimed_again and outcome == "completed":
            rt.ran_unwoken(claim.job_id)
        if outcome == "deferred" or not claim.more_eligible:
            break
    return ran


def _job_id(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None  # a malformed hint is only a plain wake-up


def policies_with_capacity() -> list[str]:
    """Model policies whose provider pool has headroom right now (a Redis pre-check)."""
    pools: dict[str, bool] = {}
    allowed = []
    for policy, config in settings.MODEL_POLICIES.items():
        pool = config["provider_pool"]
        if pool not in pools:
            with db_step():
                pools[pool] = limiter.has_headroom(limiter.pool_limits(pool))
        if pools[pool]:
            allowed.append(policy)
    return allowed
