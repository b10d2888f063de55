"""Distributed tracing (OpenTelemetry): one trace per job, across every process.

Off unless the standard OpenTelemetry environment asks for it (:func:`tracing_requested`):
then nothing is built, nothing is exported, and every helper here returns at its first line.
On, each process calls :func:`configure_tracing` once at start with its role (``web``,
``relay``, ``ingress``, ``worker``, ``scheduler``, ``delivery``, ``ws``, ``notifier``; the
``service.name`` unless ``OTEL_SERVICE_NAME`` names it): a tracer provider whose batch
processor sends OTLP/HTTP (endpoint, headers, compression, timeout, batching and sampling all
from their own ``OTEL_*`` variables), and the maintained instrumentations of Django, Celery,
psycopg and requests.

A job's trace starts at the request that accepted it. Its W3C trace context is stored with the
job row and its outbox row (:func:`current_trace_context`), so a step that runs from a row
rather than from a message (an attempt claimed from the table, a delivery, a review decision,
a notice) still joins the job's trace (:func:`step_span`); the relay carries the context on in
the message headers, where Celery's instrumentation picks it up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from opentelemetry import propagate, trace
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace import Span as SdkSpan

# The psycopg instrumentation's scope: statements with no enclosing span are dropped.
_STATEMENT_SCOPE = "opentelemetry.instrumentation.psycopg"

_lock = threading.Lock()
_provider: TracerProvider | None = None


def tracing_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces: ``OTEL_TRACES_EXPORTER=otlp``, or an
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` with no exporter
    named. ``OTEL_SDK_DISABLED=true`` and ``OTEL_TRACES_EXPORTER=none`` turn it off whatever
    else is set. An exporter or protocol this service does not ship (grpc, zipkin, console) is
    ImproperlyConfigured: a tracing set-up that quietly exports nothing is found out too late.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {name.strip().lower() for name in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()}
    if exporters - {"otlp", "none"}:
        raise ImproperlyConfigured(
            f"OTEL_TRACES_EXPORTER={environ['OTEL_TRACES_EXPORTER']!r}: only 'otlp' (OTLP/HTTP) or 'none' is supported."
        )
    if "none" in exporters:
        return False
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(name, "").strip().lower()
        if protocol and protocol != "http/protobuf":
            raise ImproperlyConfigured(f"{name}={protocol!r}: only 'http/protobuf' is supported.")
    return "otlp" in exporters or bool(
        environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def configure_tracing(service_name: str) -> bool:
    """Set up tracing for this process if the environment asks for it; True if it is on.

    1. Not requested (or already set up in this process): return at once.
    2. The resource: ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` if they name the
       service, else ``service_name``.
    3. A tracer provider with a batch processor exporting OTLP/HTTP. The processor's thread is
       started here, in the process that records: gunicorn imports the WSGI module in each
       worker after the fork, and a module preloaded before a fork gets its thread restarted in
       each child by the SDK (``os.register_at_fork``). It is flushed at exit (atexit, and
       :func:`shutdown_tracing` where a server has a shutdown hook).
    4. Instrument Django (request spans; ``TRACING_UNTRACED_URLS`` left out), Celery
       (publish and run spans, the context in the message headers), psycopg (statements, with
       no SQL comments added; a statement outside any span, such as a sweep's or a heartbeat's,
       is dropped rather than made a trace of its own) and requests.
    """
    global _provider
    with _lock:
        if _provider is not None or not tracing_requested():
            return _provider is not None
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.instrumentation.celery import CeleryInstrumentor
        from opentelemetry.instrumentation.django import DjangoInstrumentor
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from opentelemetry.instrumentation.requests import RequestsInstrumentor
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create()
        # Resource.create() falls back to "unknown_service:<executable>" when nothing named it.
        if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: service_name}))
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(_statements_inside_spans(BatchSpanProcessor(OTLPSpanExporter())))
        trace.set_tracer_provider(provider)

        # The probes and the scraper call every few seconds: not worth a trace each.
        DjangoInstrumentor().instrument(excluded_urls=settings.TRACING_UNTRACED_URLS, is_sql_commentor_enabled=False)
        CeleryInstrumentor().instrument()
        PsycopgInstrumentor().instrument(enable_commenter=False)
        RequestsInstrumentor().instrument()
        _provider = provider
        return True


def shutdown_tracing() -> None:
    """Export what is buffered and stop (a worker's shutdown hook); a no-op when tracing is off."""
    if _provider is not None:
        _provider.shutdown()


def enabled() -> bool:
    """Whether this process records spans (so a row's stored trace context is worth reading)."""
    return _provider is not None


def current_trace_context() -> dict[str, str]:
    """The current span's W3C trace context (``traceparent``, ``tracestate``) as a carrier to
    store with a row or send in headers; empty when tracing is off or no span is current."""
    carrier: dict[str, str] = {}
    if _provider is not None:
        propagate.inject(carrier)
    return carrier


def annotate(attributes: Mapping[str, AttributeValue]) -> None:
    """Set attributes on the current span (the request's, a Celery task's, a step's)."""
    if _provider is not None:
        trace.get_current_span().set_attributes(attributes)


@contextmanager
def step_span(
    name: str,
    *,
    trace_context: Mapping[str, Any] | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> Iterator[Span]:
    """A span for one step of a job, in the job's trace.

    ``trace_context`` is the context stored with the job's row (or the outbox row). The span is
    a child of the current span when that already belongs to the job's trace (a message carried
    the context here); otherwise a child of the stored context, linked to the current span (the
    wake-up, hint or operator's request that triggered the step, a trace of its own). With no
    stored context it is a plain child of the current span.

    A failure is recorded as the span's error status with the exception's type only: an
    exception's message may quote what the model answered or the document says.
    """
    if _provider is None:
        yield INVALID_SPAN
        return
    parent: Context | None = None
    links: list[Link] = []
    current = trace.get_current_span().get_span_context()
    if trace_context:
        stored_context = propagate.extract(trace_context)
        stored = trace.get_current_span(stored_context).get_span_context()
        if stored.is_valid and stored.trace_id != current.trace_id:
            parent = stored_context
            if current.is_valid:
                links.append(Link(current))
    tracer = trace.get_tracer("invoice_extraction")
    with tracer.start_as_current_span(
        name,
        context=parent,
        kind=kind,
        attributes=attributes,
        links=links,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def log_fields() -> dict[str, str]:
    """``trace_id`` and ``span_id`` of the current span if it is recording, for a log line."""
    span = trace.get_current_span()
    if not span.is_recording():  # no span, the invalid one, or one the sampler left out
        return {}
    context = span.get_span_context()
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}


def _statements_inside_spans(inner: SpanProcessor) -> SpanProcessor:
    """``inner`` (the batch processor), minus database statements that have no parent span.

    Every statement of a traced step is a child of that step's span. The statements of the
    loops between steps (the scheduler's sweeps, the relay's and the notifier's polls, the
    lease heartbeat) would each be a one-span trace, several a second per process: dropped.
    Defined here so that the SDK is imported only when tracing is on.
    """
    from opentelemetry.sdk.trace import SpanProcessor

    class StatementsInsideSpans(SpanProcessor):
        def on_start(self, span: SdkSpan, parent_context: Context | None = None) -> None:
            inner.on_start(span, parent_context=parent_context)

        def _on_ending(self, span: SdkSpan) -> None:
            inner._on_ending(span)

        def on_end(self, span: ReadableSpan) -> None:
            scope = span.instrumentation_scope
            if span.parent is None and scope is not None and scope.name == _STATEMENT_SCOPE:
                return
            inner.on_end(span)

        def shutdown(self) -> None:
            inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return inner.force_flush(timeout_millis)

    return StatementsInsideSpans()
