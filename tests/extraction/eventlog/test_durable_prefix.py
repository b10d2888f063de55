"""The consumer's offset protocol on the real broker (BRK-6), with the consumer in this
process and a handler the test controls: the committed offset is the next record to read, it
never passes an unfinished record, a full dispatcher pauses the partitions while the member
stays in its group, and a poison record is quarantined before the prefix moves past it."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from extraction.eventlog.consumer import DurablePrefixConsumer, EventRecord, Poison
from extraction.models import ExecutionInbox, ExtractionJob, JobState, OutboxEvent, QuarantinedMessage
from extraction.outbox.kafka_relay import record_value
from extraction.outbox.relay import OutboxRow
from tests.factories import make_job
from tests.system import wait_for

pytestmark = pytest.mark.slow


def produce(event_log, topic: str, values: list[bytes], *, key: bytes = b"job") -> None:
    producer = Producer(event_log.broker.config(**{"enable.idempotence": True, "acks": "all"}))
    reports: list[object] = []
    for value in values:
        producer.produce(topic, value=value, key=key, partition=0, on_delivery=lambda err, _msg: reports.append(err))
    assert producer.flush(10) == 0
    assert reports == [None] * len(values)


class Gate:
    """A handler whose records finish when the test says: ``hold`` offsets wait for ``release``."""

    def __init__(self, hold: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.hold = set(hold)
        self.released = threading.Event()
        self.finished: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, record: EventRecord) -> str:
        if record.offset in self.hold or not self.hold:
            self.released.wait(60)
        with self._lock:
            self.finished.append(record.offset)
        return "taken_in"


def run_consumer(event_log, handler, **options) -> tuple[DurablePrefixConsumer, threading.Event, threading.Thread]:
    consumer = DurablePrefixConsumer(
        group_id=event_log.ingress_group, topics=[event_log.requested], handler=handler, **options
    )
    stop = threading.Event()
    thread = threading.Thread(target=consumer.run, args=(stop,), daemon=True)
    thread.start()
    assert consumer.assigned.wait(30), "no partition assigned"
    return consumer, stop, thread


def stop_consumer(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(30)
    assert not thread.is_alive()


def committed(event_log) -> int | None:
    return event_log.broker.committed(event_log.ingress_group, event_log.requested, 0)


def test_the_committed_offset_waits_for_a_slow_record_40_then_jumps_to_43(transactional_db, event_log):
    produce(event_log, event_log.requested, [b"{}"] * 40)
    gate = Gate(hold={40})
    consumer, stop, thread = run_consumer(event_log, gate, threads=4)
    try:
        wait_for(lambda: committed(event_log) == 40, timeout=30, message="offsets 0-39 committed as 40")
        produce(event_log, event_log.requested, [b"{}"] * 3)  # offsets 40, 41, 42
        wait_for(lambda: {41, 42} <= set(gate.finished), timeout=30, message="41 and 42 durable")
        consumer_commits_before = list(consumer.commits)
        # 41 and 42 are durable, 40 is not: the broker still says 40, however often we ask.
        for _ in range(5):
            assert committed(event_log) == 40
        assert all(offset <= 40 for _, _, offset in consumer_commits_before)
        gate.released.set()
        wait_for(lambda: committed(event_log) == 43, timeout=30, message="the prefix jumps to 43")
        assert [offset for _, _, offset in consumer.commits if offset > 40] == [43]
    finally:
        gate.released.set()
        stop_consumer(stop, thread)


def test_a_full_dispatcher_pauses_and_the_member_outlives_max_poll_interval(transactional_db, event_log):
    produce(event_log, event_log.requested, [b"{}"] * 6)
    gate = Gate()  # every record waits
    consumer, stop, thread = run_consumer(event_log, gate, threads=2, max_in_flight=2)
    try:
        wait_for(lambda: consumer.paused, timeout=30, message="partitions paused")
        # Held for 1.5 x max.poll.interval.ms (10 s): the loop keeps polling, so the member
        # keeps its partition and nothing is revoked.
        assigned_before = consumer.assignments
        threading.Event().wait(15)
        assert consumer.paused and consumer.in_flight() == 2
        assert consumer.assignments == assigned_before and consumer.revocations == 0
        gate.released.set()
        wait_for(lambda: committed(event_log) == 6, timeout=30, message="every record committed after resume")
        assert sorted(gate.finished) == [0, 1, 2, 3, 4, 5]
        assert not consumer.paused and consumer.revocations == 0
    finally:
        gate.released.set()
        stop_consumer(stop, thread)


def test_poison_records_are_quarantined_with_their_coordinates_before_the_prefix_passes(
    transactional_db, event_log, tenant
):
    from extraction.eventlog.ingress import take_in_record

    job_id = make_job(tenant.tenant, state=JobState.ACCEPTED).pk
    requested = OutboxEvent.objects.get(job_id=job_id, event_type="extraction.requested.v1")
    good = record_value(OutboxRow(requested.event_id, requested.event_type, requested.payload, job_id=job_id))
    unknown_type = json.dumps({"event_id": str(uuid.uuid4()), "event_type": "nope", "payload": {}}).encode()
    produce(event_log, event_log.requested, [b"\xff not json", unknown_type, good])
    consumer, stop, thread = run_consumer(event_log, take_in_record, threads=2)
    try:
        wait_for(lambda: committed(event_log) == 3, timeout=30, message="prefix past both poison records")
    finally:
        stop_consumer(stop, thread)
    rows = list(QuarantinedMessage.objects.order_by("offset").values_list("topic", "partition", "offset", "reason"))
    assert rows == [
        (event_log.requested, 0, 0, "value is not JSON: 'utf-8' codec can't decode byte 0xff in posit"),
        (event_log.requested, 0, 1, "unexpected event type"),
    ]
    inbox = ExecutionInbox.objects.get(job_id=job_id)
    assert (inbox.source_topic, inbox.source_partition, inbox.source_offset) == (event_log.requested, 0, 2)
    assert ExtractionJob.objects.get(pk=job_id).state == "READY"
    assert consumer.outcomes == {"quarantined": 2, "taken_in": 1}

    # Read again by a new group (a crash before the commit looks the same): no second row.
    event_log.groups["KAFKA_INGRESS_GROUP"] = f"again-{uuid.uuid4().hex[:8]}"
    consumer, stop, thread = run_consumer(event_log, take_in_record, threads=2)
    try:
        wait_for(lambda: committed(event_log) == 3, timeout=30, message="re-read committed")
    finally:
        stop_consumer(stop, thread)
    assert QuarantinedMessage.objects.count() == 2
    assert ExecutionInbox.objects.filter(job_id=job_id).count() == 1
    assert consumer.outcomes == {"quarantined": 2, "duplicate": 1}


def test_a_record_that_can_never_succeed_is_poison_not_a_retry_loop(transactional_db, event_log):
    def refuse(record: EventRecord) -> str:
        raise Poison("refused by the test")

    produce(event_log, event_log.requested, [b"{}"])
    consumer, stop, thread = run_consumer(event_log, refuse, threads=1)
    try:
        wait_for(lambda: committed(event_log) == 1, timeout=30, message="prefix past the refused record")
    finally:
        stop_consumer(stop, thread)
    assert list(QuarantinedMessage.objects.values_list("offset", "reason")) == [(0, "refused by the test")]


def test_a_dead_letter_goes_to_the_outcomes_and_dead_letter_topics_in_the_job_s_order(
    transactional_db, event_log, tenant
):
    """DLQ-3: no retry topic; a terminal decision leaves through the outbox for both topics,
    keyed by the job, after the job's earlier events, each carrying its state_version."""
    from extraction.outbox.kafka_relay import KafkaOutboxRelay

    job_id = str(make_job(tenant.tenant, state=JobState.READY).pk)
    response = tenant.client.post("/api/v1/extraction-jobs/cancel", {"filter": {"job_ids": [job_id]}}, format="json")
    assert response.status_code == 201 and response.json()["outcomes"] == {"changed": 1}, response.content
    relay = KafkaOutboxRelay()
    try:
        assert relay.relay_once() == 2  # the requested event, then the dead letter
        relay.mark_confirmed()
    finally:
        relay.close()
    assert not OutboxEvent.objects.filter(job_id=job_id, published_at__isnull=True).exists()

    def read(topic: str) -> list[tuple[bytes | None, str, int]]:
        reader = Consumer(
            event_log.broker.config(**{"group.id": f"read-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
        )
        reader.assign([TopicPartition(topic, 0, 0)])
        seen = []
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not seen:
                message = reader.poll(0.5)
                if message is not None and message.error() is None:
                    record = EventRecord.from_message(message)
                    envelope = json.loads(record.value or b"")
                    seen.append((record.key, envelope["event_type"], envelope["payload"]["state_version"]))
        finally:
            reader.close()
        return seen

    dead_letter_version = ExtractionJob.objects.get(pk=job_id).state_version
    expected = [(job_id.encode(), "extraction.dead_lettered.v1", dead_letter_version)]
    assert read(event_log.outcomes) == expected
    assert read(event_log.dead_letters) == expected
    assert read(event_log.requested) == [(job_id.encode(), "extraction.requested.v1", 1)]


def test_a_record_the_handler_keeps_failing_on_is_quarantined_after_a_bounded_number_of_attempts(
    transactional_db, event_log
):
    calls: list[int] = []

    def broken(record: EventRecord) -> str:
        calls.append(record.offset)
        raise RuntimeError("a bug, not an outage")

    produce(event_log, event_log.requested, [b"{}"])
    consumer, stop, thread = run_consumer(event_log, broken, threads=1, take_in_attempts=3, retry_base_seconds=0.01)
    try:
        wait_for(lambda: committed(event_log) == 1, timeout=30, message="prefix past the failing record")
    finally:
        stop_consumer(stop, thread)
    assert calls == [0, 0, 0]
    assert list(QuarantinedMessage.objects.values_list("offset", "reason")) == [(0, "failed: RuntimeError")]
