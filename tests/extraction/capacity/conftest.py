from __future__ import annotations

from tests.extraction.execution.conftest import broker, broker_url, processes, sim, simulator, tenant  # noqa: F401
