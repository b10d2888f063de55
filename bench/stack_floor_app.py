"""The Celery app of bench/stack_floor.py's consumer: the project's app and settings (acks late,
prefetch 1, the project's consumer class, JSON, results ignored) with one more quorum queue and
a task that does nothing, so what the worker spends is Celery's, kombu's and py-amqp's alone.

    celery -A bench.stack_floor_app worker -Q stackfloor --pool threads ...
"""

from __future__ import annotations

from config.celery import app
from config.topology import work_queue

QUEUE = work_queue("stackfloor")  # the work queues' exchange and quorum arguments
# Where the terminal-like events go: published, never consumed here (nor in execution_bench.py).
TERMINAL_QUEUE = work_queue("stackfloor.terminal")
TASK = "bench.stack_floor.noop"

app.conf.task_queues = (*app.conf.task_queues, QUEUE)


@app.task(name=TASK, ignore_result=True)
def noop(**kwargs) -> None:
    return None
