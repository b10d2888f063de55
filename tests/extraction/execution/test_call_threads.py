"""Model calls run on one long-lived thread per slot (extraction.execution.runtime.call_provider):
the provider's per-thread client, and its kept-alive connection to the model server, serve call
after call; a call the shutdown abandons takes its thread with it, and the slot's next call gets
a new one."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from extraction.execution.runtime import Interrupted, WorkerRuntime, call_provider
from extraction.intake.text import DocumentText
from extraction.providers.base import ProviderRequest, ProviderResponse
from extraction.providers.openai_compat import OpenAIProvider
from tests.factories import provider_request

INVOICE = DocumentText(pages=("ACME GmbH\nRechnung Nr. 7\nGesamt 148.75 EUR\n",))


class Recorded:
    """The real provider, with the thread each call ran on and the client it used."""

    def __init__(self, provider: OpenAIProvider, gate: threading.Event | None = None) -> None:
        self.provider = provider
        self.gate = gate
        self.calls: list[tuple[int, Any]] = []

    def extract(self, request: ProviderRequest) -> ProviderResponse:
        self.calls.append((threading.get_ident(), self.provider._client()))
        if self.gate is not None:
            self.gate.wait(30)
        return self.provider.extract(request)


@pytest.fixture
def provider(sim):
    provider = OpenAIProvider(base_url=sim.base_url, api_key="test-key")
    yield provider
    provider.close()


def _in_one_slot(work):
    """Run ``work`` on a thread of its own, as a slot of the dispatcher's pool would."""
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(value=work()))
    thread.start()
    thread.join(60)
    return result["value"]


def test_a_slots_calls_share_one_thread_and_one_client(provider, sim):
    recorded = Recorded(provider)
    rt = WorkerRuntime("call-threads")

    def two_calls() -> list[str]:
        return [call_provider(recorded, provider_request(INVOICE, job_id=f"job-{n}"), rt).model for n in (1, 2)]

    assert _in_one_slot(two_calls) == ["sim-model", "sim-model"]
    (first_thread, first_client), (second_thread, second_client) = recorded.calls
    assert (second_thread == first_thread, second_client is first_client) == (True, True)
    assert first_thread != threading.get_ident()


def test_an_abandoned_call_leaves_its_thread_and_the_next_call_gets_a_new_one(provider, sim):
    gate = threading.Event()
    recorded = Recorded(provider, gate)
    rt = WorkerRuntime("call-threads")

    def abandoned_then_again() -> tuple[str, str]:
        threading.Timer(0.2, rt.abandon).start()
        with pytest.raises(Interrupted):
            call_provider(recorded, provider_request(INVOICE, job_id="job-1"), rt)
        gate.set()  # the abandoned call may finish now; its answer is dropped
        again = call_provider(recorded, provider_request(INVOICE, job_id="job-2"), WorkerRuntime("after"))
        return "interrupted", again.model

    try:
        assert _in_one_slot(abandoned_then_again) == ("interrupted", "sim-model")
    finally:
        gate.set()
    (abandoned_thread, _), (next_thread, _) = recorded.calls
    assert next_thread != abandoned_thread
