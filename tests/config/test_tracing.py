"""Tracing (OPS-2): one trace per job across every process, each attempt its own span.

The processes are the real ones (gunicorn web, relay, the ingress, LLM and delivery Celery
workers, the scheduler, the notifier, and the reference ERP in a gunicorn of its own), each
exporting OTLP/HTTP to a small receiver on loopback that decodes what they send with
opentelemetry-proto. Off by default: with the standard variables unset, or tracing switched
off by them, a process builds no exporter and sends nothing.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
from opentelemetry.proto.trace.v1.trace_pb2 import Status as StatusMessage

from config.tracing import tracing_requested
from delivery import dispatch
from delivery.endpoints import register_endpoint
from delivery.erp.models import ErpConnection, ErpLedgerEntry
from extraction.models import Attempt, ExtractionJob, JobEvent
from tests.factories import unique_invoice
from tests.system import ROOT, VENV_BIN, SystemProcesses, system_env, wait_for

SERVER = SpanMessage.SpanKind.SPAN_KIND_SERVER
PRODUCER = SpanMessage.SpanKind.SPAN_KIND_PRODUCER
CLIENT = SpanMessage.SpanKind.SPAN_KIND_CLIENT


# --- a small OTLP/HTTP receiver ------------------------------------------------------------------


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root span
    attributes: dict[str, Any]
    links: tuple[tuple[str, str], ...]  # (trace id, span id) of each linked span
    status: tuple[int, str] = (0, "")  # (code, description)
    events: tuple[str, ...] = ()  # their names ("exception" for a recorded one)


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, which) if which else None


class OtlpReceiver:
    """``POST /v1/traces`` on a loopback port: protobuf bodies (gzip or deflate encoded, or not),
    decoded into :class:`ReceivedSpan` rows, answered as an OTLP collector does."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.encodings: set[str] = set()  # the Content-Encoding of each request ("" for none)
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces" or "protobuf" not in (self.headers.get("Content-Type") or ""):
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver.take(ExportTraceServiceRequest.FromString(body), encoding)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def take(self, request: ExportTraceServiceRequest, encoding: str) -> None:
        received = []
        for resource_spans in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            service=str(resource.get("service.name")),
                            name=span.name,
                            kind=span.kind,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            attributes={kv.key: _value(kv.value) for kv in span.attributes},
                            links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
                            status=(span.status.code, span.status.message),
                            events=tuple(event.name for event in span.events),
                        )
                    )
        with self._lock:
            self.requests += 1
            self.encodings.add(encoding)
            self.spans.extend(received)

    def snapshot(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def _without_otel(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if not k.startswith("OTEL_")}


# --- off by default ---------------------------------------------------------------------------------

# A process's start, as the run_* commands and the WSGI/ASGI modules do it, then one step.
_PROCESS = """
import json, sys
from config import tracing
on = tracing.configure_tracing("relay")
with tracing.step_span("probe", trace_context=None, attributes={"probe": True}) as span:
    context = tracing.current_trace_context()
    recording = span.is_recording()
tracing.shutdown_tracing()
print(json.dumps({
    "on": on,
    "recording": recording,
    "context": context,
    "exporter_modules": sorted(m for m in sys.modules if m.startswith("opentelemetry.exporter")),
    "sdk_loaded": "opentelemetry.sdk.trace" in sys.modules,
}))
"""


def _run_process(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEVELOPMENT": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "switches",
    [
        pytest.param(None, id="no OTEL variables"),
        pytest.param({"OTEL_SDK_DISABLED": "true"}, id="OTEL_SDK_DISABLED"),
        pytest.param({"OTEL_TRACES_EXPORTER": "none"}, id="OTEL_TRACES_EXPORTER=none"),
    ],
)
def test_with_tracing_not_asked_for_no_exporter_is_built_and_nothing_is_sent(receiver, switches):
    env = _without_otel(os.environ)
    if switches is not None:  # the endpoint is there, and the switch turns tracing off anyway
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, **switches})

    process = _run_process(env)

    assert process == {"on": False, "recording": False, "context": {}, "exporter_modules": [], "sdk_loaded": False}
    assert receiver.requests == 0


def test_with_an_otlp_endpoint_a_process_exports_its_spans_under_its_role(receiver):
    env = {
        **_without_otel(os.environ),
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",  # read by the SDK's exporter itself
    }

    process = _run_process(env)

    assert process["on"] is True and process["recording"] is True
    assert set(process["context"]) == {"traceparent"}
    (probe,) = receiver.snapshot()  # exported by the shutdown's flush
    assert (probe.service, probe.name, probe.attributes) == ("relay", "probe", {"probe": True})
    version, trace_id, span_id, flags = process["context"]["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", probe.trace_id, probe.span_id)
    assert int(flags, 16) & 1  # sampled
    assert receiver.encodings == {"gzip"}


def test_otel_service_name_overrides_the_role(receiver):
    env = {**_without_otel(os.environ), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "edge"}
    _run_process(env)
    assert [span.service for span in receiver.snapshot()] == ["edge"]


# Steps as the processes run them: from a row, while a wake-up's span is current; from a
# message that carried the job's context; with nothing current; failing.
_STEPS = """
from opentelemetry import propagate, trace
from config import tracing
tracing.configure_tracing("worker")
tracer = trace.get_tracer("test")
with tracer.start_as_current_span("accept"):
    stored = tracing.current_trace_context()
with tracer.start_as_current_span("wake-up"):
    with tracing.step_span("from the row", trace_context=stored):
        pass
with tracer.start_as_current_span("consumer", context=propagate.extract(stored)):
    with tracing.step_span("in the message's trace", trace_context=stored):
        pass
with tracing.step_span("nothing current", trace_context=stored):
    pass
try:
    with tracing.step_span("fails", trace_context=stored):
        raise ValueError("Invoice number: INV-4711")
except ValueError:
    pass
tracing.shutdown_tracing()
"""


def test_a_step_joins_the_jobs_trace_from_its_row_and_links_what_triggered_it(receiver):
    env = {**_without_otel(os.environ), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    subprocess.run(
        [sys.executable, "-c", _STEPS],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEVELOPMENT": "1"},
        timeout=60,
        check=True,
    )
    raw = {span.name: span for span in receiver.snapshot()}
    accept, wake_up, consumer = raw["accept"], raw["wake-up"], raw["consumer"]

    from_row = raw["from the row"]
    assert (from_row.trace_id, from_row.parent_span_id) == (accept.trace_id, accept.span_id)
    assert from_row.links == ((wake_up.trace_id, wake_up.span_id),) and wake_up.trace_id != accept.trace_id
    in_message = raw["in the message's trace"]
    assert (in_message.parent_span_id, in_message.links) == (consumer.span_id, ())
    alone = raw["nothing current"]
    assert (alone.trace_id, alone.parent_span_id, alone.links) == (accept.trace_id, accept.span_id, ())
    # The failure is the status and the exception's type: its message may quote the document.
    fails = raw["fails"]
    assert (fails.status, fails.events) == ((StatusMessage.StatusCode.STATUS_CODE_ERROR, "ValueError"), ())


@pytest.mark.parametrize(
    ("environ", "requested"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),  # the exporter's default endpoint
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
        ({"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_TRACES_EXPORTER": "otlp"}, True),
    ],
)
def test_the_standard_variables_decide_whether_tracing_is_on(environ, requested):
    assert tracing_requested(environ) is requested


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "only 'otlp' .* or 'none'"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http/protobuf"),
    ],
)
def test_an_exporter_this_service_does_not_ship_is_a_configuration_error(environ, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        tracing_requested(environ)


# --- one trace per job, through every process ---------------------------------------------------------

FAST_DELIVERY = {"EGRESS_ALLOW_LOOPBACK": "1", "WEBHOOK_TIMEOUT_SECONDS": "3", "WEBHOOK_RETRY_BASE_SECONDS": "0.3"}
EVERY_PROCESS = {"web", "relay", "ingress", "worker", "delivery", "notifier", "erp"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _gunicorn(system: SystemProcesses, name: str, port: int, **extra_env: str) -> None:
    argv = [
        str(VENV_BIN / "gunicorn"),
        "config.wsgi",
        "--workers",
        "1",
        "--threads",
        "4",
        "--bind",
        f"127.0.0.1:{port}",
    ]
    system.start(name, argv, **extra_env)
    wait_for(lambda: _healthy(port), timeout=30, message=system.logs)


def _notifier_connected() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'notifier' AND datname = current_database()"
        )
        return bool(cursor.fetchone()[0])


def _accept(port: int, token: str, content: bytes) -> str:
    """Upload and submit through the real web process, as a client does: the job's id."""
    auth = {"Authorization": f"Bearer {token}"}
    upload = requests.post(
        f"http://127.0.0.1:{port}/api/v1/documents", headers=auth, files={"file": ("invoice.txt", content)}, timeout=10
    )
    assert upload.status_code == 201, upload.text
    accepted = requests.post(
        f"http://127.0.0.1:{port}/api/v1/extraction-jobs",
        headers={**auth, "Idempotency-Key": uuid.uuid4().hex},
        json={"document_id": upload.json()["id"]},
        timeout=10,
    )
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["job_id"])


class JobTrace:
    """The spans of one job's trace, found from the request span that accepted it."""

    def __init__(self, spans: list[ReceivedSpan], job_id: str) -> None:
        self.job_id = job_id
        (self.root,) = [
            s
            for s in spans
            if s.service == "web" and s.kind == SERVER and s.attributes.get("extraction.job_id") == job_id
        ]
        self.spans = [s for s in spans if s.trace_id == self.root.trace_id]
        self.all_spans = spans

    def named(self, name: str, **attributes: Any) -> list[ReceivedSpan]:
        return [
            s
            for s in self.spans
            if s.name == name and all(s.attributes.get(key) == value for key, value in attributes.items())
        ]

    def one(self, name: str, **attributes: Any) -> ReceivedSpan:
        (span,) = self.named(name, **attributes)
        return span

    def by_id(self, span_id: str) -> ReceivedSpan:
        (span,) = [s for s in self.all_spans if s.span_id == span_id]
        return span

    def tree(self) -> str:
        """The trace as an indented tree of span name [service], statement spans left out:
        what a reader of the test's output (pytest -rP) sees of one job."""
        shown = [s for s in self.spans if not any(key.startswith("db.") for key in s.attributes)]
        children: dict[str, list[ReceivedSpan]] = {}
        for span in shown:
            children.setdefault(span.parent_span_id, []).append(span)
        lines: list[str] = []

        def walk(span: ReceivedSpan, depth: int) -> None:
            keys = ("extraction.attempt", "extraction.outcome", "extraction.event_type")
            detail = " ".join(f"{k.rsplit('.', 1)[-1]}={span.attributes[k]}" for k in keys if k in span.attributes)
            lines.append(f"{'  ' * depth}{span.name} [{span.service}]{' ' + detail if detail else ''}")
            for child in children.get(span.span_id, []):
                walk(child, depth + 1)

        walk(self.root, 0)
        return "\n".join(lines)


def _complete(receiver: OtlpReceiver, job_id: str) -> bool:
    """Every process's last span of the job has arrived: the ERP's request, the delivered
    attempt, the notice of the terminal state."""
    spans = receiver.snapshot()
    of_job = [s for s in spans if s.attributes.get("extraction.job_id") == job_id]
    deliveries = [
        s for s in of_job if s.name == "webhook.deliver" and s.attributes.get("delivery.state") == "delivered"
    ]
    return (
        any(s.name == "notify.job_changed" and s.attributes.get("extraction.state") == "SUCCEEDED" for s in of_job)
        and bool(deliveries)
        and any(s.service == "erp" and s.parent_span_id == deliveries[0].span_id for s in spans)
    )


@pytest.mark.slow
def test_each_job_is_one_trace_across_every_process_with_each_attempt_its_own_span(
    transactional_db, broker, sim, settings, tmp_path, tenant, receiver
):
    settings.EGRESS_ALLOW_LOOPBACK = True
    env = _without_otel(
        system_env(broker_url=broker, simulator_url=sim.base_url, media_root=Path(settings.MEDIA_ROOT), **FAST_DELIVERY)
    )
    env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"})
    system = SystemProcesses(env=env, log_dir=tmp_path)
    web_port, erp_port = _free_port(), _free_port()
    try:
        _gunicorn(system, "web", web_port)
        _gunicorn(system, "erp", erp_port, OTEL_SERVICE_NAME="erp")
        registration = register_endpoint(
            tenant=tenant.tenant,
            url=f"http://127.0.0.1:{erp_port}/erp/erp-trace/webhooks",
            event_types=["extraction.completed.v1"],
        )
        ErpConnection.objects.create(
            slug="erp-trace",
            tenant_label="trace",
            secrets=[{"key_id": registration.secret.key_id, "secret": registration.secret.secret}],
        )
        assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
        system.relay()
        system.celery("ingress", "ingress", concurrency=4)
        system.celery("worker", "llm", concurrency=4)
        system.celery("delivery", "delivery", concurrency=4)
        system.scheduler()
        system.start("notifier", [sys.executable, "manage.py", "run_notifier", "--poll", "0.2"])
        # Its start position is taken when it connects: from then on it forwards every event.
        wait_for(_notifier_connected, timeout=60, message=system.logs)

        content = unique_invoice()
        clean = _accept(web_port, tenant.token, content)
        wait_for(lambda: _complete(receiver, clean), timeout=90, message=system.logs)
        sim.control(error_next=1)  # the next model call answers 500: the job's first attempt fails
        retried = _accept(web_port, tenant.token, unique_invoice())
        wait_for(lambda: _complete(receiver, retried), timeout=90, message=system.logs)
    finally:
        system.stop_all()

    spans = receiver.snapshot()
    for job_id in (clean, retried):
        assert ExtractionJob.objects.get(pk=job_id).state == "SUCCEEDED"
        assert ErpLedgerEntry.objects.filter(job_id=job_id).count() == 1
        job = JobTrace(spans, job_id)
        print(f"trace of job {job_id}:\n{job.tree()}")

        # Every span that names the job, in whichever process, is in the one trace of its request.
        assert {s.trace_id for s in spans if s.attributes.get("extraction.job_id") == job_id} == {job.root.trace_id}
        assert EVERY_PROCESS <= {s.service for s in job.spans}

        # Accept → relay → broker → ingress.
        requested = job.one("outbox.publish", **{"extraction.event_type": "extraction.requested.v1"})
        assert (requested.service, requested.kind, requested.parent_span_id) == ("relay", PRODUCER, job.root.span_id)
        ingress = job.one("run/extraction.ingest_requested")
        assert (ingress.service, ingress.parent_span_id) == ("ingress", requested.span_id)
        assert ingress.attributes["extraction.ingress.outcome"] == "taken_in"

        # Each attempt is its own span under the request (claimed from the job row by the
        # worker's dispatcher, which no message woke: no link); the span says what the attempt
        # ledger says.
        attempts = sorted(job.named("extraction.attempt"), key=lambda s: s.attributes["extraction.attempt"])
        ledger = list(Attempt.objects.filter(job_id=job_id).order_by("number").values_list("number", "outcome"))
        assert [(s.attributes["extraction.attempt"], s.attributes["extraction.outcome"]) for s in attempts] == ledger
        assert len({s.span_id for s in attempts}) == len(attempts)
        for attempt in attempts:
            assert (attempt.service, attempt.parent_span_id) == ("worker", job.root.span_id)
            assert attempt.attributes["extraction.job_id"] == job_id
            assert attempt.links == ()
        succeeded = attempts[-1]
        assert succeeded.attributes["gen_ai.usage.input_tokens"] > 0
        assert succeeded.attributes["gen_ai.usage.output_tokens"] > 0
        assert succeeded.attributes["extraction.attempt.result"] == "completed"
        validation = job.one("extraction.validate")
        assert (validation.parent_span_id, validation.attributes["extraction.review_required"]) == (
            succeeded.span_id,
            False,
        )

        # Completion → relay → fan-out → the webhook attempt → the ERP's request.
        completed = job.one("outbox.publish", **{"extraction.event_type": "extraction.completed.v1"})
        assert (completed.service, completed.parent_span_id) == ("relay", job.root.span_id)
        fan_out_run = job.one("run/delivery.fan_out_event")
        assert (fan_out_run.service, fan_out_run.parent_span_id) == ("delivery", completed.span_id)
        fan_out = job.one("delivery.fan_out")
        assert (fan_out.parent_span_id, fan_out.attributes["delivery.created"]) == (fan_out_run.span_id, 1)
        deliver = job.one("webhook.deliver")
        assert (deliver.service, deliver.kind, deliver.attributes["delivery.state"]) == (
            "delivery",
            CLIENT,
            "delivered",
        )
        hint = job.by_id(deliver.parent_span_id) if deliver.parent_span_id != job.root.span_id else None
        if hint is not None:  # the fan-out's own hint reached the delivery worker first
            assert hint.name == "run/delivery.dispatch"
            assert job.by_id(hint.parent_span_id).name == "apply_async/delivery.dispatch"
            assert job.by_id(hint.parent_span_id).parent_span_id == fan_out_run.span_id  # sent after COMMIT
        else:  # the scheduler's hint did: the row's context parents it, the hint is linked
            ((hint_trace, hint_span),) = deliver.links
            assert hint_trace != job.root.trace_id and job.by_id(hint_span).name == "run/delivery.dispatch"
        (erp_request,) = [s for s in job.spans if s.service == "erp" and s.kind == SERVER]
        assert erp_request.parent_span_id == deliver.span_id

        # The notifier's notice of every transition, in the job's trace.
        notices = job.named("notify.job_changed")
        states = set(JobEvent.objects.filter(job_id=job_id).values_list("to_state", flat=True))
        assert {s.attributes["extraction.state"] for s in notices} == states
        assert {(s.service, s.parent_span_id) for s in notices} == {("notifier", job.root.span_id)}

    # The retried job: attempt 1 failed on the provider's 500 and was retried, attempt 2 succeeded.
    attempts = sorted(
        JobTrace(spans, retried).named("extraction.attempt"), key=lambda s: s.attributes["extraction.attempt"]
    )
    assert [
        (
            s.attributes["extraction.attempt"],
            s.attributes["extraction.outcome"],
            s.attributes.get("http.response.status_code"),
            s.attributes["extraction.attempt.result"],
        )
        for s in attempts
    ] == [(1, "provider_error", 500, "retry"), (2, "succeeded", 200, "completed")]
    assert attempts[0].attributes["extraction.fence"] < attempts[1].attributes["extraction.fence"]
    assert len(JobTrace(spans, clean).named("extraction.attempt")) == 1

    # No span carries the document's text or what was read from it.
    printed = [line for line in content.decode().splitlines() if len(line) > 8]
    printed += ["DE89370400440532013000"]  # the IBAN as the answer normalizes it
    values = [str(value) for span in spans for value in span.attributes.values()]
    leaked = {text for text in printed for value in values if text in value}
    assert leaked == set()
