"""A provider simulator: a real OpenAI-compatible HTTP server for tests and benchmarks.

``POST /v1/chat/completions`` reads the document back out of our prompt
(:func:`~extraction.providers.prompt.parse_document_from_messages`) and answers with the builtin
extractor's ``invoice.v1`` JSON as a Chat Completions response (or, when the request asks for
the quotes answer format, each field's quote: ``tests/simulator/quotes.py``), after a latency
drawn from a lognormal fitted to a mean and a p95. It speaks one structured-output dialect
(``structured_output``, ``tests/simulator/dialects.py``) and refuses the others as the real
servers do. Around that it behaves like a shared, imperfect provider:

- quotas: requests per minute, tokens per minute (prompt + completion, sliding windows) and
  concurrent requests, answered with 429, ``Retry-After`` / ``retry-after-ms`` and OpenAI's
  ``x-ratelimit-*`` headers;
- faults, each by probability (``<fault>_rate``) or for "the next N calls" (``<fault>_next``):
  ``rate_limit`` (429 regardless of quota), ``error`` (5xx), ``disconnect`` (connection dropped
  without an answer), ``hang`` (no answer until the client gives up), ``malformed`` (content that
  is not JSON), ``refusal`` (no content, a refusal instead), ``hallucination`` (a well-formed invented IBAN with evidence pointing elsewhere),
  ``injection`` (obey "ignore previous instructions ..." found in the document);
- ``GET /_stats``, ``POST /_control`` (JSON, same names as :class:`SimulatorConfig` plus
  ``<fault>_next``) and ``POST /_reset`` (back to the startup configuration, counters cleared).

Every duration in the configuration is in *model* seconds and is multiplied by ``time_scale``:
at 0.01 a "15 s" call lasts 150 ms and a 60 s quota window lasts 600 ms. Everything the server
reports to a client (latency, ``Retry-After``, ``x-ratelimit-reset-*``) is in real time, because
that is the clock the client waits on.

The package, by section: :mod:`~tests.simulator.config` (what it is told),
:mod:`~tests.simulator.state` (quotas, forced faults, counters), :mod:`~tests.simulator.faults`
(what the "model" answers when one strikes), :mod:`~tests.simulator.server` (the aiohttp routes)
and :mod:`~tests.simulator.process` (a subprocess handle for tests and benchmarks). It is a test
stand-in: production settings never import it, and ``python manage.py run_provider_simulator``
exists only with ``DJANGO_DEVELOPMENT=1`` (the ``tests.devtools`` app).
"""

from __future__ import annotations

from tests.simulator.config import FAULTS, SimulatorConfig, lognormal_parameters
from tests.simulator.faults import hallucinate, injected_instructions, invent_iban, malformed, obey_injection
from tests.simulator.process import SimulatorProcess
from tests.simulator.server import build_app, builtin_extractor, run_simulator
from tests.simulator.state import Extractor, SimulatorState, estimate_tokens

__all__ = [
    "FAULTS",
    "Extractor",
    "SimulatorConfig",
    "SimulatorProcess",
    "SimulatorState",
    "build_app",
    "builtin_extractor",
    "estimate_tokens",
    "hallucinate",
    "injected_instructions",
    "invent_iban",
    "lognormal_parameters",
    "malformed",
    "obey_injection",
    "run_simulator",
]
