"""Each structured-output dialect against a real simulated server that speaks it, the refusals
of a server asked in another dialect, and what such a refusal does to a job in the worker."""

from __future__ import annotations

import json
import uuid

import pytest

from extraction.capacity import limiter
from extraction.execution import worker
from extraction.execution.runtime import WorkerRuntime
from extraction.intake.text import DocumentText
from extraction.models import Attempt, ExtractionJob, JobEvent, JobState, OutboxEvent
from extraction.providers.base import ErrorKind, ProviderError, ProviderRequest
from extraction.providers.builtin import extract_invoice
from extraction.providers.openai_compat import OpenAIProvider
from extraction.validation.schema import JSON_SCHEMA_NAME, invoice_v1_json_schema, parse_invoice_v1
from tests.factories import make_job, provider_request
from tests.simulator import SimulatorProcess

INVOICE = DocumentText(
    pages=(
        "ACME Supplies GmbH\nMusterstrasse 1, 10115 Berlin\nUSt-IdNr.: DE123456789\n"
        "IBAN: DE89 3704 0044 0532 0130 00\n\nRechnung Nr. INV-2024-0042\nRechnungsdatum: 15.03.2024\n",
        "Widgets 10 x 12.50 EUR = 125.00 EUR\nNetto 125.00 EUR\nMwSt 19% 23.75 EUR\nGesamt 148.75 EUR\n",
    ),
)


def extraction_request(job_id: str) -> ProviderRequest:
    return provider_request(INVOICE, job_id=job_id)


@pytest.fixture
def provider_for():
    made: list[OpenAIProvider] = []

    def make(server: SimulatorProcess, dialect: str, **options) -> OpenAIProvider:
        provider = OpenAIProvider(base_url=server.base_url, api_key="test-key", structured_output=dialect, **options)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


def extraction_error(provider: OpenAIProvider, request: ProviderRequest) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        provider.extract(request)
    return caught.value


# --- each dialect, asked the way its server wants -----------------------------------------------------


@pytest.mark.parametrize(
    ("dialect", "sent"),
    [
        (
            "openai_strict",
            {
                "response_format": "json_schema",
                "json_schema_name": JSON_SCHEMA_NAME,
                "json_schema_strict": True,
                "json_schema_properties": sorted(invoice_v1_json_schema()["properties"]),
                "schema_beside_json_object": False,
            },
        ),
        (
            "json_schema",
            {
                "response_format": "json_schema",
                "json_schema_name": JSON_SCHEMA_NAME,
                "json_schema_strict": None,
                "json_schema_properties": sorted(invoice_v1_json_schema()["properties"]),
                "schema_beside_json_object": False,
            },
        ),
        (
            "json_object_schema",
            {
                "response_format": "json_object",
                "json_schema_name": None,
                "json_schema_strict": None,
                "json_schema_properties": [],
                "schema_beside_json_object": True,
            },
        ),
    ],
)
def test_a_server_asked_in_its_own_dialect_answers_with_the_extraction(server_speaking, provider_for, dialect, sent):
    server = server_speaking(dialect)
    provider = provider_for(server, dialect)

    response = provider.extract(extraction_request(f"job-{dialect}"))

    parse_invoice_v1(response.output_text)
    assert json.loads(response.output_text) == extract_invoice(INVOICE)
    assert response.http_status == 200
    stats = server.stats()
    assert stats["outcomes"] == {"ok": 1}
    (summary,) = stats["recent_requests"]
    assert {key: summary[key] for key in sent} == sent
    assert summary["job_id"] == f"job-{dialect}"
    assert summary["sampling"] == {}


def test_an_openai_strict_server_also_takes_a_schema_without_the_strict_flag(server_speaking, provider_for):
    server = server_speaking("openai_strict")
    provider = provider_for(server, "json_schema")

    response = provider.extract(extraction_request("job-non-strict"))

    assert json.loads(response.output_text) == extract_invoice(INVOICE)
    assert server.stats()["recent_requests"][-1]["json_schema_strict"] is None


# --- the wrong dialect: a configuration error, never retried -----------------------------------------


def test_json_schema_asked_of_a_json_object_schema_server_is_a_permanent_500(server_speaking, provider_for):
    server = server_speaking("json_object_schema")
    provider = provider_for(server, "json_schema")

    error = extraction_error(provider, extraction_request("job-500"))

    assert error.kind is ErrorKind.PERMANENT
    assert error.http_status == 500
    assert error.request_sent is True
    assert str(error).startswith(
        "the provider rejects the 'json_schema' structured-output request; "
        "set the pool's structured_output to the dialect this server speaks: "
    )
    assert "Input should be 'text' or 'json_object'" in str(error)
    assert error.provider_request_id.startswith("req_")
    stats = server.stats()
    assert stats["outcomes"] == {"structured_output_refused": 1}
    assert stats["calls_by_job"] == {"job-500": 1}  # the SDK did not retry the 500


def test_openai_strict_asked_of_a_json_object_schema_server_is_permanent(server_speaking, provider_for):
    server = server_speaking("json_object_schema")
    provider = provider_for(server, "openai_strict")

    error = extraction_error(provider, extraction_request("job-strict-500"))

    assert error.kind is ErrorKind.PERMANENT
    assert error.http_status == 500
    assert error.request_sent is True
    assert "'openai_strict'" in str(error)


def test_a_schema_beside_json_object_asked_of_an_openai_strict_server_is_a_permanent_400(server_speaking, provider_for):
    server = server_speaking("openai_strict")
    provider = provider_for(server, "json_object_schema")

    error = extraction_error(provider, extraction_request("job-400"))

    assert error.kind is ErrorKind.PERMANENT
    assert error.http_status == 400
    assert error.request_sent is True
    assert str(error).startswith("the provider rejects the 'json_object_schema' structured-output request; ")
    assert str(error).endswith("Unrecognized request argument supplied: response_format.schema")
    stats = server.stats()
    assert stats["outcomes"] == {"structured_output_refused": 1}
    assert stats["calls_by_job"] == {"job-400": 1}


# --- sampling parameters ------------------------------------------------------------------------------


def test_sampling_parameters_arrive_in_the_request_as_configured(server_speaking, provider_for):
    server = server_speaking("json_schema")
    provider = provider_for(server, "json_schema", sampling={"temperature": 0, "repeat_penalty": 1.0})

    provider.extract(extraction_request("job-sampling"))

    summary = server.stats()["recent_requests"][-1]
    assert summary["sampling"] == {"temperature": 0, "repeat_penalty": 1.0}
    assert summary["model"] == "sim-model"  # sampling never replaces what the provider sends itself
    assert summary["max_completion_tokens"] == 4000


# --- through the worker ----------------------------------------------------------------------------------


@pytest.fixture
def wrong_dialect_policy(server_speaking, settings):
    """A model policy whose pool asks in ``json_schema`` a server that speaks ``json_object_schema``."""
    server = server_speaking("json_object_schema")
    pool = f"dialect-{uuid.uuid4().hex[:10]}"
    policy = f"p-{pool}"
    settings.PROVIDER_POOLS = {
        pool: {
            "provider": "openai",
            "model": "sim-model",
            "base_url": server.base_url,
            "api_key_env": "DIALECT_TEST_API_KEY",
            "token_limit_parameter": "max_completion_tokens",
            "structured_output": "json_schema",
            "max_output_tokens": 4000,
            "requests_per_minute": 600,
            "tokens_per_minute": 600_000,
            "max_in_flight": 30,
            "reserved_tokens": 6000,
        }
    }
    settings.MODEL_POLICIES = {
        policy: {"provider_pool": pool, "reserved_tokens": 6000, "price_per_1k_tokens_micros": 0},
    }
    limiter.reset_pool(pool)
    yield policy, server
    limiter.reset_pool(pool)


@pytest.mark.django_db(transaction=True)
def test_a_pool_in_the_wrong_dialect_fails_its_job_after_one_attempt(tenant, wrong_dialect_policy):
    policy, server = wrong_dialect_policy
    job_id = str(make_job(tenant.tenant, model_policy=policy).pk)

    assert worker.run_slot(WorkerRuntime(worker_id="w-dialect")) == 1

    job = ExtractionJob.objects.get(pk=job_id)
    assert job.state == JobState.FAILED_TERMINAL
    assert job.attempt == 1
    assert job.error_class == "permanent_error"
    assert job.error_detail.startswith("the provider rejects the 'json_schema' structured-output request; ")
    attempts = list(Attempt.objects.filter(job_id=job_id).values_list("number", "outcome", "http_status"))
    assert attempts == [(1, "permanent_error", 500)]
    versions = list(
        JobEvent.objects.filter(job_id=job_id).order_by("state_version").values_list("state_version", "to_state")
    )
    assert versions == [(1, "ACCEPTED"), (2, "READY"), (3, "RUNNING"), (4, "FAILED_TERMINAL")]
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.dead_lettered.v1").count() == 1
    stats = server.stats()
    assert stats["calls_by_job"] == {job_id: 1}
    assert stats["outcomes"] == {"structured_output_refused": 1}
    assert stats["recent_requests"][-1]["response_format"] == "json_schema"
