from __future__ import annotations

import threading

from extraction.capacity import tokens
from tests.system import wait_for

THREADS = 16


class ObservedLock:
    """The real lock, counting the threads waiting for it: the test knows when every other
    thread has arrived while the first one is still loading."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self.waiting = 0

    def __enter__(self) -> ObservedLock:
        with self._count_lock:
            self.waiting += 1
        self._lock.acquire()
        with self._count_lock:
            self.waiting -= 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()


def test_racing_threads_load_a_models_encoding_once(monkeypatch):
    loads = []
    lock = ObservedLock()

    def slow_load(model: str):
        loads.append(model)
        # Every other thread is now waiting for this load (none has a loaded encoding yet).
        wait_for(
            lambda: lock.waiting == THREADS - 1,
            timeout=10,
            interval=0.01,
            message=lambda: f"{THREADS - 1} threads at the lock, {lock.waiting} there",
        )
        return None  # the fallback estimate; the count is what matters here

    monkeypatch.setattr(tokens, "_load_encoding", slow_load)
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_encodings_lock", lock)
    start = threading.Barrier(THREADS)

    def estimate() -> None:
        start.wait()
        tokens.estimate_prompt_tokens("Invoice INV-1, total 119.00 EUR", "racing-model")

    threads = [threading.Thread(target=estimate) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert loads == ["racing-model"]
