"""The outbox relay (OUT-1, OUT-2): committed outbox rows → RabbitMQ, confirmed and routed.

A row counts as published only when the broker confirmed it AND did not return it as
unroutable (``mandatory``). The ``event_id`` is the message id at every hop (the Celery task
id, the AMQP message id, the inbox key), so the re-send after a crash between confirm and
``published_at`` is deduplicated downstream.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from amqp.basic_message import Message as AmqpMessage
from django.conf import settings
from django.db import connection
from kombu import Connection, Producer
from opentelemetry.trace import SpanKind

from config import probes, tracing
from config.broker import broker_connection, connect_to_a_node
from config.celery import app as celery_app
from config.celery import message_origin
from config.db import Notifications, prepared_cursor
from config.outages import Outage
from config.sql import load_statements
from config.topology import declare_topology
from extraction.events import CATALOGUE, Route
from extraction.execution.faults import fault_point

logger = logging.getLogger(__name__)

SQL = load_statements(Path(__file__).with_suffix(".sql"))


# Where each event type goes, from the catalogue (a benchmark swaps in routes of its own).
ROUTES: dict[str, tuple[Route, ...]] = {name: spec.routes for name, spec in CATALOGUE.items()}


@dataclass(frozen=True)
class OutboxRow:
    event_id: uuid.UUID
    event_type: str
    payload: dict[str, Any]
    job_id: uuid.UUID | None = None
    # The trace the event belongs to (the job's), read only when the relay traces.
    trace_context: Mapping[str, str] | None = None


class Unroutable(Exception):
    pass


class NotConfirmed(Exception):
    """The broker nacked a message, or its confirm did not come in time: it may or may not have
    been routed, so the row is published again (consumers dedupe by event id)."""


# How soon a row the broker refused is claimed again.
RETRY_SECONDS = 2.0


class PublisherConfirms:
    """Confirm mode on one channel (``confirm.select``), the broker's acks and nacks matched by
    delivery tag to what was sent: a batch is published whole and its confirms are awaited
    together, instead of one round trip per message (py-amqp's ``confirm_publish``).

    Delivery tags count the channel's publishes from 1; an ack or nack with ``multiple`` settles
    every tag up to its own. A basic.return comes before its message's ack (RabbitMQ's order), so
    by the time every confirm is in, every return is too."""

    def __init__(self, channel: Any) -> None:
        channel.confirm_select()
        channel.events["basic_ack"].add(self._acked)
        channel.events["basic_nack"].add(self._nacked)
        self._last_tag = 0
        self._pending: set[int] = set()
        self.nacked: set[int] = set()

    def sent(self) -> int:
        """Count a publish on the channel; its delivery tag."""
        self._last_tag += 1
        self._pending.add(self._last_tag)
        return self._last_tag

    def wait(self, connection: Connection, *, timeout: float) -> set[int]:
        """Read from the broker until every message sent is acked or nacked, or ``timeout``
        passes; the delivery tags still unconfirmed then (none when every confirm came)."""
        deadline = time.monotonic() + timeout
        while self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                connection.drain_events(timeout=remaining)
            except TimeoutError:
                continue  # the loop's deadline decides
        return set(self._pending)

    def _settle(self, delivery_tag: int, multiple: bool) -> set[int]:
        settled = {tag for tag in self._pending if tag <= delivery_tag} if multiple else {delivery_tag} & self._pending
        self._pending -= settled
        return settled

    def _acked(self, delivery_tag: int, multiple: bool) -> None:
        self._settle(delivery_tag, multiple)

    def _nacked(self, delivery_tag: int, multiple: bool) -> None:
        self.nacked |= self._settle(delivery_tag, multiple)


def publish_span(row: OutboxRow, *, system: str, destinations: Sequence[str]) -> AbstractContextManager[Any]:
    """One producer span per row, a child of the row's trace context (the job's), whose context
    rides in every message's headers: the consumer's span becomes its child."""
    return tracing.step_span(
        "outbox.publish",
        trace_context=row.trace_context,
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": system,
            "messaging.operation.type": "publish",
            "messaging.message.id": str(row.event_id),
            "messaging.destination.name": list(destinations),
            "extraction.event_type": row.event_type,
            **({"extraction.job_id": str(row.job_id)} if row.job_id else {}),
        },
    )


def claim_unpublished(*, batch_size: int, claim_seconds: float, confirmed: Sequence[uuid.UUID] = ()) -> list[OutboxRow]:
    """Take up to ``batch_size`` unpublished rows for ``claim_seconds`` (OUT-2), and mark the
    previous batch's ``confirmed`` rows published in the same statement: one autocommit
    statement per wake-up, not a claim, a mark and an empty claim. Its locks go at COMMIT, so
    none is held while we talk to the broker; a dead relay's claim lapses with ``claimed_until``,
    and parallel relays skip locked rows.
    """
    with prepared_cursor() as cursor:
        cursor.execute(
            SQL["claim_unpublished"],
            {"claim": claim_seconds, "limit": batch_size, "confirmed": list(confirmed), "traced": tracing.enabled()},
            prepare=True,
        )
        rows = sorted(cursor.fetchall(), key=lambda r: r[3])
    return [OutboxRow(r[0], r[1], _json(r[2]), job_id=r[4], trace_context=_json(r[5])) for r in rows]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def mark_published(event_ids: list[uuid.UUID]) -> None:
    if not event_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(SQL["mark_published"], {"event_ids": event_ids})


def release_failed(failures: Mapping[uuid.UUID, str], *, retry_in_seconds: float = RETRY_SECONDS) -> None:
    """Failed rows stay unpublished; their claim is shortened to the retry delay (one statement)."""
    if not failures:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            SQL["release_failed"],
            {
                "retry_in": retry_in_seconds,
                "event_ids": list(failures),
                "errors": [error[:500] for error in failures.values()],
            },
        )


def log_refused(failures: Mapping[uuid.UUID, str], *, broker: str) -> None:
    """One warning for the rows of a batch the broker did not take, not one per row: a queue
    without a leader refuses every row routed to it, batch after batch, until it has one."""
    if failures:
        first_error = next(iter(failures.values()))
        logger.warning(
            "%d outbox events not published; retrying in %g s",
            len(failures),
            RETRY_SECONDS,
            extra={
                "broker": broker,
                "event_ids": [str(event_id) for event_id in list(failures)[:5]],
                "error": first_error[:200],
            },
        )


def publish_lag_seconds() -> float:
    """Age of the oldest unpublished row: the relay's health in one number (OUT-2)."""
    with connection.cursor() as cursor:
        cursor.execute(SQL["publish_lag_seconds"])
        return float(cursor.fetchone()[0])


class ConfirmedRows:
    """Rows the broker took, not yet marked published: marked by the next claim's statement, or
    by mark_confirmed() when no claim comes soon. A crash before that re-sends them
    (at-least-once; consumers dedupe by event id)."""

    _confirmed: list[uuid.UUID]

    @property
    def has_unmarked(self) -> bool:
        return bool(self._confirmed)

    def mark_confirmed(self) -> None:
        """Mark the confirmed rows now (no claim is coming soon, or the relay stops)."""
        mark_published(self._confirmed)
        self._confirmed = []


class OutboxRelay(ConfirmedRows):
    """Publishes outbox rows with confirms and ``mandatory``; one broker connection."""

    def __init__(
        self,
        *,
        broker_url: str | None = None,
        batch_size: int = 200,
        claim_seconds: float | None = None,
        confirm_timeout: float = 5.0,
    ) -> None:
        self.broker_url = broker_url or settings.BROKER_URL
        self.batch_size = batch_size
        self.claim_seconds = settings.OUTBOX_CLAIM_SECONDS if claim_seconds is None else claim_seconds
        self.confirm_timeout = confirm_timeout
        self._connection: Connection | None = None
        self._producer: Producer | None = None
        self._returned: set[str] = set()
        self._confirms: PublisherConfirms | None = None
        self._confirmed = []

    # -- broker -----------------------------------------------------------------------------
    def _ensure_producer(self) -> Producer:
        if self._producer is None:
            # Not confirm_publish: py-amqp would then wait for each message's confirm before the
            # next is sent. The channel is put in confirm mode here instead (PublisherConfirms).
            conn = broker_connection(self.broker_url, connect_timeout=5)
            connect_to_a_node(conn)
            declare_topology(conn)
            channel = conn.channel()
            self._confirms = PublisherConfirms(channel)
            self._connection = conn
            # kombu-stubs type on_return's message as kombu.Message and the exchange as Exchange | str;
            # basic.return comes from py-amqp only, which passes its own Message and the exchange name.
            self._producer = Producer(channel, on_return=self._on_return)  # type: ignore[arg-type]
        return self._producer

    def _on_return(self, exception: Exception, exchange: str, routing_key: str, message: AmqpMessage) -> None:
        # basic.return arrives before the message's confirm, on the same channel: remember the
        # id so publish_batch() refuses to call this message published.
        self._returned.add(message.properties.get("message_id") or "")

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.release()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass
        self._forget_connection()

    def _drop(self) -> None:
        """Drop a connection that failed or stopped confirming, without the closing handshake:
        a broker whose channel is stuck (seen with a quorum queue that lost its majority) may
        not answer connection.close for minutes."""
        if self._connection is not None:
            try:
                self._connection.collect()
            except Exception:  # noqa: BLE001 - the socket is going anyway
                pass
        self._forget_connection()

    def _forget_connection(self) -> None:
        self._connection = None
        self._producer = None
        self._confirms = None

    def publish(self, row: OutboxRow) -> None:
        """Publish every route of one row; raise if any was returned (Unroutable), nacked or not
        confirmed in time (NotConfirmed)."""
        _, refused = self.publish_batch([row])
        if row.event_id in refused:
            raise refused[row.event_id]

    def publish_batch(self, rows: Sequence[OutboxRow]) -> tuple[list[uuid.UUID], dict[uuid.UUID, Exception]]:
        """Publish every route of every row, then wait for all their confirms together (bounded
        by ``confirm_timeout``). Returns the rows the broker took (every route acked, none
        returned) and why each other row was not: returned (Unroutable), nacked, or its confirm
        did not come in time (NotConfirmed) — the others in the batch are judged on their own.

        A broker error drops the connection and is raised: what the broker took of the batch is
        unknown, so the caller publishes every row again (consumers dedupe by event id).

        Each row is traced in publish_span: Celery's instrumentation makes the consumer's span
        its child."""
        tags: dict[uuid.UUID, list[int]] = {}
        try:
            producer = self._ensure_producer()
            confirms = self._confirms
            assert confirms is not None and self._connection is not None  # made with the producer
            confirms.nacked.clear()
            for row in rows:
                routes = ROUTES[row.event_type]
                destinations = [f"{route.exchange.name}/{route.routing_key}" for route in routes]
                with publish_span(row, system="rabbitmq", destinations=destinations):
                    tags[row.event_id] = self._publish_routes(producer, row, str(row.event_id), routes, confirms)
            unconfirmed = confirms.wait(self._connection, timeout=self.confirm_timeout)
        except Exception:
            self._drop()
            raise
        if unconfirmed:
            # A quorum queue between leaders (a node lost) confirms late; a half-dead connection
            # never does. The late rows are sent again, on a fresh connection.
            self._drop()
        published: list[uuid.UUID] = []
        refused: dict[uuid.UUID, Exception] = {}
        for row in rows:
            if str(row.event_id) in self._returned:
                refused[row.event_id] = Unroutable(f"{row.event_type} was unroutable")
            elif confirms.nacked.intersection(tags[row.event_id]):
                refused[row.event_id] = NotConfirmed(f"{row.event_type} was nacked by the broker")
            elif unconfirmed.intersection(tags[row.event_id]):
                refused[row.event_id] = NotConfirmed(f"{row.event_type} not confirmed within {self.confirm_timeout} s")
            else:
                published.append(row.event_id)
        return published, refused

    def _publish_routes(
        self,
        producer: Producer,
        row: OutboxRow,
        message_id: str,
        routes: tuple[Route, ...],
        confirms: PublisherConfirms,
    ) -> list[int]:
        """Send one message per route (not waiting for its confirm); their delivery tags."""
        tags = []
        for route in routes:
            body: Any  # the event's JSON, or a Celery message body
            if route.task is None:
                body, headers = row.payload, {}
                properties: dict[str, Any] = {}
                content: dict[str, Any] = {"serializer": "json"}
            else:
                task = celery_app.amqp.as_task_v2(
                    message_id,
                    route.task,
                    args=(),
                    kwargs={"event": {"event_id": message_id, "event_type": row.event_type, "payload": row.payload}},
                    # Celery would otherwise saferepr() the arguments for its logs on every
                    # publish; the event id and type say everything a log needs.
                    argsrepr="()",
                    kwargsrepr=f"event {row.event_type} {message_id}",
                    origin=message_origin(),
                )
                body, headers, properties = task.body, task.headers, dict(task.properties)
                content = {"serializer": "json"}
            properties.pop("message_id", None)
            self._returned.discard(message_id)
            producer.publish(
                body,
                exchange=route.exchange,
                routing_key=route.routing_key,
                headers={**headers, **tracing.current_trace_context()},
                message_id=message_id,
                delivery_mode=2,
                mandatory=True,
                retry=False,
                declare=[],
                **content,
                **properties,
            )
            tags.append(confirms.sent())
        return tags

    # -- one step ------------------------------------------------------------------------------
    def relay_once(self) -> int:
        """Claim a batch, publish it, remember what the broker took. Returns rows published.

        1. Mark the previous batch's confirmed rows and claim up to ``batch_size`` (one statement).
        2. Publish them all with mandatory, then wait for their confirms together, bounded by
           ``confirm_timeout`` (``publish_batch``).
        3. Confirmed rows wait to be marked with the next claim (or ``mark_confirmed``).
        4. Refused rows are retried after RETRY_SECONDS. A broker error releases the whole batch
           the same way and is raised: the loop names the outage once and reconnects.
        """
        rows = claim_unpublished(
            batch_size=self.batch_size, claim_seconds=self.claim_seconds, confirmed=self._confirmed
        )
        self._confirmed = []
        if not rows:
            return 0
        failures = {
            row.event_id: f"no route for event type {row.event_type}" for row in rows if row.event_type not in ROUTES
        }
        routable = [row for row in rows if row.event_type in ROUTES]
        try:
            published, refused = self.publish_batch(routable)
        except Exception as exc:
            release_failed(
                {**failures, **dict.fromkeys((row.event_id for row in routable), f"{type(exc).__name__}: {exc}")}
            )
            raise
        unroutable = {event_id for event_id, exc in refused.items() if isinstance(exc, Unroutable)}
        for event_id in unroutable:  # a bug in the topology, not a broker away: an error each
            logger.error("outbox event unroutable; not marked published", extra={"event_id": str(event_id)})
        failures.update((event_id, f"{type(exc).__name__}: {exc}") for event_id, exc in refused.items())
        log_refused(
            {event_id: error for event_id, error in failures.items() if event_id not in unroutable}, broker="rabbitmq"
        )
        if published:
            fault_point("relay_after_confirm")
        self._confirmed = published
        release_failed(failures)
        return len(published)


class Relay(Protocol):
    """What run_relay drives: this module's RabbitMQ relay or the Kafka one (kafka_relay.py)."""

    batch_size: int

    def relay_once(self) -> int: ...

    @property
    def has_unmarked(self) -> bool: ...

    def mark_confirmed(self) -> None: ...

    def close(self) -> None: ...


# How long confirmed rows may wait for the next claim to mark them: a relay that is woken
# again within this time marks them in that claim's statement.
MARK_LINGER_SECONDS = 0.05


def run_relay(
    *, stop: threading.Event, poll_seconds: float = 1.0, once: bool = False, relay: Relay | None = None
) -> None:
    """The relay loop: drain while batches come back full; otherwise wait for a NOTIFY or the poll."""
    relay = relay if relay is not None else OutboxRelay()
    # The outbox trigger's NOTIFY (migration 0003).
    wakeups = Notifications("outbox_events", application_name="relay-listen")
    dependencies = Outage(logger, "PostgreSQL or the broker (outbox relay)")
    last_lag_log = 0.0
    try:
        while not stop.is_set():
            probes.beat("relay")
            try:
                published = relay.relay_once()
                if once:
                    relay.mark_confirmed()
            except Exception as exc:  # noqa: BLE001 - DB or broker down: back off (Outage.failed logs a bug with its traceback)
                dependencies.failed(exc, consequence="events wait in the outbox; retrying every second")
                connection.close()
                relay.close()
                published = 0
                stop.wait(1.0)
            else:
                dependencies.succeeded()
            if once:
                return
            if time.monotonic() - last_lag_log > 30:
                last_lag_log = time.monotonic()
                try:
                    logger.info("outbox publish lag", extra={"publish_lag_seconds": round(publish_lag_seconds(), 3)})
                except Exception:  # noqa: BLE001
                    connection.close()
            if published >= relay.batch_size:
                continue  # a full batch: more may be waiting
            # The table was drained at the claim: what came since has notified us.
            if relay.has_unmarked and not wakeups.wait(MARK_LINGER_SECONDS):
                _mark_or_keep(relay, dependencies)
            if not relay.has_unmarked:
                wakeups.wait(poll_seconds)
    finally:
        probes.forget("relay")
        _mark_or_keep(relay, dependencies)
        relay.close()
        wakeups.close()


def _mark_or_keep(relay: Relay, dependencies: Outage) -> None:
    try:
        relay.mark_confirmed()
    except Exception as exc:  # noqa: BLE001 - kept for the next claim; or re-sent after the claim expires
        dependencies.failed(exc, consequence="confirmed events are marked published at the next claim")
        connection.close()
