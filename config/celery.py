"""The Celery application. PostgreSQL is the record of every job; results are ignored."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any

from celery import Celery
from celery.signals import celeryd_init, worker_shutdown
from celery.utils.nodenames import anon_nodename

from config import probes
from config.tracing import configure_tracing, shutdown_tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Celery warns once per lost connection that it will cancel tasks on connection loss by default
# in 6.0; we set worker_cancel_long_running_tasks_on_connection_loss explicitly (settings say why).
warnings.filterwarnings("ignore", message=r"\s*In Celery 5\.1 we introduced an optional breaking change")

app = Celery("extraction")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Task modules live in the apps' sub-packages, not in a top-level tasks.py per app.
app.autodiscover_tasks(["extraction.execution", "delivery"])

# An llm worker's dispatcher (WORKER_WAKE_UPS=notify): claims for its slots, woken by PostgreSQL.
app.steps["worker"].add("extraction.execution.dispatcher:DispatcherStep")

# Each process's message origin (anon_nodename), by pid: a forked child computes its own.
_origins: dict[int, str] = {}


def message_origin() -> str:
    """The ``origin`` header Celery gives a task message this process builds (``gen<pid>@<host>``),
    computed once: as_task_v2 computes it per message when none is passed, which was 11 % of the
    relay's time holding the GIL (py-spy --gil at 30 jobs/s)."""
    pid = os.getpid()
    origin = _origins.get(pid)
    if origin is None:
        origin = _origins[pid] = anon_nodename()
    return origin


# The Procfile's process each queue's worker is (the service name of its spans).
ROLE_OF_QUEUE = {"ingress": "ingress", "llm": "worker", "delivery": "delivery"}


def worker_role(queues: str | Iterable[str] | None) -> str:
    """``worker`` for ``-Q llm``, ``ingress+worker`` for a worker consuming both (tests do)."""
    names = queues.split(",") if isinstance(queues, str) else list(queues or ())
    roles = [ROLE_OF_QUEUE.get(name.strip(), name.strip()) for name in names if name.strip()]
    return "+".join(dict.fromkeys(roles)) or "celery"


@celeryd_init.connect
def _configure_tracing(options: dict[str, Any] | None = None, **_kwargs: Any) -> None:
    # In the worker's main process, before it consumes: with --pool threads (the Procfile's)
    # every task runs here; a prefork child gets the exporter's thread restarted by the SDK.
    configure_tracing(worker_role((options or {}).get("queues")))
    probes.start_probe_server()


@worker_shutdown.connect
def _flush_traces(**_kwargs: Any) -> None:
    shutdown_tracing()


from celery import bootsteps  # noqa: E402
from celery.worker.consumer import Consumer  # noqa: E402
from kombu import Connection, Message  # noqa: E402

# The consumer's event loop beats this often; liveness fails when it has not for CONSUMER_LOOP_BOUND.
CONSUMER_LOOP_BEAT_SECONDS = 5.0
CONSUMER_LOOP_BOUND_SECONDS = 60.0


def _consumer_loop_turned() -> None:
    probes.beat("consumer", bound_seconds=CONSUMER_LOOP_BOUND_SECONDS)


class ConsumerLoopBeat(bootsteps.StartStopStep):
    """Beats from a timer of the consumer's event loop, which receives every message, sends
    every ack and runs the broker heartbeats: if the loop is stuck the worker does nothing."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._timer: Any = None

    def start(self, parent: Any) -> None:
        _consumer_loop_turned()
        self._timer = parent.timer.call_repeatedly(CONSUMER_LOOP_BEAT_SECONDS, _consumer_loop_turned)

    def stop(self, parent: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        probes.forget("consumer")


class DeadLetteringConsumer(Consumer):
    """Our worker consumer. An undecodable message is rejected, not acked (dropped) as Celery
    does, so it reaches the dead-letter exchange intact. Celery's "native delayed delivery"
    step is left out: its extra quorum queues in every vhost (hundreds of Raft groups) serve
    ETA/countdown tasks, which we never publish (delays live in PostgreSQL, RTY-2). Its event
    loop beats for the liveness probe (config.probes), also while it reconnects to the broker."""

    class Blueprint(Consumer.Blueprint):  # type: ignore[misc,valid-type]  # celery-types declares it as a variable
        default_steps = [
            *(step for step in Consumer.Blueprint.default_steps if not step.endswith(":DelayedDelivery")),
            "config.celery:ConsumerLoopBeat",
        ]

    def ensure_connected(self, conn: Connection) -> Connection:  # Celery hook: blocks, retrying, until a node answers
        # Waiting for the broker is the loop's work while the broker is away, not a stuck loop.
        with probes.beating(
            "consumer", every_seconds=CONSUMER_LOOP_BEAT_SECONDS, bound_seconds=CONSUMER_LOOP_BOUND_SECONDS
        ):
            return super().ensure_connected(conn)

    def on_decode_error(self, message: Message, exc: Exception) -> None:  # Celery hook
        import logging

        logging.getLogger("extraction.ingress").error(
            "undecodable message rejected to the dead-letter queue",
            extra={"reason": f"{type(exc).__name__}: {exc}"[:300], "content_type": message.content_type},
        )
        message.reject(requeue=False)
