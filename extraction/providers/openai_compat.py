"""A provider for any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, the simulator).

One call per :meth:`OpenAIProvider.extract`: the SDK's own retries are off (RTY-3, the worker's
retry policy is the only layer) and every failure leaves as a :class:`ProviderError` whose kind
tells that policy what to do.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import threading
import time
import weakref
from typing import Any

import httpx2
import openai

from config.backoff import parse_retry_after
from extraction.providers import boundaries
from extraction.providers.base import ErrorKind, ProviderError, ProviderRequest, ProviderResponse
from extraction.providers.boundaries import BoundaryRequest
from extraction.providers.prompt import build_messages
from extraction.providers.quoted_answer import (
    ANSWER_FORMATS,
    QUOTES_SCHEMA_NAME,
    QuotedAnswerError,
    invoice_from_quotes,
    quotes_json_schema,
)
from extraction.providers.structured_output import check_dialect, response_format
from extraction.validation.schema import JSON_SCHEMA_NAME, invoice_v1_json_schema

# One call at a time per thread; a little room in case a response is left unclosed.
CONNECTIONS_PER_THREAD = 4

# 408 is the server giving up waiting for us; 409 is OpenAI's "lock timeout, try again".
_TRANSIENT_4XX = {408: ErrorKind.TIMEOUT, 409: ErrorKind.PROVIDER_ERROR}
# An error message about the response format or its schema is a configuration problem.
_MENTIONS_STRUCTURED_OUTPUT = re.compile(r"response_format|json_schema|invalid schema", re.IGNORECASE)


def retry_after_from_headers(headers: Any) -> float | None:
    """The provider's wait: OpenAI's millisecond ``retry-after-ms`` if valid, else ``Retry-After``."""
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            seconds = float(milliseconds) / 1000
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return parse_retry_after(headers.get("retry-after"))


def rate_limit_headers(headers: Any) -> dict[str, str]:
    if headers is None:
        return {}
    return {name.lower(): value for name, value in headers.items() if name.lower().startswith("x-ratelimit-")}


class OpenAIProvider:
    """Extracts ``invoice.v1`` through Chat Completions with a JSON-schema response format.

    ``structured_output`` names how the server wants the schema (:mod:`structured_output`).
    ``token_limit_parameter`` is ``max_completion_tokens`` (current OpenAI models) or ``max_tokens``
    (older OpenAI-compatible servers). ``sampling`` goes into every request as it is
    (``{"temperature": 0, "repeat_penalty": 1.0}`` for llama.cpp, whose default repeat penalty
    turns ``2,012.40`` into ``2``). Each thread that calls gets its own client, built once and
    kept for the thread's life (:meth:`_client`).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        token_limit_parameter: str = "max_completion_tokens",
        structured_output: str = "openai_strict",
        answer_format: str = "invoice.v1",
        sampling: dict[str, Any] | None = None,
        connect_timeout_seconds: float = 5.0,
        name: str = "openai",
    ) -> None:
        self.name = name  # what the attempt ledger records as the provider ("llama.cpp" for a local pool)
        if token_limit_parameter not in ("max_completion_tokens", "max_tokens"):
            raise ValueError(f"unknown token limit parameter {token_limit_parameter!r}")
        self.token_limit_parameter = token_limit_parameter
        self.structured_output = check_dialect(structured_output)
        # What the provider itself sets, and what would change the answer's shape (a stream, n choices).
        reserved = {
            "model", "messages", "response_format", "max_completion_tokens", "max_tokens", "stream", "n",
        } & set(sampling or {})  # fmt: skip
        if reserved:
            raise ValueError(f"sampling parameters may not set {sorted(reserved)}")
        self.sampling = dict(sampling or {})
        if answer_format not in ANSWER_FORMATS:
            raise ValueError(f"unknown answer format {answer_format!r}; expected one of {', '.join(ANSWER_FORMATS)}")
        self.answer_format = answer_format
        # Built once: the strict form is a deep transformation of a schema that never changes.
        if answer_format == "quotes":
            schema_name, schema = QUOTES_SCHEMA_NAME, quotes_json_schema()
        else:
            schema_name, schema = JSON_SCHEMA_NAME, invoice_v1_json_schema()
        self._response_format = response_format(self.structured_output, name=schema_name, schema=schema)
        self._boundaries_format: dict[str, Any] | None = None  # built at the first bundle question
        self.connect_timeout_seconds = connect_timeout_seconds
        self._base_url = base_url
        self._api_key = api_key
        self._local = threading.local()
        # Weak: a thread's client (and its connection) goes with the thread; close() reaches
        # the ones still alive.
        self._clients: weakref.WeakSet[openai.OpenAI] = weakref.WeakSet()
        self._clients_lock = threading.Lock()
        # The clients share httpx's default TLS set-up: built per client, each would load the
        # CA bundle again.
        self._tls = httpx2.create_ssl_context()

    def _client(self) -> openai.OpenAI:
        """This thread's client. A thread makes one call at a time, and one client per thread
        keeps each connection pool tiny: httpx's pool walks every connection it holds on each
        request and each response's close, so one pool shared by all threads walks hundreds."""
        client = getattr(self._local, "client", None)
        if client is None:
            http_client = openai.DefaultHttpxClient(
                verify=self._tls,
                limits=httpx2.Limits(max_connections=CONNECTIONS_PER_THREAD, max_keepalive_connections=1),
            )
            client = openai.OpenAI(
                base_url=self._base_url, api_key=self._api_key, max_retries=0, http_client=http_client
            )
            with self._clients_lock:
                self._clients.add(client)
            self._local.client = client
        return client

    def close(self) -> None:
        with self._clients_lock:
            clients, self._clients = list(self._clients), weakref.WeakSet()
        for client in clients:
            client.close()
        self._local = threading.local()

    def extract(self, request: ProviderRequest) -> ProviderResponse:
        try:
            messages = build_messages(request.document, request.schema, answer_format=self.answer_format)
        except ValueError as error:
            raise ProviderError(ErrorKind.PERMANENT, str(error), request_sent=False) from error
        response = self._complete(request, messages, self._response_format)
        if self.answer_format == "quotes":
            try:
                invoice = invoice_from_quotes(json.loads(response.output_text), request.document)
            except QuotedAnswerError as error:
                raise ProviderError(
                    ErrorKind.INVALID_OUTPUT,
                    f"not a quotes answer: {error}",
                    http_status=response.http_status,
                    provider_request_id=response.provider_request_id,
                ) from error
            response = dataclasses.replace(response, output_text=json.dumps(invoice, ensure_ascii=False))
        return response

    def read_boundaries(self, request: BoundaryRequest) -> ProviderResponse:
        """The second reader's question about a bundle (extraction.providers.boundaries): the
        answer's JSON text, checked to be an object; its page numbers are the caller's to check."""
        if self._boundaries_format is None:
            self._boundaries_format = response_format(
                self.structured_output, name=boundaries.SCHEMA_NAME, schema=boundaries.json_schema()
            )
        return self._complete(request, boundaries.messages(request.pages), self._boundaries_format)

    def _complete(
        self, request: ProviderRequest | BoundaryRequest, messages: list[dict[str, str]], answer: dict[str, Any]
    ) -> ProviderResponse:
        """One Chat Completions call asking for ``answer`` (a response format)."""
        # httpx deadlines are per phase; a non-streamed answer arrives in one read phase, so the
        # read timeout is the attempt deadline. Connecting gets its own, shorter bound.
        timeout = httpx2.Timeout(
            request.timeout_seconds, connect=min(self.connect_timeout_seconds, request.timeout_seconds)
        )
        body = {
            **self.sampling,
            "model": request.model,
            "messages": messages,
            "response_format": answer,
            self.token_limit_parameter: request.max_output_tokens,
        }
        started = time.monotonic()
        try:
            # The SDK's generic POST, not ``chat.completions.create``: the same client, transport,
            # auth, timeouts and status-error classes, without re-walking the request body
            # against the SDK's TypedDicts and building pydantic models of the answer.
            # ``httpx.Response`` as cast_to returns the response as received; ``_response_from``
            # reads it.
            raw = self._client().post(
                "/chat/completions",
                cast_to=httpx2.Response,
                body=body,
                options={
                    "timeout": timeout,
                    # Diagnostics for traces and the simulator's per-job counts; not an idempotency key.
                    "headers": {"X-Job-Id": str(request.job_id), "X-Attempt": str(request.attempt)},
                },
            )
        except openai.APITimeoutError as error:
            raise _timeout_error(error) from error
        except openai.APIConnectionError as error:
            raise _connection_error(error) from error
        except openai.APIStatusError as error:
            raise _status_error(error, dialect=self.structured_output) from error
        latency_ms = round((time.monotonic() - started) * 1000)
        return _response_from(raw, request, latency_ms)


def _response_from(raw: Any, request: ProviderRequest | BoundaryRequest, latency_ms: int) -> ProviderResponse:
    headers = raw.headers
    diagnostics = {
        "http_status": raw.status_code,
        "provider_request_id": headers.get("x-request-id") or "",
        "rate_limit_headers": rate_limit_headers(headers),
    }
    try:
        completion = raw.json()
    except ValueError as error:
        raise ProviderError(ErrorKind.INVALID_OUTPUT, f"unreadable response body: {error}", **diagnostics) from error
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not isinstance(choices, list):
        raise ProviderError(ErrorKind.INVALID_OUTPUT, "response body is not a chat completion", **diagnostics)
    diagnostics["provider_request_id"] = diagnostics["provider_request_id"] or _text(completion.get("id"))
    if not choices:
        raise ProviderError(ErrorKind.INVALID_OUTPUT, "completion has no choices", **diagnostics)
    choice: dict[str, Any] = choices[0] if isinstance(choices[0], dict) else {}
    message: dict[str, Any] = choice["message"] if isinstance(choice.get("message"), dict) else {}
    content = message.get("content")
    if not content or not isinstance(content, str):
        refusal = message.get("refusal")
        reason = f"model refused: {refusal}" if refusal else "completion has no content"
        raise ProviderError(ErrorKind.INVALID_OUTPUT, reason, **diagnostics)
    if choice.get("finish_reason") == "length":
        raise ProviderError(
            ErrorKind.INVALID_OUTPUT,
            f"output truncated at max_output_tokens={request.max_output_tokens}",
            **diagnostics,
        )
    try:
        parsed = json.loads(content)
    except ValueError as error:
        raise ProviderError(ErrorKind.INVALID_OUTPUT, f"content is not JSON: {error}", **diagnostics) from error
    if not isinstance(parsed, dict):
        raise ProviderError(ErrorKind.INVALID_OUTPUT, "content is JSON but not an object", **diagnostics)
    usage = completion.get("usage") if isinstance(completion.get("usage"), dict) else {}
    return ProviderResponse(
        output_text=content,
        model=_text(completion.get("model")) or request.model,
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
        latency_ms=latency_ms,
        **diagnostics,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int | None:
    # A token count, or None when the server did not report one (bool is an int in Python).
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _timeout_error(error: openai.APITimeoutError) -> ProviderError:
    # A connect (or pool) timeout never put the request on the wire; any later timeout may have
    # been received, generated and billed (CAP-2, BP-3).
    never_sent = isinstance(error.__cause__, (httpx2.ConnectTimeout, httpx2.PoolTimeout))
    return ProviderError(ErrorKind.TIMEOUT, f"no answer in time: {error.__cause__!r}", request_sent=not never_sent)


def _connection_error(error: openai.APIConnectionError) -> ProviderError:
    never_sent = isinstance(error.__cause__, httpx2.ConnectError)
    return ProviderError(
        ErrorKind.PROVIDER_ERROR, f"connection failed: {error.__cause__!r}", request_sent=not never_sent
    )


def _status_error(error: openai.APIStatusError, *, dialect: str) -> ProviderError:
    status = error.status_code
    headers = error.response.headers
    if _MENTIONS_STRUCTURED_OUTPUT.search(error.message or "") and status != 429:
        # The server refuses how we ask for the schema (a 400 from OpenAI, a 500 from
        # llama-cpp-python's server): every retry would be refused the same way.
        return ProviderError(
            ErrorKind.PERMANENT,
            f"the provider rejects the {dialect!r} structured-output request; set the pool's "
            f"structured_output to the dialect this server speaks: {error.message}",
            http_status=status,
            provider_request_id=error.request_id or "",
        )
    if status == 429 and error.code == "insufficient_quota":
        # OpenAI's "out of credit" also answers 429; waiting does not fix a billing problem.
        kind = ErrorKind.PERMANENT
    elif status == 429:
        kind = ErrorKind.RATE_LIMITED
    elif status >= 500:
        kind = ErrorKind.PROVIDER_ERROR
    else:
        kind = _TRANSIENT_4XX.get(status, ErrorKind.PERMANENT)
    return ProviderError(
        kind,
        error.message,
        http_status=status,
        retry_after_seconds=retry_after_from_headers(headers),
        provider_request_id=error.request_id or "",
        rate_limit_headers=rate_limit_headers(headers),
    )
