"""The delivery worker's demand, for the autoscaling signal (config/autoscaling.py).

Webhooks have no shared budget: each endpoint throttles itself (429, its circuit), and what it
holds back is not counted as eligible. So the delivery workers want a slot for every delivery
being sent or sendable now, or what the recent arrivals keep busy at the recent mean time per
attempt (Little's law), whichever is more.
"""

from __future__ import annotations

import math
from pathlib import Path

from django.conf import settings
from django.db.backends.utils import CursorWrapper

from config.autoscaling import Demand
from config.sql import load_statements

SQL = load_statements(Path(__file__).with_suffix(".sql"))

COUNT_CAP = 10_000
# The newest attempts whose mean time is the service time; an assumption until any was made.
ATTEMPT_SAMPLE = 1000
DEFAULT_ATTEMPT_SECONDS = 1.0


def delivery_worker_demands(cursor: CursorWrapper) -> list[Demand]:
    """The ``delivery`` process's one :class:`Demand` (AUTOSCALE_DEMANDS)."""
    window = settings.AUTOSCALE_WINDOW_SECONDS
    cursor.execute(
        SQL["delivery_demand"],
        {
            "cap": COUNT_CAP,
            "window": window,
            "sample": ATTEMPT_SAMPLE,
        },
    )
    sendable, sending, created, mean_ms = cursor.fetchone()
    attempt_seconds = float(mean_ms) / 1000 if mean_ms is not None else DEFAULT_ATTEMPT_SECONDS
    return [
        Demand(
            process="delivery",
            pool="",
            running=int(sending),
            eligible=int(sendable),
            arrival_slots=created / window * attempt_seconds,
            slot_cap=math.inf,
            slots_per_replica=settings.DELIVERY_WORKER_CONCURRENCY,
        )
    ]
