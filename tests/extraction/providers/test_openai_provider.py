from __future__ import annotations

import gc
import json
import socket
import threading
import time
from datetime import UTC, datetime

import pytest

from config.backoff import parse_retry_after
from extraction.intake.text import DocumentText
from extraction.providers.base import ErrorKind, ProviderError, ProviderRequest
from extraction.providers.builtin import extract_invoice
from extraction.providers.openai_compat import OpenAIProvider
from extraction.validation.schema import JSON_SCHEMA_NAME, invoice_v1_json_schema
from tests.factories import provider_request

INVOICE = DocumentText(
    pages=(
        "ACME Supplies GmbH\nMusterstrasse 1, 10115 Berlin\nUSt-IdNr.: DE123456789\n"
        "IBAN: DE89 3704 0044 0532 0130 00\n\nRechnung Nr. INV-2024-0042\nRechnungsdatum: 15.03.2024\n",
        "Widgets 10 x 12.50 EUR = 125.00 EUR\nNetto 125.00 EUR\nMwSt 19% 23.75 EUR\nGesamt 148.75 EUR\n",
    ),
)


def extraction_request(
    *,
    job_id: str = "job-1",
    attempt: int = 1,
    timeout_seconds: float = 5.0,
    max_output_tokens: int = 4000,
    schema: str = "invoice.v1",
) -> ProviderRequest:
    return provider_request(
        INVOICE,
        job_id=job_id,
        attempt=attempt,
        timeout_seconds=timeout_seconds,
        max_output_tokens=max_output_tokens,
        schema=schema,
    )


@pytest.fixture
def provider(sim):
    provider = OpenAIProvider(base_url=sim.base_url, api_key="test-key")
    yield provider
    provider.close()


def extraction_error(provider: OpenAIProvider, request: ProviderRequest) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        provider.extract(request)
    return caught.value


def test_answer_is_the_builtin_extraction_with_usage_and_request_id(provider):
    response = provider.extract(extraction_request())

    assert json.loads(response.output_text) == extract_invoice(INVOICE)
    assert response.model == "sim-model"
    assert response.http_status == 200
    assert response.input_tokens > 0 and response.output_tokens > 0
    assert response.provider_request_id.startswith("req_")
    assert response.latency_ms is not None and response.latency_ms >= 0


def test_asks_for_strict_structured_output_with_job_headers(provider, sim):
    provider.extract(extraction_request(job_id="job-headers", attempt=3, max_output_tokens=1234))

    sent = sim.stats()["recent_requests"][-1]
    assert sent["job_id"] == "job-headers" and sent["attempt"] == "3"
    assert sent["response_format"] == "json_schema"
    assert sent["json_schema_name"] == JSON_SCHEMA_NAME and sent["json_schema_strict"] is True
    assert sent["json_schema_properties"] == sorted(invoice_v1_json_schema()["properties"])
    assert sent["max_completion_tokens"] == 1234 and sent["max_tokens"] is None


def test_each_thread_calls_through_a_client_of_its_own_and_close_closes_them_all(provider):
    # httpx walks every connection of a pool on each request: one pool per thread stays tiny.
    used: dict[str, list[object]] = {}

    def two_calls(job: str) -> None:
        provider.extract(extraction_request(job_id=job))
        first = provider._client()
        provider.extract(extraction_request(job_id=job))
        used[job] = [first, provider._client()]

    threads = [threading.Thread(target=two_calls, args=(job,)) for job in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(used) == ["a", "b", "c", "d"]
    assert all(first is second for first, second in used.values())  # a thread keeps its client
    assert len({id(first) for first, _ in used.values()}) == 4  # and no other thread shares it
    clients = [first for first, _ in used.values()]
    provider.close()
    assert all(client.is_closed() for client in clients)


def test_a_threads_client_goes_with_the_thread(provider):
    # A process whose threads come and go must not keep a client (and a connection) per
    # thread that ever called.
    thread = threading.Thread(target=lambda: provider.extract(extraction_request(job_id="short-lived")))
    thread.start()
    thread.join()
    gc.collect()
    assert len(provider._clients) == 0


def test_older_servers_get_max_tokens(sim):
    provider = OpenAIProvider(base_url=sim.base_url, api_key="k", token_limit_parameter="max_tokens")
    provider.extract(extraction_request(max_output_tokens=999))

    sent = sim.stats()["recent_requests"][-1]
    assert sent["max_tokens"] == 999 and sent["max_completion_tokens"] is None


def test_rate_limit_headers_are_surfaced(provider, sim):
    sim.control(rpm=500, tpm=1_000_000)

    response = provider.extract(extraction_request())

    assert response.rate_limit_headers["x-ratelimit-limit-requests"] == "500"
    assert response.rate_limit_headers["x-ratelimit-remaining-requests"] == "499"
    assert response.rate_limit_headers["x-ratelimit-limit-tokens"] == "1000000"


def test_429_is_rate_limited_with_the_providers_wait(provider, sim):
    sim.control(rate_limit_next=1, rate_limit_retry_after_seconds=7)

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.RATE_LIMITED
    assert error.http_status == 429
    assert error.retry_after_seconds == 7.0
    assert error.provider_request_id.startswith("req_")


def test_429_with_an_http_date_retry_after_is_normalized_to_seconds(provider, sim):
    sim.control(rate_limit_next=1, rate_limit_retry_after_seconds=30, retry_after_format="http-date")

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.RATE_LIMITED
    assert 28.0 <= error.retry_after_seconds <= 31.0


def test_429_without_retry_after_leaves_the_wait_to_our_backoff(provider, sim):
    sim.control(rate_limit_next=1, retry_after_format="none")

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.RATE_LIMITED and error.retry_after_seconds is None


@pytest.mark.parametrize("status", [500, 503])
def test_5xx_is_a_transient_provider_error(provider, sim, status):
    sim.control(error_next=1, error_status=status)

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.PROVIDER_ERROR and error.http_status == status


def test_the_sdk_does_not_retry_on_its_own(provider, sim):
    sim.control(error_next=1)

    extraction_error(provider, extraction_request(job_id="job-once"))

    assert sim.stats()["calls_by_job"] == {"job-once": 1}


def test_hang_is_a_timeout_that_may_have_been_billed(provider, sim):
    sim.control(hang_next=1)
    started = time.monotonic()

    error = extraction_error(provider, extraction_request(timeout_seconds=0.5))

    assert error.kind is ErrorKind.TIMEOUT
    assert error.request_sent is True
    assert time.monotonic() - started < 3


def test_dropped_connection_is_a_provider_error_after_sending(provider, sim):
    sim.control(disconnect_next=1)

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.PROVIDER_ERROR and error.request_sent is True


def test_refused_connection_was_never_sent():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{closed_port}/v1", api_key="k")

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.PROVIDER_ERROR and error.request_sent is False


def test_content_that_is_not_json_is_invalid_output(provider, sim):
    sim.control(malformed_next=1)

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.INVALID_OUTPUT and error.http_status == 200


def test_refusal_without_content_is_invalid_output(provider, sim):
    sim.control(refusal_next=1)

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.INVALID_OUTPUT and "refused" in str(error)


def test_truncated_answer_is_invalid_output(provider):
    error = extraction_error(provider, extraction_request(max_output_tokens=20))

    assert error.kind is ErrorKind.INVALID_OUTPUT and "truncated" in str(error)


def test_wrong_api_key_is_permanent(sim):
    sim.control(api_key="the-right-key")
    provider = OpenAIProvider(base_url=sim.base_url, api_key="a-wrong-key")

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.PERMANENT and error.http_status == 401


def test_unknown_endpoint_is_permanent(sim):
    provider = OpenAIProvider(base_url=sim.root_url + "/v2", api_key="k")

    error = extraction_error(provider, extraction_request())

    assert error.kind is ErrorKind.PERMANENT and error.http_status == 404


def test_unsupported_schema_is_permanent_and_never_sent(provider, sim):
    error = extraction_error(provider, extraction_request(schema="invoice.v9"))

    assert error.kind is ErrorKind.PERMANENT and error.request_sent is False
    assert sim.stats()["calls"] == 0


NOW = datetime(2015, 10, 21, 7, 27, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 3 ", 3.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 30.0),  # IMF-fixdate
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 30.0),  # obsolete RFC 850
        ("Wed Oct 21 07:28:00 2015", 30.0),  # obsolete asctime, no zone: GMT
        ("Wed, 21 Oct 2015 07:00:00 GMT", 0.0),  # in the past: go now
        (None, None),
        ("", None),
        ("soon", None),
        ("-5", None),
        ("1e3", None),
        ("Wed, 32 Oct 2015 07:28:00 GMT", None),
    ],
)
def test_parse_retry_after(value, seconds):
    assert parse_retry_after(value, now=NOW) == seconds
