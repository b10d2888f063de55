"""The client's README example runs as printed (issue #27): its Python block, with only its
placeholders filled in (the server's URL, the token, the endpoint's secret), against the real
server and processes: the Elektron PDF uploaded, accepted under its key, waited for until it
settles, and a real signed delivery verified by the example's receiver."""

from __future__ import annotations

import contextlib
import io
import re
import types

import pytest

from delivery import dispatch, fan_out
from extraction.events import EventType
from extraction.models import ExtractionJob, OutboxEvent
from tests.delivery.support import active_endpoint
from tests.factories import make_tenant_context
from tests.system import ROOT

README = ROOT / "clients" / "python" / "README.md"


def _example() -> str:
    """The README's first Python block: the example, as a reader copies it."""
    [first, *_] = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    return first


@pytest.mark.django_db(transaction=True)
def test_the_readme_example_uploads_waits_and_verifies(processes, live_server, scripted_erp, loopback):
    processes.relay()
    processes.celery("workers", "ingress,llm")
    processes.scheduler()
    ctx = make_tenant_context()
    secret = active_endpoint(ctx, scripted_erp.url)[1]
    example = _example()
    assert example.count('"http://127.0.0.1:8000"') == 1 and example.count('"whsec_…"') == 1
    code = example.replace('"http://127.0.0.1:8000"', repr(live_server.url)).replace('"whsec_…"', repr(secret))

    printed = io.StringIO()
    scope: dict[str, object] = {"token": ctx.token}
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), scope)  # noqa: S102 - the README's own example

    job = ExtractionJob.objects.get(tenant=ctx.tenant)
    gross = job.result.output["totals"]["gross"]["value"]
    assert (job.state, job.idempotency_key) == ("SUCCEEDED", f"invoice-{job.document_id}")
    assert printed.getvalue() == f"SUCCEEDED {gross}\n"

    # The example's receiver, given our server's real delivery of the example's own job.
    outbox = OutboxEvent.objects.get(job=job, event_type=EventType.COMPLETED)
    (delivery_id,) = fan_out.fan_out_event(outbox.event_id).created
    assert dispatch.deliver(delivery_id) == "delivered"
    received = scripted_erp.received[-1]
    receive = scope["receive"]
    assert callable(receive)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert receive(types.SimpleNamespace(headers=received.headers, body=received.body)) == 204
        tampered = received.body.replace(b"SUCCEEDED", b"FAILED_TERMINAL")
        assert receive(types.SimpleNamespace(headers=received.headers, body=tampered)) == 401
    assert printed.getvalue() == f"extraction.completed.v1 {outbox.job_id} SUCCEEDED\n"
