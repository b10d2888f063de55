from __future__ import annotations

import threading
import time

from extraction.capacity import tokens


def test_racing_threads_load_a_models_encoding_once(monkeypatch):
    loads = []

    def slow_load(model: str):
        loads.append(model)
        time.sleep(0.05)  # long enough for every thread to arrive while the first one loads
        return None  # the fallback estimate; the count is what matters here

    monkeypatch.setattr(tokens, "_load_encoding", slow_load)
    monkeypatch.setattr(tokens, "_encodings", {})
    start = threading.Barrier(16)

    def estimate() -> None:
        start.wait()
        tokens.estimate_prompt_tokens("Invoice INV-1, total 119.00 EUR", "racing-model")

    threads = [threading.Thread(target=estimate) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert loads == ["racing-model"]
