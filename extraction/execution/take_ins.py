"""The take-in batcher: the ingress threads of one process take in the requested messages that
arrived together in one statement (``lifecycle.take_in_requested_events``), by group commit
(:mod:`.group_commit`). Each thread acks its own message only after the statement that wrote it
committed; a lost connection reaches every thread of the batch, which retries before its ack as
it would alone (``config.messaging.durable_step``), and a message the database refuses is split
off, so only it is dead-lettered."""

from __future__ import annotations

import logging

from extraction.execution import lifecycle
from extraction.execution.faults import fault_point
from extraction.execution.group_commit import Pending, ProcessBatcher, settle_splitting
from extraction.execution.lifecycle import Arrival
from extraction.execution.outcomes import TakeIn

logger = logging.getLogger("extraction.ingress")


def take_in_batch(batch: list[Pending[Arrival, TakeIn]]) -> None:
    fault_point("take_ins_before_write")
    settle_splitting(batch, lifecycle.take_in_requested_events, logger=logger, what="requested messages")


# This process's take-in batcher: ``batcher().submit(arrival)`` is the message's outcome.
batcher: ProcessBatcher[Arrival, TakeIn] = ProcessBatcher(take_in_batch, size_setting="INGRESS_TAKE_IN_BATCH")
