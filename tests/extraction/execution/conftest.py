from __future__ import annotations

from collections.abc import Iterator

import pytest

from extraction.execution import claims, completions, take_ins


@pytest.fixture
def process_batchers_reset() -> Iterator[None]:
    """The process's batchers built afresh in the test (with the settings it sets) and forgotten
    after it, so no other test inherits their batch sizes."""
    batchers = (claims.batcher, completions.batcher, take_ins.batcher)
    for batcher in batchers:
        batcher.reset()
    yield
    for batcher in batchers:
        batcher.reset()
