"""SIGTERM/SIGINT → a stop event, for the long-running management commands."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_event_on_signals() -> threading.Event:
    stop = threading.Event()

    def _handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
        stop.set()

    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    return stop
