"""The Celery application. PostgreSQL is the record of every job; results are ignored."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("extraction")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Task modules live in the apps' sub-packages, not in a top-level tasks.py per app.
app.autodiscover_tasks(["extraction.execution", "delivery"])


from celery.worker.consumer import Consumer  # noqa: E402


class DeadLetteringConsumer(Consumer):
    """Our worker consumer. An undecodable message is rejected, not acked (dropped) as Celery
    does, so it reaches the dead-letter exchange intact. Celery's "native delayed delivery"
    step is left out: its extra quorum queues in every vhost (hundreds of Raft groups) serve
    ETA/countdown tasks, which we never publish (delays live in PostgreSQL, RTY-2)."""

    class Blueprint(Consumer.Blueprint):  # type: ignore[misc,valid-type]  # celery-types declares it as a variable
        default_steps = [step for step in Consumer.Blueprint.default_steps if not step.endswith(":DelayedDelivery")]

    def on_decode_error(self, message, exc):  # Celery hook
        import logging

        logging.getLogger("extraction.ingress").error(
            "undecodable message rejected to the dead-letter queue",
            extra={"reason": f"{type(exc).__name__}: {exc}"[:300], "content_type": message.content_type},
        )
        message.reject(requeue=False)
