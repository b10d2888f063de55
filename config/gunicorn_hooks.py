"""gunicorn's server hooks for the web process (the Procfile passes this file with ``--config``).

In prometheus_client's multiprocess mode (config/instruments.py) every worker keeps its values
in files of ``PROMETHEUS_MULTIPROC_DIR``. A worker's counters and histograms must outlive it (a
scrape sums the dead workers' files too, so a count never goes back when a worker is
replaced), but a gauge in one of the "live" multiprocess modes must not: ``mark_process_dead``
removes the exited worker's live-gauge files. The service's gauges are read at scrape time, so
this matters from the first in-process live gauge on.
"""

from __future__ import annotations

import os
from typing import Any


def child_exit(_server: Any, worker: Any) -> None:
    """gunicorn calls this in the arbiter when a worker process has exited."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess  # the arbiter needs it only here

        multiprocess.mark_process_dead(worker.pid)
