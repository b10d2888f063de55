"""What the worker read of tenants' validation policies, kept by revision (VAL-2).

The worker judges every answer by its tenant's policy (currencies, severity overrides, supplier
master data). That policy changes rarely, and every change raises the tenant's
``policy_revision`` in the same transaction (extraction/functions.sql); the claim returns the
revision, so what was read under it can be used again without a round trip for as long as it is
current. Whether it still was when the verdict was written is the completion's to prove
(``lifecycle.complete_jobs`` refuses a verdict judged with an older revision).

A per-process dict, bounded by emptying it when full: entries of outdated revisions are never
looked up again, and a refill costs one read per tenant and supplier.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Hashable
from typing import Any

MAX_ENTRIES = 10_000

# (tenant, revision, how the supplier was looked up, the looked-up key) → the statement's row.
PolicyKey = tuple[uuid.UUID, int, str, Hashable]


class PolicyCache:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._rows: dict[PolicyKey, tuple[Any, ...]] = {}
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def get(self, key: PolicyKey) -> tuple[Any, ...] | None:
        return self._rows.get(key)

    def put(self, key: PolicyKey, row: tuple[Any, ...]) -> None:
        with self._lock:
            if len(self._rows) >= self._max_entries:
                self._rows.clear()
            self._rows[key] = row

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def __len__(self) -> int:
        return len(self._rows)


# This process's: the slots of an llm worker share it.
policies = PolicyCache()
